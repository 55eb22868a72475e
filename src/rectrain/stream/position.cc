// rectrain/stream/position.cc: see position.h.
#include "rectrain/stream/position.h"

#include <charconv>

#include <nlohmann/json.hpp>

namespace rectrain::stream {

std::string StreamPosition::ToJson() const {
  nlohmann::json j = {{"source", source}, {"topic", topic}, {"partitions", partitions}};
  return j.dump();
}

Result<StreamPosition> StreamPosition::FromJson(std::string_view text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const std::string& what) {
    return DataLossError("malformed stream position (" + what + "): " + std::string(text.substr(0, 200)));
  };
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  StreamPosition p;
  if (!j.contains("source") || !j["source"].is_string()) return bad("no \"source\"");
  if (!j.contains("topic") || !j["topic"].is_string()) return bad("no \"topic\"");
  if (!j.contains("partitions") || !j["partitions"].is_object()) return bad("no \"partitions\" object");
  p.source = j["source"].get<std::string>();
  p.topic = j["topic"].get<std::string>();
  for (const auto& [k, v] : j["partitions"].items()) {
    if (!v.is_string()) return bad("partition " + k + " is not a string");
    p.partitions[k] = v.get<std::string>();
  }
  return p;
}

Result<MessageId> ParseRedisId(std::string_view text) {
  const size_t dash = text.find('-');
  MessageId id;
  uint64_t ms = 0, seq = 0;
  auto num = [](std::string_view s, uint64_t* v) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size();
  };
  if (dash == std::string_view::npos || !num(text.substr(0, dash), &ms) || !num(text.substr(dash + 1), &seq)) {
    return InvalidArgumentError("\"" + std::string(text.substr(0, 64)) + "\" is not a Redis stream ID (MS-SEQ)");
  }
  id.a = static_cast<int64_t>(ms);
  id.b = static_cast<int64_t>(seq);
  return id;
}

std::string FormatRedisId(const MessageId& id) {
  return std::to_string(static_cast<uint64_t>(id.a)) + "-" + std::to_string(static_cast<uint64_t>(id.b));
}

}  // namespace rectrain::stream

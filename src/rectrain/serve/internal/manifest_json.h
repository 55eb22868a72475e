// rectrain/serve/internal/manifest_json.h (internal to serve/): the JSON of a file entry
// ({"path", "bytes", "xxh64"}), shared by the model and the delta manifests.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "rectrain/serve/model_package.h"

namespace rectrain::serve::internal {

// 16 lowercase hex digits.
inline std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

inline nlohmann::json FileJson(const PackageFile& f) {
  return {{"path", f.path}, {"bytes", f.bytes}, {"xxh64", Hex(f.xxh64)}};
}

// Throws nlohmann::json exceptions (or std::invalid_argument) on a malformed entry.
inline PackageFile FileFromJson(const nlohmann::json& j) {
  PackageFile f;
  f.path = j.at("path").get<std::string>();
  f.bytes = j.at("bytes").get<int64_t>();
  f.xxh64 = std::stoull(j.at("xxh64").get<std::string>(), nullptr, 16);
  return f;
}

// "events" ({"newest_ms", "stream_position"}) into `j` when `e` is not empty: manifests without
// events read and write as before.
inline void PutEvents(const TrainedEvents& e, nlohmann::json* j) {
  if (e.empty()) return;
  nlohmann::json position = nullptr;
  if (!e.stream_position.empty()) position = nlohmann::json::parse(e.stream_position, nullptr, /*allow_exceptions=*/false);
  (*j)["events"] = {{"newest_ms", e.newest_ms}, {"stream_position", position}};
}

// Throws nlohmann::json exceptions on a malformed "events".
inline TrainedEvents EventsFromJson(const nlohmann::json& j) {
  TrainedEvents e;
  if (!j.contains("events")) return e;
  const nlohmann::json& ev = j.at("events");
  e.newest_ms = ev.at("newest_ms").get<int64_t>();
  if (ev.contains("stream_position") && !ev.at("stream_position").is_null()) e.stream_position = ev.at("stream_position").dump();
  return e;
}

}  // namespace rectrain::serve::internal

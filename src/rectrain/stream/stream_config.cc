// rectrain/stream/stream_config.cc: see stream_config.h.
#include "rectrain/stream/stream_config.h"

namespace rectrain::stream {

const char* SourceKindName(SourceKind kind) { return kind == SourceKind::kKafka ? "kafka" : "redis"; }

Status ParseStreamUrl(const std::string& url, StreamConfig* out) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("\"" + url + "\": " + why +
                                "; expected kafka://HOST:PORT[,HOST:PORT...]/TOPIC or redis://HOST:PORT/KEY");
  };
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return bad("no scheme");
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "kafka" && scheme != "redis") return bad("unknown scheme \"" + scheme + "\"");
  const std::string rest = url.substr(scheme_end + 3);
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash == 0) return bad("no HOST:PORT");
  const std::string name = rest.substr(slash + 1);
  if (name.empty() || name.find('/') != std::string::npos) {
    return bad(scheme == "kafka" ? "no topic after the hosts" : "no stream key after the host");
  }
  std::vector<std::string> hosts;
  std::string hosts_text = rest.substr(0, slash);
  for (size_t start = 0; start <= hosts_text.size();) {
    const size_t comma = hosts_text.find(',', start);
    const std::string h = hosts_text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t colon = h.rfind(':');
    if (h.empty() || colon == std::string::npos || colon == 0 || colon + 1 == h.size() ||
        h.find_first_not_of("0123456789", colon + 1) != std::string::npos) {
      return bad("\"" + h + "\" is not HOST:PORT");
    }
    hosts.push_back(h);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (scheme == "redis" && hosts.size() != 1) return bad("a redis URL names one server");
  out->kind = scheme == "kafka" ? SourceKind::kKafka : SourceKind::kRedis;
  out->url = url;
  out->hosts = std::move(hosts);
  out->topic = name;
  return OkStatus();
}

std::vector<std::string> PartitionsOfRank(const std::vector<std::string>& all, int rank, int world) {
  std::vector<std::string> mine;
  for (size_t i = 0; i < all.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(world)) == rank) mine.push_back(all[i]);
  }
  return mine;
}

}  // namespace rectrain::stream

// rectrain/webui/tracking_api.cc: see tracking_api.h. JSON is built with nlohmann::json;
// invalid UTF-8 in stored text is replaced, never thrown.
#include "rectrain/webui/tracking_api.h"

#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "rectrain/track/run_json.h"

namespace rectrain::webui {
namespace {

using http::Route;
using http::RouteReply;
using http::RouteRequest;

using nlohmann::json;
using track::RunFilter;
using track::RunId;

using Req = const RouteRequest&;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

RouteReply Json(const json& j) { return RouteReply{200, Dump(j), "application/json", {}}; }

Result<int64_t> IntParam(Req req, const std::string& key, int64_t dflt) {
  if (!req.HasParam(key)) return dflt;
  std::string v = req.Param(key);
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    return InvalidArgumentError("query parameter '" + key + "' must be an integer, got '" + v +
                                "'");
  }
  return out;
}

Result<RunFilter> ParseFilter(Req req) {
  RunFilter f;
  if (req.HasParam("status")) {
    RECTRAIN_ASSIGN_OR_RETURN(f.status, track::ParseRunStatus(req.Param("status")));
  }
  f.tags = req.ParamValues("tag");
  if (req.HasParam("q")) f.name_contains = req.Param("q");
  if (req.HasParam("group")) f.group_id = req.Param("group");
  if (req.HasParam("parent")) {
    RECTRAIN_ASSIGN_OR_RETURN(int64_t parent, IntParam(req, "parent", 0));
    f.parent_id = parent;
  }
  for (const std::string& p : req.ParamValues("param")) {
    size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgumentError("query parameter 'param' must be KEY=VALUE, got '" + p + "'");
    }
    f.params.emplace_back(p.substr(0, eq), p.substr(eq + 1));
  }
  for (const std::string& m : req.ParamValues("metric")) {
    RECTRAIN_ASSIGN_OR_RETURN(track::MetricThreshold t, track::ParseMetricThreshold(m));
    f.metrics.push_back(std::move(t));
  }
  if (req.HasParam("sort")) f.sort_by = req.Param("sort");
  if (req.HasParam("order")) {
    std::string order = req.Param("order");
    if (order != "asc" && order != "desc") {
      return InvalidArgumentError("query parameter 'order' must be asc or desc, got '" + order +
                                  "'");
    }
    f.descending = order == "desc";
  }
  RECTRAIN_ASSIGN_OR_RETURN(f.limit, IntParam(req, "limit", 100));
  RECTRAIN_ASSIGN_OR_RETURN(f.offset, IntParam(req, "offset", 0));
  return f;
}

Result<RunId> RunIdFromPath(Req req) {
  const std::string_view s = req.path_params.at(0);
  RunId id = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), id);
  if (ec != std::errc() || p != s.data() + s.size()) {
    return InvalidArgumentError("bad run id '" + std::string(s) + "'");
  }
  return id;
}

// A GET or DELETE route whose body returns its reply or an error (a JSON error reply).
template <typename Fn>
Route Api(std::string method, std::string path, track::TrackingStore* store, Fn fn) {
  return Route{std::move(method), std::move(path), [store, fn](Req req) -> RouteReply {
                 Result<RouteReply> reply = fn(*store, req);
                 if (reply.ok()) return std::move(reply).value();
                 return RouteReply{http::HttpStatusForCode(reply.status().code()), http::ErrorJson(reply.status()),
                                   "application/json", {}};
               },
               false};
}

std::vector<std::string> SplitCsv(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string part = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                     : comma - start);
    if (!part.empty()) out.push_back(std::move(part));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

// The last `max_bytes` of the run's newest "log" artifact, which must resolve (symlinks
// followed) to a file under `artifact_root`.
Result<json> LogTail(track::TrackingStore& s, RunId id, const std::string& artifact_root,
                     int64_t max_bytes) {
  namespace fs = std::filesystem;
  if (max_bytes < 1 || max_bytes > (1 << 20)) {
    return InvalidArgumentError("max_bytes must be in 1..1048576, got " +
                                std::to_string(max_bytes));
  }
  RECTRAIN_ASSIGN_OR_RETURN(track::RunDetail d, s.GetRun(id));
  const track::Artifact* log = nullptr;
  for (const auto& a : d.artifacts) {
    if (a.kind == "log" && (log == nullptr || a.created_time >= log->created_time)) log = &a;
  }
  if (log == nullptr) {
    return NotFoundError("run " + std::to_string(id) + " has no log artifact");
  }
  if (artifact_root.empty()) {
    return PermissionDeniedError("log files are not served: the server has no artifact root");
  }
  std::error_code ec;
  fs::path root = fs::canonical(artifact_root, ec);
  if (ec) return NotFoundError("artifact root " + artifact_root + " does not exist");
  fs::path file = fs::weakly_canonical(log->path, ec);
  auto [root_end, file_it] = std::mismatch(root.begin(), root.end(), file.begin(), file.end());
  if (ec || root_end != root.end()) {
    return PermissionDeniedError("log " + log->path + " is outside the workspace " +
                                 root.string());
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return NotFoundError("log " + log->path + " cannot be read");
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  const int64_t offset = std::max<int64_t>(0, size - max_bytes);
  std::string text(static_cast<size_t>(size - offset), '\0');
  in.seekg(offset);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (offset > 0) {  // Drop the partial first line.
    size_t nl = text.find('\n');
    text = nl == std::string::npos ? std::string() : text.substr(nl + 1);
  }
  return json{{"run_id", id},     {"path", log->path}, {"size_bytes", size},
              {"truncated", offset > 0}, {"text", text}};
}

// The alerts Alertmanager holds for run `id`: those labelled run="<id>" (the label every
// training alert of deploy/prometheus/alerts.yml carries), critical first, then by name and
// start time. Unreachable, an HTTP error or a body that is not an alert list: Unavailable.
Result<json> RunAlerts(const std::string& url, RunId id) {
  RECTRAIN_ASSIGN_OR_RETURN(AlertmanagerUrl am, ParseAlertmanagerUrl(url));
  httplib::Client client(am.scheme_host_port);
  client.set_connection_timeout(2, 0);
  client.set_read_timeout(5, 0);
  client.set_write_timeout(5, 0);
  const httplib::Params params{{"filter", "run=\"" + std::to_string(id) + "\""}};
  auto res = client.Get(am.prefix + "/api/v2/alerts", params, httplib::Headers{{"Accept", "application/json"}});
  if (!res) {
    return UnavailableError("cannot reach Alertmanager at " + url + " (" + httplib::to_string(res.error()) +
                            "); is it running? (rectrain ui --alertmanager URL)");
  }
  if (res->status != 200) {
    return UnavailableError("Alertmanager at " + url + " answered HTTP " + std::to_string(res->status) + ": " +
                            res->body.substr(0, 200));
  }
  const json list = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (!list.is_array()) {
    return UnavailableError("Alertmanager at " + url + " did not answer /api/v2/alerts with a list of alerts");
  }
  auto text = [](const json& obj, const char* key) -> std::string {
    if (!obj.is_object()) return "";
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
  };
  json out = json::array();
  for (const json& a : list) {
    if (!a.is_object()) continue;
    const json labels = a.value("labels", json::object());
    const json annotations = a.value("annotations", json::object());
    const json status = a.value("status", json::object());
    out.push_back({{"name", text(labels, "alertname")},
                   {"severity", text(labels, "severity")},
                   {"state", text(status, "state")},
                   {"summary", text(annotations, "summary")},
                   {"description", text(annotations, "description")},
                   {"starts_at", text(a, "startsAt")},
                   {"ends_at", text(a, "endsAt")},
                   {"updated_at", text(a, "updatedAt")},
                   {"labels", labels.is_object() ? labels : json::object()},
                   {"annotations", annotations.is_object() ? annotations : json::object()},
                   {"silenced_by", status.is_object() ? status.value("silencedBy", json::array()) : json::array()},
                   {"inhibited_by", status.is_object() ? status.value("inhibitedBy", json::array()) : json::array()},
                   {"generator_url", text(a, "generatorURL")},
                   {"fingerprint", text(a, "fingerprint")}});
  }
  auto rank = [](const json& a) {
    const std::string sev = a["severity"];
    return sev == "critical" ? 0 : sev == "warning" ? 1 : 2;
  };
  std::stable_sort(out.begin(), out.end(), [&](const json& x, const json& y) {
    if (rank(x) != rank(y)) return rank(x) < rank(y);
    if (x["name"] != y["name"]) return x["name"] < y["name"];
    return x["starts_at"] < y["starts_at"];
  });
  return out;
}

using track::TrackingStore;

Result<RouteReply> ListRuns(TrackingStore& s, Req req) {
  RECTRAIN_ASSIGN_OR_RETURN(RunFilter f, ParseFilter(req));
  RECTRAIN_ASSIGN_OR_RETURN(track::RunList list, s.ListRuns(f));
  json runs = json::array();
  for (const auto& r : list.runs) runs.push_back(track::RunSummaryJson(r));
  if (req.HasParam("include_params")) {
    // "all" or a comma-separated key list: adds "params":{k:v} to every run.
    std::vector<std::string> keys;
    if (std::string v = req.Param("include_params"); v != "all") keys = SplitCsv(v);
    std::vector<RunId> ids;
    for (const auto& r : list.runs) ids.push_back(r.id);
    RECTRAIN_ASSIGN_OR_RETURN(auto params, s.GetParams(ids, keys));
    for (size_t i = 0; i < params.size(); ++i) {
      json p = json::object();
      for (const auto& [k, v] : params[i]) p[k] = v;
      runs[i]["params"] = std::move(p);
    }
  }
  return Json({{"total", list.total}, {"offset", f.offset}, {"runs", runs}});
}

Result<RouteReply> ListRunsCsv(TrackingStore& s, Req req) {
  RECTRAIN_ASSIGN_OR_RETURN(RunFilter f, ParseFilter(req));
  RECTRAIN_ASSIGN_OR_RETURN(std::string csv, s.ExportRunsCsv(f));
  return RouteReply{200, std::move(csv), "text/csv", {}};
}

Result<RouteReply> GetRun(TrackingStore& s, Req req) {
  RECTRAIN_ASSIGN_OR_RETURN(RunId id, RunIdFromPath(req));
  RECTRAIN_ASSIGN_OR_RETURN(track::RunDetail d, s.GetRun(id));
  return Json(track::RunDetailJson(d));
}

Result<RouteReply> DeleteRun(TrackingStore& s, Req req) {
  RECTRAIN_ASSIGN_OR_RETURN(RunId id, RunIdFromPath(req));
  RECTRAIN_RETURN_IF_ERROR(s.DeleteRun(id));
  return Json({{"deleted", id}});
}

Result<RouteReply> RunMetrics(TrackingStore& s, Req req, int64_t default_max_points) {
  RECTRAIN_ASSIGN_OR_RETURN(RunId id, RunIdFromPath(req));
  RECTRAIN_ASSIGN_OR_RETURN(int64_t max_points, IntParam(req, "max_points", default_max_points));
  RECTRAIN_ASSIGN_OR_RETURN(int64_t min_step, IntParam(req, "min_step", std::numeric_limits<int64_t>::min()));
  RECTRAIN_ASSIGN_OR_RETURN(int64_t max_step, IntParam(req, "max_step", std::numeric_limits<int64_t>::max()));
  std::vector<std::string> keys = req.ParamValues("key");
  if (keys.empty()) {
    RECTRAIN_ASSIGN_OR_RETURN(track::RunDetail d, s.GetRun(id));
    for (const auto& k : d.metric_keys) keys.push_back(k.key);
  }
  json series = json::array();
  for (const std::string& key : keys) {
    RECTRAIN_ASSIGN_OR_RETURN(track::MetricSeries m, s.GetMetrics(id, key, max_points, min_step, max_step));
    json points = json::array();
    for (const auto& p : m.points) points.push_back({p.step, p.value, p.wall_time});
    series.push_back(
        {{"key", m.key}, {"total_points", m.total_points}, {"downsampled", m.downsampled}, {"points", points}});
  }
  return Json({{"run_id", id}, {"series", series}});
}

Result<RouteReply> RunMetricsCsv(TrackingStore& s, Req req) {
  RECTRAIN_ASSIGN_OR_RETURN(RunId id, RunIdFromPath(req));
  RECTRAIN_ASSIGN_OR_RETURN(std::string csv, s.ExportMetricsCsv(id));
  return RouteReply{200, std::move(csv), "text/csv", {}};
}

Result<RouteReply> Compare(TrackingStore& s, Req req) {
  std::vector<RunId> ids;
  const std::string text = req.Param("ids");
  size_t pos = 0;
  while (pos <= text.size() && !text.empty()) {
    size_t comma = text.find(',', pos);
    std::string part = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    RunId id = 0;
    auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), id);
    if (part.empty() || ec != std::errc() || p != part.data() + part.size()) {
      return InvalidArgumentError("query parameter 'ids' must be comma-separated run ids, got '" + text + "'");
    }
    ids.push_back(id);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  RECTRAIN_ASSIGN_OR_RETURN(track::RunComparison cmp, s.CompareRuns(ids));
  return Json(track::RunComparisonJson(cmp));
}

Result<RouteReply> Groups(TrackingStore& s, Req req) {
  track::GroupBy by = track::GroupBy::kGroupId;
  if (req.HasParam("by")) {
    std::string v = req.Param("by");
    if (v == "parent") {
      by = track::GroupBy::kParent;
    } else if (v == "tag") {
      by = track::GroupBy::kTag;
    } else if (v != "group") {
      return InvalidArgumentError("query parameter 'by' must be group, parent or tag, got '" + v + "'");
    }
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<track::GroupSummary> groups, s.ListGroups(by));
  json out = json::array();
  for (const auto& g : groups) {
    out.push_back({{"group_id", g.group_id}, {"runs", g.runs}, {"running", g.running}, {"finished", g.finished},
                   {"failed", g.failed}, {"stopped", g.stopped}, {"first_start_time", g.first_start_time},
                   {"last_start_time", g.last_start_time}});
  }
  return Json({{"groups", out}});
}

// The run's alerts in Alertmanager (docs/alerts.md). No Alertmanager configured: an empty list
// with a note; one that cannot be asked: 503 with the reason.
Result<RouteReply> RunAlertsReply(TrackingStore& s, Req req, const std::string& alertmanager) {
  RECTRAIN_ASSIGN_OR_RETURN(RunId id, RunIdFromPath(req));
  RECTRAIN_RETURN_IF_ERROR(s.GetRun(id).status());
  if (alertmanager.empty()) {
    return Json({{"run_id", id},
                 {"alertmanager", nullptr},
                 {"alerts", json::array()},
                 {"note", "no Alertmanager configured (start rectrain ui with --alertmanager URL)"}});
  }
  RECTRAIN_ASSIGN_OR_RETURN(json alerts, RunAlerts(alertmanager, id));
  return Json({{"run_id", id}, {"alertmanager", alertmanager}, {"alerts", alerts}});
}

}  // namespace

Result<AlertmanagerUrl> ParseAlertmanagerUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("--alertmanager must be an http:// or https:// URL such as http://127.0.0.1:9093, got '" +
                                url + "' (" + why + ")");
  };
  const size_t sep = url.find("://");
  if (sep == std::string::npos) return bad("no scheme");
  const std::string scheme = url.substr(0, sep);
  if (scheme != "http" && scheme != "https") return bad("scheme " + scheme);
  const size_t host_at = sep + 3;
  const size_t slash = url.find('/', host_at);
  const std::string host = url.substr(host_at, slash == std::string::npos ? std::string::npos : slash - host_at);
  if (host.empty()) return bad("no host");
  if (host.find_first_of("@?# ") != std::string::npos) return bad("unexpected character in the host");
  AlertmanagerUrl out{url.substr(0, host_at) + host, ""};
  if (slash != std::string::npos) {
    out.prefix = url.substr(slash);
    if (out.prefix.find_first_of("?# ") != std::string::npos) return bad("a query or fragment");
    while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  }
  return out;
}

std::vector<Route> TrackingApiRoutes(track::TrackingStore* store, const TrackingApiOptions& options) {
  const int64_t default_max_points = options.default_max_points;
  const std::string alertmanager = options.alertmanager_url, artifact_root = options.artifact_root;
  return {
      Api("GET", "/api/runs", store, ListRuns),
      Api("GET", "/api/runs.csv", store, ListRunsCsv),
      Api("GET", "/api/runs/{id}", store, GetRun),
      Api("DELETE", "/api/runs/{id}", store, DeleteRun),
      Api("GET", "/api/runs/{id}/metrics", store,
          [default_max_points](TrackingStore& s, Req req) { return RunMetrics(s, req, default_max_points); }),
      Api("GET", "/api/runs/{id}/metrics.csv", store, RunMetricsCsv),
      Api("GET", "/api/compare", store, Compare),
      Api("GET", "/api/groups", store, Groups),
      Api("GET", "/api/runs/{id}/alerts", store,
          [alertmanager](TrackingStore& s, Req req) { return RunAlertsReply(s, req, alertmanager); }),
      Api("GET", "/api/runs/{id}/log", store,
          [artifact_root](TrackingStore& s, Req req) -> Result<RouteReply> {
            RECTRAIN_ASSIGN_OR_RETURN(RunId id, RunIdFromPath(req));
            RECTRAIN_ASSIGN_OR_RETURN(int64_t max_bytes, IntParam(req, "max_bytes", 65536));
            RECTRAIN_ASSIGN_OR_RETURN(json j, LogTail(s, id, artifact_root, max_bytes));
            return Json(j);
          }),
  };
}

}  // namespace rectrain::webui

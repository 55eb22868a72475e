// rectrain/track/run_json.cc: see run_json.h.
#include "rectrain/track/run_json.h"

namespace rectrain::track {
namespace {

using nlohmann::json;

json Nullable(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

json RunSummaryJson(const RunSummary& r) {
  json finals = json::object();
  for (const auto& [k, v] : r.final_metrics) finals[k] = v;  // NaN dumps as null
  return {{"id", r.id},
          {"name", r.name},
          {"status", std::string(RunStatusName(r.status))},
          {"status_message", r.status_message},
          {"start_time", r.start_time},
          {"end_time", Nullable(r.end_time)},
          {"heartbeat_time", r.heartbeat_time},
          {"host", r.host},
          {"pid", r.pid},
          {"group_id", r.group_id},
          {"parent_id", r.parent_id ? json(*r.parent_id) : json(nullptr)},
          {"git_commit", r.git_commit},
          {"tags", r.tags},
          {"final_metrics", finals}};
}

json RunDetailJson(const RunDetail& d) {
  json j = RunSummaryJson(d.summary);
  j["config_yaml"] = d.config_yaml;
  json params = json::object();
  for (const auto& [k, v] : d.params) params[k] = v;
  j["params"] = params;
  json files = json::array();
  for (const auto& f : d.data_files) {
    files.push_back({{"path", f.path}, {"size_bytes", f.size_bytes}, {"fingerprint", f.fingerprint}});
  }
  j["data_files"] = files;
  json artifacts = json::array();
  for (const auto& a : d.artifacts) {
    artifacts.push_back({{"kind", a.kind}, {"path", a.path}, {"created_time", a.created_time}});
  }
  j["artifacts"] = artifacts;
  json keys = json::array();
  for (const auto& k : d.metric_keys) {
    keys.push_back({{"key", k.key}, {"count", k.count}, {"first_step", k.first_step},
                    {"last_step", k.last_step}, {"last_value", k.last_value}});
  }
  j["metric_keys"] = keys;
  return j;
}

json RunComparisonJson(const RunComparison& cmp) {
  json runs = json::array();
  for (const auto& r : cmp.runs) runs.push_back(RunSummaryJson(r));
  json params = json::array();
  for (const auto& row : cmp.differing_params) {
    json values = json::array();
    for (const auto& v : row.values) values.push_back(v ? json(*v) : json(nullptr));
    params.push_back({{"key", row.key}, {"values", values}});
  }
  json metrics = json::array();
  for (const auto& row : cmp.final_metrics) {
    json values = json::array();
    for (const auto& v : row.values) values.push_back(Nullable(v));
    metrics.push_back({{"key", row.key}, {"values", values}});
  }
  return {{"runs", runs}, {"differing_params", params}, {"final_metrics", metrics}};
}

}  // namespace rectrain::track

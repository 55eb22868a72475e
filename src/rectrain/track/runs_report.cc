// rectrain/track/runs_report.cc: see runs_report.h.
#include "rectrain/track/runs_report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "rectrain/track/run_json.h"

namespace rectrain::track {
namespace {

using nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}


std::string FormatTime(double unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string FormatDuration(double s) {
  if (!(s >= 0)) return "-";
  char buf[32];
  int64_t t = static_cast<int64_t>(s);
  if (t < 60) {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(t));
  } else if (t < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(t / 60),
                  static_cast<long long>(t % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(t / 3600),
                  static_cast<long long>(t / 60 % 60));
  }
  return buf;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

std::string Join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

// Display width in code points (UTF-8 continuation bytes do not count).
size_t Width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s) w += (c & 0xC0) != 0x80;
  return w;
}

// Aligned columns separated by two spaces; trailing spaces trimmed.
std::string Table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], Width(row[i]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - Width(row[i]) + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string Duration(const RunSummary& r) {
  double end = r.end_time.value_or(r.heartbeat_time);
  return FormatDuration(end - r.start_time) + (r.end_time ? "" : "+");
}

}  // namespace

Result<std::string> FormatRunList(const RunList& list, bool as_json) {
  if (as_json) {
    json runs = json::array();
    for (const auto& r : list.runs) runs.push_back(RunSummaryJson(r));
    return Dump({{"total", list.total}, {"runs", runs}});
  }
  std::set<std::string> keys;
  for (const auto& r : list.runs) {
    for (const auto& [k, v] : r.final_metrics) keys.insert(k);
  }
  std::vector<std::string> shown(keys.begin(), keys.end());
  std::vector<std::string> hidden;
  if (shown.size() > static_cast<size_t>(kMaxMetricColumns)) {
    hidden.assign(shown.begin() + kMaxMetricColumns, shown.end());
    shown.resize(kMaxMetricColumns);
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"ID", "NAME", "STATUS", "STARTED", "DURATION", "TAGS"};
  header.insert(header.end(), shown.begin(), shown.end());
  rows.push_back(header);
  for (const auto& r : list.runs) {
    std::vector<std::string> row = {std::to_string(r.id),
                                    r.name,
                                    std::string(RunStatusName(r.status)),
                                    FormatTime(r.start_time),
                                    Duration(r),
                                    r.tags.empty() ? "-" : Join(r.tags, ",")};
    std::map<std::string, double> finals(r.final_metrics.begin(), r.final_metrics.end());
    for (const std::string& k : shown) {
      auto it = finals.find(k);
      row.push_back(it == finals.end() ? "-" : FormatValue(it->second));
    }
    rows.push_back(std::move(row));
  }
  std::string out = list.runs.empty() ? std::string() : Table(rows);
  out += std::to_string(list.runs.size()) + " of " + std::to_string(list.total) + " runs\n";
  if (!hidden.empty()) {
    out += "(metrics not shown: " + Join(hidden, ", ") + "; use --json)\n";
  }
  return out;
}

Result<std::string> FormatRunDetail(const RunDetail& d, bool as_json) {
  if (as_json) {
    return Dump(RunDetailJson(d));
  }
  const RunSummary& r = d.summary;
  std::vector<std::vector<std::string>> head = {
      {"run", std::to_string(r.id)},
      {"name", r.name},
      {"status", std::string(RunStatusName(r.status)) +
                     (r.status_message.empty() ? "" : " (" + r.status_message + ")")},
      {"started", FormatTime(r.start_time)},
      {"ended", r.end_time ? FormatTime(*r.end_time) : "-"},
      {"duration", Duration(r)},
      {"host", r.host + " (pid " + std::to_string(r.pid) + ")"},
      {"group", r.group_id.empty() ? "-" : r.group_id},
      {"parent", r.parent_id ? std::to_string(*r.parent_id) : "-"},
      {"git commit", r.git_commit.empty() ? "-" : r.git_commit},
      {"tags", r.tags.empty() ? "-" : Join(r.tags, ", ")}};
  std::string out = Table(head);
  auto section = [&](const std::string& title, std::vector<std::vector<std::string>> rows) {
    out += "\n" + title + ":\n";
    if (rows.size() <= 1) {
      out += "  (none)\n";
      return;
    }
    std::string t = Table(rows);
    size_t start = 0;
    while (start < t.size()) {
      size_t nl = t.find('\n', start);
      out += "  " + t.substr(start, nl - start + 1);
      start = nl + 1;
    }
  };
  std::vector<std::vector<std::string>> rows = {{"KEY", "VALUE"}};
  for (const auto& [k, v] : r.final_metrics) rows.push_back({k, FormatValue(v)});
  section("final metrics", std::move(rows));
  rows = {{"KEY", "POINTS", "STEPS", "LAST"}};
  for (const auto& k : d.metric_keys) {
    rows.push_back({k.key, std::to_string(k.count),
                    std::to_string(k.first_step) + ".." + std::to_string(k.last_step),
                    FormatValue(k.last_value)});
  }
  section("metrics", std::move(rows));
  rows = {{"KEY", "VALUE"}};
  for (const auto& [k, v] : d.params) rows.push_back({k, v});
  section("params", std::move(rows));
  rows = {{"PATH", "BYTES", "FINGERPRINT"}};
  for (const auto& f : d.data_files) {
    rows.push_back({f.path, std::to_string(f.size_bytes), f.fingerprint});
  }
  section("data files", std::move(rows));
  rows = {{"KIND", "PATH", "CREATED"}};
  for (const auto& a : d.artifacts) rows.push_back({a.kind, a.path, FormatTime(a.created_time)});
  section("artifacts", std::move(rows));
  return out;
}

Result<std::string> FormatComparison(const RunComparison& cmp, bool as_json) {
  if (as_json) {
    return Dump(RunComparisonJson(cmp));
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"RUN"}, name = {"name"}, status = {"status"},
                           started = {"started"};
  for (const auto& r : cmp.runs) {
    header.push_back(std::to_string(r.id));
    name.push_back(r.name);
    status.push_back(std::string(RunStatusName(r.status)));
    started.push_back(FormatTime(r.start_time));
  }
  rows = {header, name, status, started};
  std::string out = Table(rows);
  rows = {{"FINAL METRIC"}};
  for (const auto& r : cmp.runs) rows[0].push_back(std::to_string(r.id));
  for (const auto& m : cmp.final_metrics) {
    std::vector<std::string> row = {m.key};
    for (const auto& v : m.values) row.push_back(v ? FormatValue(*v) : "-");
    rows.push_back(std::move(row));
  }
  out += "\n" + (rows.size() > 1 ? Table(rows) : "no final metrics\n");
  rows = {{"PARAM (differing)"}};
  for (const auto& r : cmp.runs) rows[0].push_back(std::to_string(r.id));
  for (const auto& p : cmp.differing_params) {
    std::vector<std::string> row = {p.key};
    for (const auto& v : p.values) row.push_back(v ? *v : "-");
    rows.push_back(std::move(row));
  }
  out += "\n" + (rows.size() > 1 ? Table(rows) : "all params are equal\n");
  return out;
}

std::string FormatDeleted(std::span<const RunId> ids, bool as_json) {
  if (as_json) return Dump({{"deleted", std::vector<RunId>(ids.begin(), ids.end())}});
  std::string out;
  for (RunId id : ids) out += "deleted run " + std::to_string(id) + "\n";
  return out;
}

std::string RunsCommandUsage() {
  return "usage: rectrain runs VERB ...\n"
         "  list    [FILTER] [--sort KEY] [--asc] [--limit N] [--offset N] [--json]\n"
         "  show    ID [--json]\n"
         "  compare ID ID... [--json]        (2..10 runs)\n"
         "  delete  ID... [--json]\n"
         "  export  [FILTER] [--sort KEY] [--asc] [--limit N]   (runs as CSV)\n"
         "  export  --metrics ID                                (one run's series as CSV)\n"
         "FILTER: --status S --tag T --name SUBSTR --group G --parent ID --param KEY=VALUE\n"
         "        --metric 'auc>=0.8'   (--tag, --param and --metric repeat)\n"
         "KEY for --sort: id name status start_time end_time metric:<key> param:<key>\n";
}

namespace {

Result<int64_t> ParseInt(std::string_view flag, std::string_view v) {
  int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    return InvalidArgumentError(std::string(flag) + " needs an integer, got '" + std::string(v) +
                                "'");
  }
  return out;
}

struct ParsedArgs {
  RunFilter filter;
  bool json = false;
  std::vector<RunId> ids;
  std::optional<RunId> metrics_run;
};

// Parses the flags after the verb. `allow_filter` admits FILTER/sort/paging flags.
Result<ParsedArgs> ParseArgs(std::string_view verb, std::span<const std::string> args,
                             bool allow_filter, bool allow_json, bool allow_ids,
                             bool allow_metrics) {
  ParsedArgs out;
  out.filter.limit = 100;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (!arg.starts_with("--")) {
      if (!allow_ids) {
        return InvalidArgumentError("'runs " + std::string(verb) +
                                    "' takes no positional argument, got '" + arg + "'");
      }
      RECTRAIN_ASSIGN_OR_RETURN(RunId id, ParseInt("run id", arg));
      out.ids.push_back(id);
      continue;
    }
    std::string flag = arg, value;
    bool has_value = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    auto need_value = [&]() -> Status {
      if (has_value) return OkStatus();
      if (i + 1 >= args.size()) return InvalidArgumentError(flag + " needs a value");
      value = args[++i];
      return OkStatus();
    };
    RunFilter& f = out.filter;
    if (flag == "--json" && allow_json && !has_value) {
      out.json = true;
    } else if (flag == "--asc" && allow_filter && !has_value) {
      f.descending = false;
    } else if (flag == "--metrics" && allow_metrics) {
      RECTRAIN_RETURN_IF_ERROR(need_value());
      RECTRAIN_ASSIGN_OR_RETURN(out.metrics_run, ParseInt(flag, value));
    } else if (allow_filter && (flag == "--status" || flag == "--tag" || flag == "--name" ||
                                flag == "--group" || flag == "--parent" || flag == "--param" ||
                                flag == "--metric" || flag == "--sort" || flag == "--limit" ||
                                flag == "--offset")) {
      RECTRAIN_RETURN_IF_ERROR(need_value());
      if (flag == "--status") {
        RECTRAIN_ASSIGN_OR_RETURN(f.status, ParseRunStatus(value));
      } else if (flag == "--tag") {
        f.tags.push_back(value);
      } else if (flag == "--name") {
        f.name_contains = value;
      } else if (flag == "--group") {
        f.group_id = value;
      } else if (flag == "--parent") {
        RECTRAIN_ASSIGN_OR_RETURN(f.parent_id, ParseInt(flag, value));
      } else if (flag == "--param") {
        size_t eq = value.find('=');
        if (eq == std::string::npos || eq == 0) {
          return InvalidArgumentError("--param needs KEY=VALUE, got '" + value + "'");
        }
        f.params.emplace_back(value.substr(0, eq), value.substr(eq + 1));
      } else if (flag == "--metric") {
        RECTRAIN_ASSIGN_OR_RETURN(MetricThreshold t, ParseMetricThreshold(value));
        f.metrics.push_back(std::move(t));
      } else if (flag == "--sort") {
        f.sort_by = value;
      } else if (flag == "--limit") {
        RECTRAIN_ASSIGN_OR_RETURN(f.limit, ParseInt(flag, value));
      } else {
        RECTRAIN_ASSIGN_OR_RETURN(f.offset, ParseInt(flag, value));
      }
    } else {
      return InvalidArgumentError("unknown flag '" + flag + "' for 'runs " + std::string(verb) +
                                  "'");
    }
  }
  return out;
}

}  // namespace

Result<std::string> RunRunsCommand(TrackingStore& store, std::span<const std::string> args) {
  if (args.empty()) return InvalidArgumentError("missing verb\n" + RunsCommandUsage());
  const std::string& verb = args[0];
  std::span<const std::string> rest = args.subspan(1);
  if (verb == "list") {
    RECTRAIN_ASSIGN_OR_RETURN(ParsedArgs a, ParseArgs(verb, rest, true, true, false, false));
    RECTRAIN_ASSIGN_OR_RETURN(RunList list, store.ListRuns(a.filter));
    return FormatRunList(list, a.json);
  }
  if (verb == "show") {
    RECTRAIN_ASSIGN_OR_RETURN(ParsedArgs a, ParseArgs(verb, rest, false, true, true, false));
    if (a.ids.size() != 1) {
      return InvalidArgumentError("'runs show' needs exactly one run id, got " +
                                  std::to_string(a.ids.size()));
    }
    RECTRAIN_ASSIGN_OR_RETURN(RunDetail d, store.GetRun(a.ids[0]));
    return FormatRunDetail(d, a.json);
  }
  if (verb == "compare") {
    RECTRAIN_ASSIGN_OR_RETURN(ParsedArgs a, ParseArgs(verb, rest, false, true, true, false));
    if (a.ids.size() < 2 || a.ids.size() > 10) {
      return InvalidArgumentError("'runs compare' needs 2..10 run ids, got " +
                                  std::to_string(a.ids.size()));
    }
    RECTRAIN_ASSIGN_OR_RETURN(RunComparison cmp, store.CompareRuns(a.ids));
    return FormatComparison(cmp, a.json);
  }
  if (verb == "delete") {
    RECTRAIN_ASSIGN_OR_RETURN(ParsedArgs a, ParseArgs(verb, rest, false, true, true, false));
    if (a.ids.empty()) return InvalidArgumentError("'runs delete' needs at least one run id");
    // Check all first so a typo deletes nothing.
    for (RunId id : a.ids) RECTRAIN_RETURN_IF_ERROR(store.GetRun(id).status());
    for (RunId id : a.ids) RECTRAIN_RETURN_IF_ERROR(store.DeleteRun(id));
    return FormatDeleted(a.ids, a.json);
  }
  if (verb == "export") {
    RECTRAIN_ASSIGN_OR_RETURN(ParsedArgs a, ParseArgs(verb, rest, true, false, false, true));
    if (a.metrics_run) return store.ExportMetricsCsv(*a.metrics_run);
    if (std::find_if(rest.begin(), rest.end(), [](const std::string& s) {
          return s == "--limit" || s.starts_with("--limit=");
        }) == rest.end()) {
      a.filter.limit = 10000;
    }
    return store.ExportRunsCsv(a.filter);
  }
  if (verb == "--help" || verb == "help") return RunsCommandUsage();
  return InvalidArgumentError("unknown verb 'runs " + verb +
                              "'; expected list, show, compare, delete or export");
}

}  // namespace rectrain::track

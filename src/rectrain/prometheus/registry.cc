// rectrain/prometheus/registry.cc: see registry.h.
#include "rectrain/prometheus/registry.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace rectrain::prometheus {
namespace {

bool ValidMetricName(std::string_view n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool ValidLabelName(std::string_view n) {
  if (n.empty() || n.starts_with("__")) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// Renders sorted labels as `{a="x",b="y"}` ("" when none); validates them.
Result<std::string> LabelText(Labels labels) {
  std::sort(labels.begin(), labels.end());
  std::string out;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto& [k, v] = labels[i];
    if (!ValidLabelName(k)) {
      return InvalidArgumentError("invalid label name '" + k +
                                  "': must match [a-zA-Z_][a-zA-Z0-9_]* and not start with __");
    }
    if (i > 0 && labels[i - 1].first == k) {
      return InvalidArgumentError("label '" + k + "' given twice");
    }
    out += (i == 0 ? "{" : ",") + k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

void Counter::Increment(double v) {
  if (!(v >= 0.0)) return;  // also rejects NaN
  value_.fetch_add(v, std::memory_order_relaxed);
}

void Counter::SetTotal(double total) {
  double cur = value_.load(std::memory_order_relaxed);
  while (total > cur && !value_.compare_exchange_weak(cur, total, std::memory_order_relaxed)) {
  }
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(new std::atomic<uint64_t>[bounds_.size() + 1]) {
  for (size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  if (std::isnan(v)) return;
  const size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  buckets_[b].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> out(bounds_.size() + 1);
  for (size_t i = 0; i < out.size(); ++i) out[i] = buckets_[i].load(std::memory_order_relaxed);
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  for (int i = 0; i < count; ++i, start *= factor) out.push_back(start);
  return out;
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, p);
}

Result<MetricsRegistry::Family*> MetricsRegistry::GetFamily(std::string_view name,
                                                            std::string_view help, Type type) {
  if (!ValidMetricName(name)) {
    return InvalidArgumentError("invalid metric name '" + std::string(name) +
                                "': must match [a-zA-Z_:][a-zA-Z0-9_:]*");
  }
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(std::string(name), Family{type, std::string(help), {}, {}, {}}).first;
  } else if (it->second.type != type) {
    static constexpr const char* kTypeNames[] = {"counter", "gauge", "histogram"};
    return InvalidArgumentError("metric '" + std::string(name) + "' is already registered as a " +
                                kTypeNames[static_cast<int>(it->second.type)]);
  }
  return &it->second;
}

Result<Counter*> MetricsRegistry::GetCounter(std::string_view name, std::string_view help,
                                             const Labels& labels) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string key, LabelText(labels));
  std::lock_guard lock(mu_);
  RECTRAIN_ASSIGN_OR_RETURN(Family * f, GetFamily(name, help, Type::kCounter));
  auto& slot = f->counters[key];
  if (!slot) slot = std::make_unique<Counter>();
  return slot.get();
}

Result<Gauge*> MetricsRegistry::GetGauge(std::string_view name, std::string_view help,
                                         const Labels& labels) {
  RECTRAIN_ASSIGN_OR_RETURN(std::string key, LabelText(labels));
  std::lock_guard lock(mu_);
  RECTRAIN_ASSIGN_OR_RETURN(Family * f, GetFamily(name, help, Type::kGauge));
  auto& slot = f->gauges[key];
  if (!slot) slot = std::make_unique<Gauge>();
  return slot.get();
}

Result<Histogram*> MetricsRegistry::GetHistogram(std::string_view name, std::string_view help,
                                                 const std::vector<double>& bounds, const Labels& labels) {
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1]))) {
      return InvalidArgumentError("histogram '" + std::string(name) + "': bucket bounds must be finite and ascending");
    }
  }
  RECTRAIN_ASSIGN_OR_RETURN(std::string key, LabelText(labels));
  std::lock_guard lock(mu_);
  RECTRAIN_ASSIGN_OR_RETURN(Family * f, GetFamily(name, help, Type::kHistogram));
  auto& slot = f->histograms[key];
  if (!slot) {
    const std::vector<double>* family_bounds = &bounds;
    for (const auto& [k, h] : f->histograms) {
      if (h) family_bounds = &h->bounds();
    }
    slot = std::make_unique<Histogram>(*family_bounds);
  }
  return slot.get();
}

void MetricsRegistry::AddCollector(std::function<void()> collector) {
  std::lock_guard lock(collectors_mu_);
  collectors_.push_back(std::move(collector));
}

std::string MetricsRegistry::Render() {
  {
    std::lock_guard lock(collectors_mu_);
    for (auto& c : collectors_) c();
  }
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + EscapeHelp(f.help) + "\n";
    static constexpr const char* kTypeLines[] = {" counter\n", " gauge\n", " histogram\n"};
    out += "# TYPE " + name + kTypeLines[static_cast<int>(f.type)];
    for (const auto& [labels, c] : f.counters) {
      out += name + labels + " " + FormatSampleValue(c->Value()) + "\n";
    }
    for (const auto& [labels, g] : f.gauges) {
      out += name + labels + " " + FormatSampleValue(g->Value()) + "\n";
    }
    for (const auto& [labels, h] : f.histograms) {
      // `le` joins the series' own labels: {a="x"} -> {a="x",le="0.1"}.
      const std::string open = labels.empty() ? "{" : labels.substr(0, labels.size() - 1) + ",";
      const std::vector<uint64_t> counts = h->BucketCounts();
      uint64_t cumulative = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        cumulative += counts[i];
        const std::string le = i < h->bounds().size() ? FormatSampleValue(h->bounds()[i]) : "+Inf";
        out += name + "_bucket" + open + "le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
      }
      out += name + "_sum" + labels + " " + FormatSampleValue(h->Sum()) + "\n";
      out += name + "_count" + labels + " " + std::to_string(cumulative) + "\n";
    }
  }
  return out;
}

namespace {

struct ProcStat {
  double cpu_seconds = 0;
  double threads = 0;
  double start_time_s = 0;
  double vsize_bytes = 0;
  double rss_bytes = 0;
};

bool ReadProcStat(ProcStat& s) {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 > line.size()) return false;
  std::istringstream fields(line.substr(close + 2));
  // Fields after ")" start at field 3; we need 14 utime, 15 stime, 20 num_threads,
  // 22 starttime, 23 vsize, 24 rss (proc(5)).
  std::vector<std::string> f;
  std::string tok;
  while (fields >> tok && f.size() < 22) f.push_back(tok);
  if (f.size() < 22) return false;
  auto at = [&](int field) { return std::strtod(f[field - 3].c_str(), nullptr); };
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  s.cpu_seconds = (at(14) + at(15)) / tick;
  s.threads = at(20);
  s.vsize_bytes = at(23);
  s.rss_bytes = at(24) * static_cast<double>(sysconf(_SC_PAGESIZE));
  std::ifstream stat("/proc/stat");
  std::string key;
  double btime = 0;
  while (stat >> key) {
    if (key == "btime") {
      stat >> btime;
      break;
    }
    std::getline(stat, key);
  }
  s.start_time_s = btime + at(22) / tick;
  return true;
}

}  // namespace

Status RegisterProcessMetrics(MetricsRegistry& registry) {
  RECTRAIN_ASSIGN_OR_RETURN(
      Counter * cpu, registry.GetCounter("process_cpu_seconds_total",
                                         "Total user and system CPU time spent in seconds."));
  RECTRAIN_ASSIGN_OR_RETURN(Gauge * rss, registry.GetGauge("process_resident_memory_bytes",
                                                           "Resident memory size in bytes."));
  RECTRAIN_ASSIGN_OR_RETURN(Gauge * vsz, registry.GetGauge("process_virtual_memory_bytes",
                                                           "Virtual memory size in bytes."));
  RECTRAIN_ASSIGN_OR_RETURN(
      Gauge * start, registry.GetGauge("process_start_time_seconds",
                                       "Start time of the process since unix epoch in seconds."));
  RECTRAIN_ASSIGN_OR_RETURN(Gauge * fds, registry.GetGauge("process_open_fds",
                                                           "Number of open file descriptors."));
  RECTRAIN_ASSIGN_OR_RETURN(Gauge * threads,
                            registry.GetGauge("process_threads", "Number of OS threads."));
  registry.AddCollector([=] {
    ProcStat s;
    if (ReadProcStat(s)) {
      cpu->SetTotal(s.cpu_seconds);
      rss->Set(s.rss_bytes);
      vsz->Set(s.vsize_bytes);
      start->Set(s.start_time_s);
      threads->Set(s.threads);
    }
    std::error_code ec;
    int64_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
      ++n;
    }
    if (!ec) fds->Set(static_cast<double>(n));
  });
  return OkStatus();
}

}  // namespace rectrain::prometheus

// rectrain/prometheus/registry.h: a Prometheus metrics registry (counters, gauges and
// histograms with labels) rendered in the text exposition format 0.0.4, plus the standard
// process_* metrics (CPU seconds, RSS, ...) read from /proc/self.
//
// This library (rectrain::prometheus) depends only on base, so the trainer, the tuner and the
// model server own their counters without linking the HTTP server; http::Server renders a
// registry on GET /metrics.
//
// Thread safety: every method is thread-safe. Counter/Gauge updates are lock-free atomics, so the
// trainer thread may update them on its hot path while a server thread renders. Series pointers
// stay valid for the life of the registry.
//
// Example:
//   prometheus::MetricsRegistry reg;
//   RECTRAIN_ASSIGN_OR_RETURN(prometheus::Counter* samples,
//       reg.GetCounter("rectrain_train_samples_total", "Samples trained on.", {{"run", "12"}}));
//   samples->Increment(4096);
//   std::string text = reg.Render();   // "# HELP rectrain_train_samples_total ...\n..."
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::prometheus {

// Label name -> value. Order does not matter (the registry sorts by name).
using Labels = std::vector<std::pair<std::string, std::string>>;

// A monotonically increasing value.
class Counter {
 public:
  // Adds `v`. Negative or NaN increments are ignored (a counter never decreases).
  void Increment(double v = 1.0);
  // Raises the value to `total` if larger: for totals kept elsewhere (e.g. CPU seconds).
  void SetTotal(double total);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double v) { value_.fetch_add(v, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Observations counted into fixed buckets (cumulative `le` buckets, plus _sum and _count when
// rendered). Observe is lock-free: one atomic add on the bucket, the sum and the count.
class Histogram {
 public:
  // `bounds`: the buckets' upper bounds, ascending and finite (+Inf is implicit).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  const std::vector<double>& bounds() const { return bounds_; }
  // Non-cumulative counts per bucket (bounds().size() + 1 entries, the last is +Inf), the sum
  // and the count. Read without a lock, so a concurrent Observe may show in some but not all.
  std::vector<uint64_t> BucketCounts() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }
  uint64_t Count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;
  std::atomic<double> sum_{0.0};
  std::atomic<uint64_t> count_{0};
};

// Bucket bounds start, start·factor, ... (count of them): e.g. latencies from 100 µs.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

class MetricsRegistry {
 public:
  // Returns the series `name{labels}`, creating it (and its family, with `help`) on first use;
  // later calls with the same name and labels return the same pointer (help is kept from the
  // first call). Errors (InvalidArgument): a name not matching [a-zA-Z_:][a-zA-Z0-9_:]*, a label
  // name not matching [a-zA-Z_][a-zA-Z0-9_]* or starting with "__", a repeated label name, or a
  // name already registered with the other type ("metric 'x' is already registered as a gauge").
  Result<Counter*> GetCounter(std::string_view name, std::string_view help,
                              const Labels& labels = {});
  Result<Gauge*> GetGauge(std::string_view name, std::string_view help,
                          const Labels& labels = {});
  // A histogram series; `bounds` must be ascending and finite (InvalidArgument), and a family's
  // series share the bounds of its first one (later calls' bounds are ignored).
  Result<Histogram*> GetHistogram(std::string_view name, std::string_view help,
                                  const std::vector<double>& bounds, const Labels& labels = {});

  // Adds a callback run at the start of every Render() (outside the registry lock, so it may
  // call GetGauge/GetCounter), e.g. to refresh gauges computed on demand.
  void AddCollector(std::function<void()> collector);

  // The exposition text: families sorted by name, each with "# HELP" and "# TYPE" lines, series
  // sorted by their label text; label values and help escaped as the format requires.
  std::string Render();

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<std::string, std::unique_ptr<Counter>> counters;  // key: rendered label text
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
    std::map<std::string, std::unique_ptr<Histogram>> histograms;
  };
  Result<Family*> GetFamily(std::string_view name, std::string_view help, Type type);

  std::mutex mu_;
  std::map<std::string, Family, std::less<>> families_;  // Guarded by mu_.
  std::mutex collectors_mu_;
  std::vector<std::function<void()>> collectors_;  // Guarded by collectors_mu_.
};

// Registers process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_start_time_seconds, process_open_fds and
// process_threads, refreshed from /proc/self at every Render().
Status RegisterProcessMetrics(MetricsRegistry& registry);

// Format helpers (exposed for tests).
// Escapes '\\', '"' and newline as the label-value grammar requires.
std::string EscapeLabelValue(std::string_view v);
// Escapes '\\' and newline (HELP text).
std::string EscapeHelp(std::string_view v);
// Shortest round-trip decimal; "NaN", "+Inf", "-Inf" for non-finite values.
std::string FormatSampleValue(double v);

}  // namespace rectrain::prometheus

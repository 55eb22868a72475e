// rectrain/prometheus/registry.cc: see registry.h.
#include "rectrain/prometheus/registry.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

namespace rectrain::prometheus {
namespace {

TEST(PrometheusTest, RendersExactExposition) {
  MetricsRegistry reg;
  Counter* c = *reg.GetCounter("rectrain_train_samples_total", "Samples\ntrained \\ on.",
                               {{"run", "7"}, {"model", "deep\"fm\"\n\\x"}});
  c->Increment(4096);
  c->Increment(-5);  // ignored
  c->Increment(std::nan(""));  // ignored
  Gauge* g = *reg.GetGauge("rectrain_train_loss", "Last training loss.");
  g->Set(0.25);
  Gauge* inf = *reg.GetGauge("a_gauge", "h", {{"k", "v"}});
  inf->Set(-std::numeric_limits<double>::infinity());
  *reg.GetGauge("a_gauge", "ignored help", {{"k", "a"}});  // same family, new series
  EXPECT_EQ(reg.Render(),
            "# HELP a_gauge h\n"
            "# TYPE a_gauge gauge\n"
            "a_gauge{k=\"a\"} 0\n"
            "a_gauge{k=\"v\"} -Inf\n"
            "# HELP rectrain_train_loss Last training loss.\n"
            "# TYPE rectrain_train_loss gauge\n"
            "rectrain_train_loss 0.25\n"
            "# HELP rectrain_train_samples_total Samples\\ntrained \\\\ on.\n"
            "# TYPE rectrain_train_samples_total counter\n"
            "rectrain_train_samples_total{model=\"deep\\\"fm\\\"\\n\\\\x\",run=\"7\"} 4096\n");
}

TEST(PrometheusTest, SameSeriesSamePointer) {
  MetricsRegistry reg;
  auto a = reg.GetCounter("x_total", "h", {{"b", "2"}, {"a", "1"}});
  auto b = reg.GetCounter("x_total", "h", {{"a", "1"}, {"b", "2"}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(PrometheusTest, RejectsBadNamesAndTypeClash) {
  MetricsRegistry reg;
  EXPECT_EQ(reg.GetCounter("1bad", "h").status(),
            InvalidArgumentError("invalid metric name '1bad': must match [a-zA-Z_:][a-zA-Z0-9_:]*"));
  EXPECT_EQ(reg.GetGauge("ok", "h", {{"__reserved", "x"}}).status(),
            InvalidArgumentError("invalid label name '__reserved': must match "
                                 "[a-zA-Z_][a-zA-Z0-9_]* and not start with __"));
  EXPECT_EQ(reg.GetGauge("ok", "h", {{"a", "x"}, {"a", "y"}}).status(),
            InvalidArgumentError("label 'a' given twice"));
  ASSERT_TRUE(reg.GetGauge("ok", "h").ok());
  EXPECT_EQ(reg.GetCounter("ok", "h").status(),
            InvalidArgumentError("metric 'ok' is already registered as a gauge"));
}

TEST(PrometheusTest, ConcurrentIncrementsAreExact) {
  MetricsRegistry reg;
  Counter* c = *reg.GetCounter("n_total", "h");
  Gauge* g = *reg.GetGauge("g", "h");
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      for (int i = 0; i < 100000; ++i) {
        c->Increment();
        g->Add(1);
        if (i % 1000 == 0) (void)reg.Render();
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(c->Value(), 400000.0);
  EXPECT_EQ(g->Value(), 400000.0);
}

TEST(PrometheusTest, SetTotalIsMonotonic) {
  Counter c;
  c.SetTotal(5);
  c.SetTotal(3);
  EXPECT_EQ(c.Value(), 5);
  c.SetTotal(9);
  EXPECT_EQ(c.Value(), 9);
}

TEST(PrometheusTest, ProcessMetricsFromProc) {
  MetricsRegistry reg;
  ASSERT_TRUE(RegisterProcessMetrics(reg).ok());
  std::vector<char> touch(16 << 20, 1);  // make RSS clearly non-zero
  std::string text = reg.Render();
  auto value_of = [&](const std::string& name) {
    size_t pos = text.find("\n" + name + " ");
    EXPECT_NE(pos, std::string::npos) << name << " missing in\n" << text;
    return pos == std::string::npos ? -1.0 : std::stod(text.substr(pos + name.size() + 2));
  };
  EXPECT_GT(value_of("process_resident_memory_bytes"), 16.0 * (1 << 20));
  EXPECT_GE(value_of("process_virtual_memory_bytes"), value_of("process_resident_memory_bytes"));
  EXPECT_GE(value_of("process_cpu_seconds_total"), 0.0);
  EXPECT_GE(value_of("process_threads"), 1.0);
  EXPECT_GE(value_of("process_open_fds"), 3.0);
  double start = value_of("process_start_time_seconds");
  double now = static_cast<double>(time(nullptr));
  EXPECT_GT(start, now - 3600);
  EXPECT_LE(start, now + 1);
  EXPECT_EQ(touch[12345], 1);
  EXPECT_NE(text.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos);
}

TEST(PrometheusTest, FormatSampleValue) {
  EXPECT_EQ(FormatSampleValue(1e-7), "1e-07");
  EXPECT_EQ(FormatSampleValue(123456789.0), "123456789");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
}

}  // namespace

TEST(PrometheusTest, HistogramRendersCumulativeBuckets) {
  MetricsRegistry reg;
  Histogram* h = *reg.GetHistogram("lat_seconds", "Latency.", {0.1, 1}, {{"route", "p"}});
  for (double v : {0.05, 0.1, 0.5, 3.0}) h->Observe(v);  // 0.1 falls into le="0.1" (le is inclusive)
  h->Observe(std::nan(""));                              // ignored
  Histogram* plain = *reg.GetHistogram("rows", "Rows.", {8});
  plain->Observe(2);
  EXPECT_EQ(reg.Render(),
            "# HELP lat_seconds Latency.\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{route=\"p\",le=\"0.1\"} 2\n"
            "lat_seconds_bucket{route=\"p\",le=\"1\"} 3\n"
            "lat_seconds_bucket{route=\"p\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{route=\"p\"} 3.65\n"
            "lat_seconds_count{route=\"p\"} 4\n"
            "# HELP rows Rows.\n"
            "# TYPE rows histogram\n"
            "rows_bucket{le=\"8\"} 1\n"
            "rows_bucket{le=\"+Inf\"} 1\n"
            "rows_sum 2\n"
            "rows_count 1\n");
  // A second series of the family keeps the family's bounds.
  Histogram* other = *reg.GetHistogram("lat_seconds", "Latency.", {5}, {{"route", "q"}});
  EXPECT_EQ(other->bounds(), (std::vector<double>{0.1, 1}));
  EXPECT_EQ(reg.GetHistogram("bad", "h", {1, 1}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reg.GetCounter("rows", "h").status(),
            InvalidArgumentError("metric 'rows' is already registered as a histogram"));
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 3), (std::vector<double>{0.5, 1, 2}));
}

}  // namespace rectrain::prometheus

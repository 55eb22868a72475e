// ui_seed_store: fills a tracking store for the browser tests.
//   ui_seed_store --store PATH demo      a small realistic workspace: a 5-trial lr study under
//                                        a driver run, a baseline, a failed and a running run,
//                                        curves, system figures, data files, a log file.
//   ui_seed_store --store PATH scale [--runs 10000] [--points 1000000]
//                                        many runs (bulk SQL) plus one run whose "train/loss"
//                                        has `points` points.
//   ui_seed_store --store PATH append RUN --steps N --interval-ms MS
//                                        logs one more step every MS ms (live-update test).
// Prints one JSON object describing what it made (ids, expected counts) on stdout.
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/track/tracking_store.h"

namespace {

namespace fs = std::filesystem;
using rectrain::Status;
using rectrain::track::RunId;
using rectrain::track::RunInfo;
using rectrain::track::RunStatus;
using rectrain::track::TrackingStore;

[[noreturn]] void Die(const std::string& what, const Status& st) {
  std::fprintf(stderr, "ui_seed_store: %s: %s\n", what.c_str(), st.ToString().c_str());
  std::exit(1);
}
#define CHECK_OK(expr)                          \
  do {                                          \
    Status _st = (expr);                        \
    if (!_st.ok()) Die(#expr, _st);             \
  } while (0)

std::string Config(double lr, int dim, const std::string& model, int seed) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "model:\n  name: %s\n  embedding_dim: %d\n  mlp: [400, 400, 400]\n"
                "optimizer:\n  name: adam\n  lr: %g\n"
                "data:\n  path: data/criteo_day0.tsv\n  batch_size: 4096\n"
                "train:\n  epochs: 1\n  seed: %d\n",
                model.c_str(), dim, lr, seed);
  return buf;
}

// A plausible training run: loss falls faster with a better lr; AUC rises.
void LogCurves(TrackingStore& store, RunId run, double quality, int steps, uint64_t seed,
               int64_t first_step = 0) {
  rectrain::Rng rng(seed);
  for (int64_t step = first_step; step < first_step + steps; ++step) {
    double t = (step + 1) / 500.0;
    double loss = 0.44 + 0.25 * std::exp(-3.0 * t * quality) + 0.01 * (rng.Uniform() - 0.5);
    std::vector<std::pair<std::string, double>> m = {
        {"train/loss", loss},
        {"train/samples_per_s", 9.0e5 + 4.0e4 * (rng.Uniform() - 0.5)},
        {"system/rss_bytes", 1.2e9 + 2.0e6 * step},
        {"system/cpu_percent", 180 + 15 * (rng.Uniform() - 0.5)}};
    if (step % 50 == 49) {
      m.emplace_back("val/auc", 0.70 + 0.09 * quality * (1 - std::exp(-4.0 * t)));
    }
    CHECK_OK(store.LogMetrics(run, step, m));
  }
}

int Demo(TrackingStore& store, const fs::path& ws) {
  fs::create_directories(ws / "logs");
  RunInfo driver;
  driver.name = "lr-study";
  driver.tags = {"study"};
  driver.config_yaml = "tune:\n  param: optimizer.lr\n  trials: 5\n";
  auto driver_id = store.StartRun(driver);
  if (!driver_id.ok()) Die("StartRun", driver_id.status());

  const double lrs[] = {0.0003, 0.001, 0.003, 0.01, 0.03};
  const double quality[] = {0.55, 0.8, 1.0, 0.9, 0.6};
  std::vector<RunId> trials;
  for (int i = 0; i < 5; ++i) {
    RunInfo info;
    char name[64];
    std::snprintf(name, sizeof(name), "deepfm-lr%g", lrs[i]);
    info.name = name;
    info.group_id = "study-lr";
    info.parent_id = *driver_id;
    info.tags = {"sweep"};
    info.config_yaml = Config(lrs[i], 16, "deepfm", 1);
    auto id = store.StartRun(info);
    if (!id.ok()) Die("StartRun", id.status());
    trials.push_back(*id);
    CHECK_OK(store.AddDataFile(*id, {"data/criteo_day0.tsv", 11'500'000'000, "xxh64:9f2c1a7be0d4"}));
    LogCurves(store, *id, quality[i], 500, 100 + i);
    std::pair<std::string, double> fin[] = {
        {"val/auc", 0.70 + 0.09 * quality[i]}, {"val/logloss", 0.47 - 0.03 * quality[i]},
        {"train/samples_per_s", 9.0e5}};
    CHECK_OK(store.SetFinal(*id, fin));
    CHECK_OK(store.AddArtifact(*id, "checkpoint", (ws / "ckpt" / (std::to_string(*id) + ".ckpt")).string()));
    CHECK_OK(store.FinishRun(*id, RunStatus::kFinished));
  }
  CHECK_OK(store.FinishRun(*driver_id, RunStatus::kFinished));

  RunInfo base;
  base.name = "baseline-dcn";
  base.tags = {"baseline"};
  base.config_yaml = Config(0.001, 8, "dcn", 1);
  auto base_id = store.StartRun(base);
  if (!base_id.ok()) Die("StartRun", base_id.status());
  LogCurves(store, *base_id, 0.7, 500, 7);
  std::pair<std::string, double> base_fin[] = {{"val/auc", 0.763}, {"val/logloss", 0.452}};
  CHECK_OK(store.SetFinal(*base_id, base_fin));
  CHECK_OK(store.FinishRun(*base_id, RunStatus::kFinished));

  RunInfo bad;
  bad.name = "deepfm-lr1.0-diverged";
  bad.tags = {"sweep"};
  bad.config_yaml = Config(1.0, 16, "deepfm", 1);
  auto bad_id = store.StartRun(bad);
  if (!bad_id.ok()) Die("StartRun", bad_id.status());
  LogCurves(store, *bad_id, 0.2, 120, 9);
  CHECK_OK(store.FinishRun(*bad_id, RunStatus::kFailed, "loss is NaN at step 120"));

  // A run on another host with a fresh heartbeat stays 'running' across reconciliation.
  RunInfo live;
  live.name = "deepfm-live";
  live.tags = {"baseline", "live"};
  live.host = "trainer-7";
  live.pid = 4242;
  live.config_yaml = Config(0.003, 32, "deepfm", 2);
  auto live_id = store.StartRun(live);
  if (!live_id.ok()) Die("StartRun", live_id.status());
  LogCurves(store, *live_id, 0.95, 200, 11);
  fs::path log = ws / "logs" / "deepfm-live.log";
  {
    std::ofstream out(log);
    for (int step = 0; step < 200; step += 20) {
      out << "[trainer] epoch 0 step " << step << " loss=" << 0.69 - step * 0.0005
          << " samples/s=901234\n";
    }
  }
  CHECK_OK(store.AddArtifact(*live_id, "log", log.string()));
  CHECK_OK(store.AddDataFile(*live_id, {"data/criteo_day1.tsv", 11'200'000'000, "xxh64:1be0c93a77d1"}));

  std::printf(
      "{\"driver\":%lld,\"trials\":[%lld,%lld,%lld,%lld,%lld],\"baseline\":%lld,\"failed\":%lld,"
      "\"live\":%lld,\"total\":%d}\n",
      (long long)*driver_id, (long long)trials[0], (long long)trials[1], (long long)trials[2],
      (long long)trials[3], (long long)trials[4], (long long)*base_id, (long long)*bad_id,
      (long long)*live_id, 9);
  return 0;
}

int Scale(TrackingStore& store, const std::string& path, int runs, int64_t points) {
  RunInfo big;
  big.name = "million-points";
  big.tags = {"big"};
  big.config_yaml = Config(0.001, 16, "deepfm", 3);
  auto big_id = store.StartRun(big);
  if (!big_id.ok()) Die("StartRun", big_id.status());
  CHECK_OK(store.FinishRun(*big_id, RunStatus::kFinished));

  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::fprintf(stderr, "ui_seed_store: cannot open %s\n", path.c_str());
    return 1;
  }
  sqlite3_busy_timeout(db, 10000);
  auto exec = [&](const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::fprintf(stderr, "ui_seed_store: %s\n", err ? err : "sqlite error");
      std::exit(1);
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  exec("BEGIN IMMEDIATE");
  const double now = static_cast<double>(std::time(nullptr));
  std::string sql;
  for (int i = 0; i < runs; ++i) {
    std::string id = std::to_string(*big_id + 1 + i);
    const char* status = i % 17 == 0 ? "failed" : "finished";
    sql += "INSERT INTO runs(id, name, status, start_time, end_time, heartbeat_time, host, pid, "
           "group_id) VALUES (" + id + ", 'bulk-" + std::to_string(i) + "', '" + status + "', " +
           std::to_string(now - 3600 - i) + ", " + std::to_string(now - 3000 - i) + ", " +
           std::to_string(now - 3000 - i) + ", 'bulk-host', 1, 'bulk-" +
           std::to_string(i % 50) + "');";
    sql += "INSERT INTO run_params VALUES (" + id + ", 'optimizer.lr', '" +
           std::to_string(0.0001 * (1 + i % 100)) + "');";
    sql += "INSERT INTO run_params VALUES (" + id + ", 'model.embedding_dim', '" +
           std::to_string(8 << (i % 3)) + "');";
    sql += "INSERT INTO run_tags VALUES (" + id + ", '" + (i % 100 == 0 ? "best" : "bulk") + "');";
    sql += "INSERT INTO final_metrics VALUES (" + id + ", 'val/auc', " +
           std::to_string(0.7 + 0.1 * ((i * 7919) % 10000) / 10000.0) + ");";
    if (sql.size() > (1 << 20)) {
      exec(sql);
      sql.clear();
    }
  }
  if (!sql.empty()) exec(sql);
  sqlite3_stmt* ins = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO metrics(run_id, key, step, value, wall_time) VALUES (?, ?, ?, ?, ?)",
                     -1, &ins, nullptr);
  rectrain::Rng rng(5);
  for (int64_t step = 0; step < points; ++step) {
    double loss = 0.44 + 0.25 * std::exp(-3.0 * step / static_cast<double>(points)) +
                  0.02 * (rng.Uniform() - 0.5) + (step == points / 2 ? 0.5 : 0.0);  // one spike
    sqlite3_bind_int64(ins, 1, *big_id);
    sqlite3_bind_text(ins, 2, "train/loss", -1, SQLITE_STATIC);
    sqlite3_bind_int64(ins, 3, step);
    sqlite3_bind_double(ins, 4, loss);
    sqlite3_bind_double(ins, 5, now - 3600 + step * 0.001);
    if (sqlite3_step(ins) != SQLITE_DONE) {
      std::fprintf(stderr, "ui_seed_store: insert failed: %s\n", sqlite3_errmsg(db));
      return 1;
    }
    sqlite3_reset(ins);
  }
  sqlite3_finalize(ins);
  exec("COMMIT");
  sqlite3_close(db);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("{\"big\":%lld,\"runs\":%d,\"points\":%lld,\"total\":%d,\"seed_s\":%.2f}\n",
              (long long)*big_id, runs, (long long)points, runs + 1, s);
  return 0;
}

int Append(TrackingStore& store, RunId run, int steps, int interval_ms) {
  auto d = store.GetRun(run);
  if (!d.ok()) Die("GetRun", d.status());
  int64_t next = 0;
  for (const auto& k : d->metric_keys) next = std::max(next, k.last_step + 1);
  for (int i = 0; i < steps; ++i) {
    LogCurves(store, run, 0.95, 1, 1000 + i, next + i);
    std::this_thread::sleep_for(std::chrono::milliseconds(interval_ms));
  }
  std::printf("{\"appended\":%d}\n", steps);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string store_path, mode;
  std::vector<std::string> rest;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--store" && i + 1 < argc) {
      store_path = argv[++i];
    } else if (mode.empty() && !a.starts_with("--")) {
      mode = a;
    } else {
      rest.push_back(a);
    }
  }
  auto flag = [&](const std::string& name, int64_t dflt) -> int64_t {
    for (size_t i = 0; i + 1 < rest.size(); ++i) {
      if (rest[i] == name) return std::atoll(rest[i + 1].c_str());
    }
    return dflt;
  };
  if (store_path.empty() || mode.empty()) {
    std::fprintf(stderr, "usage: ui_seed_store --store PATH demo|scale|append ...\n");
    return 2;
  }
  TrackingStore::Options o;
  o.reconcile_on_open = false;
  auto store = TrackingStore::Open(store_path, o);
  if (!store.ok()) Die("Open " + store_path, store.status());
  if (mode == "demo") return Demo(**store, fs::absolute(store_path).parent_path());
  if (mode == "scale") {
    return Scale(**store, store_path, static_cast<int>(flag("--runs", 10000)),
                 flag("--points", 1000000));
  }
  if (mode == "append" && !rest.empty()) {
    return Append(**store, std::atoll(rest[0].c_str()), static_cast<int>(flag("--steps", 50)),
                  static_cast<int>(flag("--interval-ms", 200)));
  }
  std::fprintf(stderr, "ui_seed_store: unknown mode '%s'\n", mode.c_str());
  return 2;
}

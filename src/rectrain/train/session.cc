#include "rectrain/train/session.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "rectrain/config/train_config.h"
#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/track/workspace.h"
#include "rectrain/train/data_gate.h"
#include "rectrain/train/run_recorder.h"

namespace rectrain::train {
namespace fs = std::filesystem;
namespace {

std::string DefaultRunDir(const std::string& config_path) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + fs::path(config_path).stem().string() + "-" + stamp;
}

// The tracking store of the run (tracking.*), created with its directory if absent.
Result<std::unique_ptr<track::TrackingStore>> OpenStore(const std::string& path) {
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir, ec);
  auto store = track::TrackingStore::Open(path);
  if (!store.ok()) {
    return store.status().WithContext("cannot open the tracking store " + path +
                                      " (tracking.store; disable with --set tracking.enabled=false)");
  }
  return store;
}

// The /metrics endpoint (monitoring.*). A non-loopback host needs a token
// (SessionOptions::metrics_token, $RECTRAIN_METRICS_TOKEN).
Result<std::unique_ptr<http::Server>> StartMetricsServer(const config::MonitoringSettings& m, const std::string& token,
                                                         prometheus::MetricsRegistry* registry) {
  http::ServerOptions so;
  so.host = m.host;
  so.port = m.port;
  so.num_threads = 1;
  so.token = token;
  auto server = http::Server::Start(so, registry);
  if (!server.ok()) {
    return server.status().WithContext("cannot serve /metrics on " + m.host + ":" + std::to_string(m.port) +
                                       " (monitoring.host/port; disable with --set monitoring.enabled=false)");
  }
  return server;
}

// RUN_DIR/tracking.json names the run's tracking record ({"store": PATH, "run": ID}), so that
// --resume continues the same record (one run directory = one tracking run, e.g. a tune trial
// promoted from rung to rung) instead of starting another.
constexpr char kTrackingFile[] = "tracking.json";

std::optional<track::RunId> RecordedRun(const std::string& run_dir, const std::string& store_path) {
  std::ifstream in(fs::path(run_dir) / kTrackingFile);
  if (!in) return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("store") || !j.contains("run") || !j["run"].is_number_integer()) return std::nullopt;
  std::error_code ec;
  if (!j["store"].is_string() || fs::weakly_canonical(j["store"].get<std::string>(), ec) != fs::weakly_canonical(store_path, ec)) {
    return std::nullopt;  // another store now: record the resumed run there afresh
  }
  return j["run"].get<track::RunId>();
}

void RememberRun(const std::string& run_dir, const std::string& store_path, track::RunId run) {
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  const nlohmann::json j = {{"store", fs::absolute(store_path, ec).string()}, {"run", run}};
  std::ofstream(fs::path(run_dir) / kTrackingFile) << j.dump() << "\n";
}

// Rank 0's part of the setup: the tracking store, /metrics, the recorder and the data check.
// Declared in this order so that the recorder ends before the server stops and the server
// before the registry goes.
struct Recording {
  prometheus::MetricsRegistry registry;
  std::unique_ptr<track::TrackingStore> store;
  std::unique_ptr<http::Server> metrics_server;
  std::unique_ptr<RunRecorder> recorder;
};

Status StartRecording(const SessionOptions& o, const config::LoadedConfig& loaded, const std::string& config_path,
                      const std::string& run_dir, Recording* rec) {
  const config::TrainConfig& c = loaded.config;
  auto note = [&](const std::string& line) {
    if (o.echo && o.note) o.note(line);
  };
  const std::string store_path = track::ResolveStorePath(c.tracking.store, o.tracking_store_env, c.tracking.workspace);
  if (c.tracking.enabled) {
    RECTRAIN_ASSIGN_OR_RETURN(rec->store, OpenStore(store_path));
  }
  if (c.monitoring.enabled) {
    RECTRAIN_ASSIGN_OR_RETURN(rec->metrics_server, StartMetricsServer(c.monitoring, o.metrics_token, &rec->registry));
  }
  if (rec->store || rec->metrics_server) {
    track::RunInfo info;
    info.name = c.tracking.run_name;
    if (info.name.empty()) info.name = fs::path(run_dir).lexically_normal().filename().string();
    info.tags = c.tracking.tags;
    info.tags.insert(info.tags.end(), o.tags.begin(), o.tags.end());
    info.group_id = c.tracking.group;
    if (c.tracking.parent_id > 0) info.parent_id = c.tracking.parent_id;
    std::error_code ec;
    const fs::path config_dir = fs::absolute(config_path, ec).parent_path();
    info.git_commit = GitCommitOf(config_dir.string());
    info.config_yaml = loaded.resolved_yaml;
    RunRecorder::Options ro;
    ro.store = rec->store.get();
    ro.registry = rec->metrics_server ? &rec->registry : nullptr;
    ro.run_dir = run_dir;
    if (rec->store && o.resume) ro.reopen = RecordedRun(run_dir, store_path);
    std::vector<std::string> data = c.train_files;
    data.insert(data.end(), c.valid_files.begin(), c.valid_files.end());
    auto started = RunRecorder::Start(ro, info, data);
    if (!started.ok() && ro.reopen && started.status().code() == StatusCode::kNotFound) {
      ro.reopen.reset();  // the record was deleted: start a new one
      started = RunRecorder::Start(ro, info, data);
    }
    if (!started.ok()) return started.status().WithContext("cannot record the run in the tracking store");
    rec->recorder = std::move(started).value();
    if (rec->recorder->run_id()) {
      if (!ro.reopen) RememberRun(run_dir, store_path, *rec->recorder->run_id());
      note("tracking: run " + std::to_string(*rec->recorder->run_id()) + (ro.reopen ? " (continued) in " : " in ") +
           store_path);
    }
    if (rec->metrics_server) note("metrics: " + rec->metrics_server->url() + "/metrics");
  }
  // The data check before the first step (docs/data.md "Data quality"): every violation of
  // `checks:` in data.train and data.valid stops here, in one report (exit 6). Not on --resume:
  // the run's data was checked when it started.
  // An online run's data is the stream; its checks are the bad-message limits (data.stream.*).
  if (c.checks.before_train && !o.skip_data_check && !o.resume && !c.stream) {
    auto gate = RunDataGate(c, run_dir, std::max(c.threads, c.read.num_threads));
    Status failed = gate.ok() ? DataGateError(*gate) : gate.status();
    if (gate.ok() && rec->recorder) rec->recorder->RecordDataCheck(*gate);
    if (!failed.ok()) return failed;
    note(DataGateSummary(*gate));
  }
  return OkStatus();
}

// Two observers as one: every hook goes to each in turn (the recorder first); reports come at
// the shorter of their intervals.
class BothObservers final : public TrainObserver {
 public:
  BothObservers(TrainObserver* first, TrainObserver* second) : a_(first), b_(second) {}
  double ProgressIntervalSeconds() const override {
    const double x = a_->ProgressIntervalSeconds(), y = b_->ProgressIntervalSeconds();
    return x <= 0 ? y : y <= 0 ? x : std::min(x, y);
  }
  void OnStart(int64_t step) override {
    a_->OnStart(step);
    b_->OnStart(step);
  }
  void OnProgress(const ProgressInfo& p) override {
    a_->OnProgress(p);
    b_->OnProgress(p);
  }
  void OnEval(int64_t step, const EvalMetrics& m) override {
    a_->OnEval(step, m);
    b_->OnEval(step, m);
  }
  void OnCheckpoint(int64_t step, const std::string& dir) override {
    a_->OnCheckpoint(step, dir);
    b_->OnCheckpoint(step, dir);
  }
  void OnFinalPublish(const PublishFigures& f) override {
    a_->OnFinalPublish(f);
    b_->OnFinalPublish(f);
  }

 private:
  TrainObserver* a_;
  TrainObserver* b_;
};

// monitoring.linger_on_failure_s: a failed run keeps /metrics up a little longer, so that a
// Prometheus scrape sees its last values (the NaN loss of a diverged run) before the process
// is gone. SIGINT/SIGTERM (o.stop_signal) end the wait.
void LingerOnFailure(const SessionOptions& o, const config::MonitoringSettings& m, bool lead) {
  if (m.linger_on_failure_s <= 0) return;
  if (lead && o.echo && o.note) {
    char line[160];
    std::snprintf(line, sizeof(line),
                  "metrics: the run failed; serving /metrics %.3g s more (monitoring.linger_on_failure_s)",
                  m.linger_on_failure_s);
    o.note(line);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(m.linger_on_failure_s);
  while (std::chrono::steady_clock::now() < until) {
    if (o.stop_signal != nullptr && o.stop_signal->load() != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// A SIGINT/SIGTERM before the first step stops the session at once: nothing has been trained,
// so there is nothing to checkpoint (a stop during training checkpoints; trainer.h). The ranks
// of a job agree, so all stop at the same point. Returns the signal, or 0 to go on.
Result<int> StopBeforeTraining(const SessionOptions& o, dist::Communicator& comm) {
  std::vector<int64_t> signal = {o.stop_signal != nullptr ? o.stop_signal->load() : 0};
  if (comm.distributed()) {
    RECTRAIN_RETURN_IF_ERROR(comm.AllReduce(std::span<int64_t>(signal), dist::ReduceOp::kMax));
  }
  return static_cast<int>(signal[0]);
}

TrainSummary StoppedSummary(int signal) {
  TrainSummary s;
  s.status = RunOutcome::kInterrupted;
  s.interrupted_by = signal;
  return s;
}

}  // namespace

Result<SessionResult> RunTrainingSession(const SessionOptions& o, std::string* run_dir_out) {
  std::unique_ptr<dist::Communicator> single;
  dist::Communicator* comm = o.comm;
  if (comm == nullptr) {
    single = dist::Communicator::Single();
    comm = single.get();
  }
  const bool lead = comm->rank() == 0;
  std::string config_path = o.config_path;
  std::string run_dir = o.run_dir;
  // Where the run lives: rank 0 decides (the default name has its clock in it).
  Status where;
  if (o.resume) {
    if (!run_dir.empty() && config_path.empty()) config_path = run_dir + "/config.yaml";
    if (run_dir.empty()) where = InvalidArgumentError("--resume needs the run directory");
  } else {
    if (config_path.empty()) {
      where = InvalidArgumentError("rectrain train needs CONFIG.yaml (or --resume RUN_DIR)");
    } else if (run_dir.empty()) {
      run_dir = DefaultRunDir(config_path);
    }
    std::error_code ec;
    if (where.ok() && lead &&
        (fs::exists(fs::path(run_dir) / "summary.json", ec) || fs::exists(fs::path(run_dir) / "checkpoints", ec))) {
      where = AlreadyExistsError("run directory " + run_dir + " already holds a run; continue it with --resume " +
                                 run_dir + " or choose another --run-dir");
    }
  }
  for (const auto& tag : o.tags) {
    if (tag.empty() && where.ok()) where = InvalidArgumentError("--tag must not be empty");
  }
  RECTRAIN_RETURN_IF_ERROR(dist::AgreeOk(*comm, where));
  RECTRAIN_RETURN_IF_ERROR(comm->BroadcastString(&run_dir, 0));

  auto loaded = config::LoadTrainConfig(config_path, o.sets);
  RECTRAIN_RETURN_IF_ERROR(dist::AgreeOk(*comm, loaded.status()));
  RECTRAIN_ASSIGN_OR_RETURN(int stopped, StopBeforeTraining(o, *comm));
  if (stopped != 0) return SessionResult{run_dir, StoppedSummary(stopped)};

  Recording rec;
  Status recording = lead ? StartRecording(o, *loaded, config_path, run_dir, &rec) : OkStatus();
  if (!recording.ok() && rec.recorder) rec.recorder->Fail(recording);
  RECTRAIN_RETURN_IF_ERROR(dist::AgreeOk(*comm, recording));
  RECTRAIN_ASSIGN_OR_RETURN(stopped, StopBeforeTraining(o, *comm));
  if (stopped != 0) {
    if (rec.recorder) rec.recorder->Finish(StoppedSummary(stopped));
    return SessionResult{run_dir, StoppedSummary(stopped)};
  }

  TrainerOptions to;
  to.run_dir = run_dir;
  to.resume = o.resume;
  to.stop_signal = o.stop_signal;
  to.progress = o.progress;
  to.echo = o.echo;
  BothObservers both(rec.recorder.get(), o.observer);
  to.observer = rec.recorder && o.observer ? &both : rec.recorder ? rec.recorder.get() : o.observer;
  to.size_compute_pool = o.size_compute_pool;
  to.comm = comm->distributed() ? comm : nullptr;
  to.until = o.until;
  if (run_dir_out != nullptr) *run_dir_out = run_dir;
  auto summary = Train(*loaded, to);
  if (rec.recorder) {
    if (summary.ok()) {
      rec.recorder->Finish(*summary);
    } else {
      rec.recorder->Fail(summary.status());
    }
  }
  // Every rank waits (rank 0 serves), so that a launcher does not end rank 0 early when the
  // others exit with the error.
  if (!summary.ok() && loaded->config.monitoring.enabled) LingerOnFailure(o, loaded->config.monitoring, lead);
  if (!summary.ok()) return summary.status();
  return SessionResult{run_dir, *summary};
}

}  // namespace rectrain::train

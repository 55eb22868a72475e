// rectrain/train/run_recorder.h: records a training run in the tracking store and exports its
// figures to a Prometheus registry, as a TrainObserver (observer.h) that `rectrain train`
// passes to Train(). Either sink is optional.
//
// Tracking (docs/tracking.md): Start() creates the run (status running) with its RunInfo
// (name, tags, group, parent, git commit, resolved config), its data files (size + cheap
// fingerprint, FingerprintFile) and the log artifact; every log-line OnProgress appends the
// metrics train/{loss,auc,samples_per_s,lr,epoch,rows_read,rows_rejected,data_wait_s} and
// system/{rss_bytes,cpu_percent}; OnEval appends val/{auc,logloss,calibration,ne[,gauc]};
// OnCheckpoint adds a "checkpoint" artifact; a background thread refreshes the heartbeat every
// Options::heartbeat_s. Finish() sets the final metrics (FinalMetrics), the "model" and
// "summary" artifacts, and the terminal status: finished (completed, early stopped), stopped
// (interrupted by a signal) or failed. Fail() marks the run failed with the error. A recorder
// destroyed without either marks the run failed ("the trainer ended without a result").
// A store write that fails does not stop training: the first failure is reported through
// Options::warn and the rest are counted (write_failures()).
//
// Prometheus (names in docs/tracking.md, label run = the tracking run id, else the run
// directory's name): rectrain_train_*, rectrain_eval_*, rectrain_data_*, rectrain_embedding_*
// {table} (rectrain_embedding_budget_bytes also {on_budget}), rectrain_run_info, and the
// process_* metrics (RegisterProcessMetrics).
//
// Thread safety: Start/hooks/Finish/Fail on the training thread; the heartbeat thread only calls
// TrackingStore::Heartbeat (thread-safe). The store and registry must outlive the recorder.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/train/data_gate.h"
#include "rectrain/train/observer.h"
#include "rectrain/train/trainer.h"

namespace rectrain::train {

class RunRecorder : public TrainObserver {
 public:
  struct Options {
    track::TrackingStore* store = nullptr;      // null: no tracking
    prometheus::MetricsRegistry* registry = nullptr;  // null: no Prometheus export
    std::string run_dir;                        // artifacts: train.log, model/, summary.json
    double heartbeat_s = 30.0;                  // <= 0: no heartbeat thread
    double progress_interval_s = 1.0;           // Prometheus refresh while training
    std::function<void(const std::string&)> warn;  // null: stderr
    // Continue this run (a resumed run directory): ReopenRun instead of StartRun, so one run
    // directory stays one tracking run; its RunInfo and data files are kept from the start.
    std::optional<track::RunId> reopen;
  };

  // Starts recording. With a store and Options::reopen: ReopenRun(*reopen) (NotFound when the
  // run was deleted). With a store otherwise: StartRun(info) (errors as TrackingStore::StartRun, e.g.
  // InvalidArgument for a parent id that does not exist), then AddDataFile for every file of
  // `data_patterns` (expanded like the reader; files that cannot be read are skipped: the
  // trainer reports them) and AddArtifact("log", run_dir/train.log). Paths are made absolute.
  // With a registry: registers the series (InvalidArgument only on a name clash).
  static Result<std::unique_ptr<RunRecorder>> Start(Options options, const track::RunInfo& info,
                                                    const std::vector<std::string>& data_patterns);
  ~RunRecorder() override;
  RunRecorder(const RunRecorder&) = delete;
  RunRecorder& operator=(const RunRecorder&) = delete;

  // The tracking run id (nullopt without a store).
  std::optional<track::RunId> run_id() const { return run_; }
  // The value of the Prometheus `run` label.
  const std::string& run_label() const { return run_label_; }
  int64_t write_failures() const { return write_failures_; }

  // TrainObserver.
  void OnStart(int64_t step) override;
  double ProgressIntervalSeconds() const override;
  void OnProgress(const ProgressInfo& progress) override;
  void OnEval(int64_t step, const EvalMetrics& metrics) override;
  void OnCheckpoint(int64_t step, const std::string& dir) override;
  void OnFinalPublish(const PublishFigures& publish) override;

  // Records the data check before training (data_gate.h): the "data_profile" artifact
  // (RUN_DIR/data_profile.json) and, at step 0, the metrics data/train_rows,
  // data/train_label_rate, data/valid_rows, data/valid_label_rate and data/violations.
  void RecordDataCheck(const DataGateResult& gate);

  // Ends the run from Train()'s summary (see the top comment). Idempotent with Fail().
  void Finish(const TrainSummary& summary);
  // Marks the run failed with `error` (its message is stored). Idempotent with Finish().
  void Fail(const Status& error);

 private:
  explicit RunRecorder(Options options);
  Status RegisterSeries(const track::RunInfo& info);
  void Write(const Status& s, const char* what);
  void StopHeartbeat();
  void End(track::RunStatus status, const std::string& message);

  Options options_;
  std::optional<track::RunId> run_;
  std::string run_label_;
  bool ended_ = false;
  int64_t write_failures_ = 0;
  double last_loss_ = kNaN;
  double last_cpu_seconds_ = -1;
  double last_cpu_wall_ = 0;

  struct Series {
    prometheus::Counter* samples = nullptr;
    prometheus::Counter* steps = nullptr;
    prometheus::Gauge* step = nullptr;
    prometheus::Gauge* epoch = nullptr;
    prometheus::Gauge* loss = nullptr;
    prometheus::Gauge* train_auc = nullptr;
    prometheus::Gauge* samples_per_second = nullptr;
    prometheus::Gauge* learning_rate = nullptr;
    prometheus::Gauge* eval_auc = nullptr;
    prometheus::Gauge* eval_logloss = nullptr;
    prometheus::Counter* rows_read = nullptr;
    prometheus::Counter* rows_rejected = nullptr;
    prometheus::Counter* data_wait = nullptr;
    prometheus::Gauge* queue_depth = nullptr;
  } series_;
  struct TableSeries {
    prometheus::Gauge* rows = nullptr;
    prometheus::Gauge* bytes = nullptr;
    prometheus::Gauge* budget = nullptr;
    prometheus::Counter* admissions = nullptr;
    prometheus::Counter* evictions = nullptr;
    prometheus::Counter* expirations = nullptr;
    prometheus::Counter* lookups = nullptr;
    prometheus::Counter* oov_lookups = nullptr;
    prometheus::Gauge* oov_ratio = nullptr;
  };
  std::map<std::string, TableSeries> tables_;
  void ExportTables(const std::vector<TableSummary>& tables);  // registered on first sight of a table
  void LogRankMetrics(const ProgressInfo& p);                   // a job's rank<r>/... metrics
  // A job's per-rank series, labelled rank="r" (and phase="..." for the step breakdown).
  struct RankSeries {
    prometheus::Counter* rows = nullptr;
    prometheus::Gauge* ids_owned = nullptr;
    prometheus::Counter* bytes_sent = nullptr;
    prometheus::Counter* bytes_received = nullptr;
    std::map<std::string, prometheus::Counter*> phases;
  };
  std::map<int, RankSeries> ranks_;
  void ExportRanks(const std::vector<RankFigures>& ranks);
  // An online run's series (rectrain_online_*, rectrain_stream_*), registered on first use.
  struct OnlineSeries {
    prometheus::Gauge* auc = nullptr;
    prometheus::Gauge* logloss = nullptr;
    prometheus::Gauge* lag_messages = nullptr;
    prometheus::Gauge* lag_seconds = nullptr;
    prometheus::Gauge* connected = nullptr;
    prometheus::Counter* messages = nullptr;
    prometheus::Counter* bad = nullptr;
    prometheus::Counter* dead_lettered = nullptr;
    prometheus::Counter* dead_letter_failures = nullptr;
    prometheus::Counter* errors = nullptr;
    prometheus::Counter* commits = nullptr;
    prometheus::Counter* commit_failures = nullptr;
  } online_;
  void ExportOnline(const OnlineFigures& online);
  // train.publish's series (rectrain_publish_*), registered on first use.
  struct PublishSeries {
    prometheus::Counter* publishes = nullptr;
    prometheus::Counter* failures = nullptr;
    prometheus::Counter* skipped = nullptr;
    prometheus::Gauge* duration = nullptr;
    prometheus::Gauge* version = nullptr;
    prometheus::Gauge* last_time = nullptr;
    prometheus::Gauge* event_time = nullptr;
    prometheus::Gauge* interval = nullptr;
  } publish_;
  void ExportPublish(const PublishFigures& publish);
  // The series of the registry, or null when the name clashes (that series is then not exported).
  prometheus::Gauge* GaugeOrNull(const char* name, const char* help, const prometheus::Labels& labels);
  prometheus::Counter* CounterOrNull(const char* name, const char* help, const prometheus::Labels& labels);

  std::thread heartbeat_;
  std::mutex hb_mu_;
  std::condition_variable hb_cv_;
  bool hb_stop_ = false;  // Guarded by hb_mu_.
};

// Size, modification time and a fingerprint of `path`: "v1:" + 16 hex digits hashing the
// size, mtime (ns) and the first and last 64 KiB (cheap for any file size; it changes when the
// file is rewritten, not a full content hash). Errors: NotFound / PermissionDenied.
Result<track::DataFile> FingerprintFile(const std::string& path);

// `git -C dir rev-parse HEAD` (stdin/stderr to /dev/null, no shell); "" when dir is not in a
// git work tree, git is missing, or anything else fails.
std::string GitCommitOf(const std::string& dir);

// The final metrics of a summary: train/{samples_per_s,steps,epochs,rows_read,rows_rejected,
// seconds}, system/peak_rss_bytes, and when present val/{auc,logloss,calibration,ne,gauc},
// oracle/{auc,logloss}. Non-finite values are left out.
std::vector<track::MetricValue> FinalMetrics(const TrainSummary& summary);

// Current resident set size of this process (from /proc/self/statm), 0 if unreadable.
int64_t CurrentRssBytes();

}  // namespace rectrain::train

// rectrain/train/internal/publishing.h (internal to train/): train.publish, the trainer publishing
// its in-memory model to serving (docs/online.md "Publishing to serving"). The loop (trainer.cc)
// decides when (every train.publish.every_s, agreed by the job, and once at the end); this
// snapshots the model between two steps and writes the snapshot on a thread of its own, so
// training never waits for the writing (serve/snapshot.h, serve::Publisher). The serving model's
// source is built from the model as `rectrain export` builds it from a run (the same description,
// the same parameters and rows, so a publish of a state and an export of a checkpoint of that
// state score alike).
//
// The snapshot is cheap: the rows changed since the previous snapshot (the tables'
// ChangeLog::kPublish record, a cursor independent of the incremental checkpoints'), the ids
// removed since then, the OOV rows and the dense parameters. Every row is copied only when a full
// export is due, for the first publish of the session and after a failed one (whose changes the
// record no longer holds).
//
// At most one publish is in flight. When the next is due while one is still being written, it is
// skipped, not queued: the record keeps collecting, so the next snapshot, taken as soon as the
// writer is idle, covers both intervals (a merge by construction), and a slow target makes
// versions rarer instead of training slower or memory grow.
//
// A failed publish (a full disk, a directory made unwritable or removed) never stops training:
// it is logged (the first of a series, and the recovery), counted (PublishFigures::failures,
// rectrain_publish_failures_total) and the next interval tries again; serve::Publisher keeps its
// view of the last version written, so the retry is a delta of what is actually served (or a full
// export when that version is gone).
//
// In a job of several ranks (dist.mode sync) every rank has a RunPublisher and calls Start at the
// same steps (the trainer agrees on them): rank 0, the only one with a serve::Publisher and a
// writer, decides whether a publish starts and whether its snapshot holds every row; every rank
// snapshots the rows it owns and rank 0 gathers them (publish_gather.h) before handing the job's
// snapshot to its writer.
//
// Thread safety: the public functions are called by the training thread only, between steps
// (they read the model); the writer thread owns the serve::Publisher while a publish is in
// flight and touches nothing else of the run.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/dist/communicator.h"
#include "rectrain/serve/publish.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/internal/run_setup.h"
#include "rectrain/train/observer.h"

namespace rectrain::train::internal {

class RunPublisher {
 public:
  // The publisher of train.publish (which must be set) for the model of `bundle`; the serving
  // description is read from the config (its data layout as ReadRunLayout reads it). Starts the
  // tables' publish record, and on rank 0 of `comm` (which must outlive it) the publisher and the
  // writer thread.
  static Result<std::unique_ptr<RunPublisher>> Open(const config::LoadedConfig& lc, const ModelBundle& bundle,
                                                    const std::string& run_dir, LogFn log, dist::Communicator& comm);
  // Waits for a publish in flight, then ends the writer thread.
  ~RunPublisher();

  // Snapshots the model of `bundle` as it is after `step`, trained on the stream up to `events`
  // (empty for a run from files), and hands it to the writer; false (nothing done) while the
  // previous publish is in flight. Failures are counted and logged, never returned (see above);
  // a job's collectives that fail are (the job ends). Every rank of a job calls it together.
  Result<bool> Start(const ModelBundle& bundle, int64_t step, const serve::TrainedEvents& events);
  // The end of the run: waits for a publish in flight, publishes the model and waits for that.
  Status PublishAndWait(const ModelBundle& bundle, int64_t step, const serve::TrainedEvents& events);
  // Takes the outcome of a finished publish into figures() and the log (cheap when none).
  void Poll();
  const PublishFigures& figures() const { return figures_; }

 private:
  struct Outcome {
    Result<serve::PublishReport> report;
    double finished_unix_seconds = 0;
    int64_t newest_event_ms = 0;
  };
  RunPublisher() = default;
  void WriterLoop();
  void Record(Outcome outcome);
  void Failed(const Status& s);
  void Wait();
  // On rank 0: whether a publish starts now and whether its snapshot must hold every row; the
  // job's other ranks receive rank 0's answer.
  Status Plan(bool* start, bool* complete);
  bool writer() const { return comm_->rank() == 0; }

  dist::Communicator* comm_ = nullptr;
  std::unique_ptr<serve::Publisher> publisher_;  // rank 0's; the writer's while busy_
  serve::Manifest description_;
  std::string config_yaml_;
  std::string dir_;
  double every_s_ = 0;
  LogFn log_;
  PublishFigures figures_;
  int64_t failures_in_a_row_ = 0;
  bool need_complete_ = true;  // the record does not hold every change since the served view
  std::string test_hold_;      // $RECTRAIN_TEST_PUBLISH_HOLD (publishing.cc)

  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<serve::ModelSnapshot> pending_;  // (mu_) handed to the writer
  std::optional<Outcome> done_;                  // (mu_) the writer's result, for Poll
  bool busy_ = false;                            // (mu_) a snapshot handed over, its outcome not yet polled
  bool stop_ = false;                            // (mu_)
  std::thread writer_;
};

}  // namespace rectrain::train::internal

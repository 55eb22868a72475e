// rectrain/train/internal/publishing.cc: see publishing.h.
#include "rectrain/train/internal/publishing.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <utility>
#include <vector>

#include "rectrain/train/internal/publish_gather.h"
#include "rectrain/train/internal/run_log.h"
#include "rectrain/train/trained_model.h"

namespace rectrain::train::internal {
namespace {

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// $RECTRAIN_TEST_PUBLISH_HOLD=PATH: every publish waits, on the publish thread, while PATH
// exists, as a write to a hung target would (a stalled mount or object store). For the test that
// training goes on meanwhile (tests/online_publish_test.cc) only.
void HoldForTest(const std::string& path) {
  std::error_code ec;
  while (!path.empty() && std::filesystem::exists(path, ec)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

Result<std::unique_ptr<RunPublisher>> RunPublisher::Open(const config::LoadedConfig& lc, const ModelBundle& bundle,
                                                         const std::string& run_dir, LogFn log,
                                                         dist::Communicator& comm) {
  const config::TrainConfig& c = lc.config;
  const config::PublishSettings& settings = *c.train.publish;
  std::unique_ptr<RunPublisher> p(new RunPublisher());
  p->comm_ = &comm;
  RECTRAIN_ASSIGN_OR_RETURN(RunLayout layout, ReadRunLayout(c));
  serve::Manifest& d = p->description_;
  d.model_type = c.model.type;
  d.source_run = run_dir;
  d.layout = std::move(layout.layout);
  d.dense_names = std::move(layout.dense_names);
  d.sparse_names = std::move(layout.sparse_names);
  d.task_names = bundle.tasks.names;
  d.feature_columns = bundle.tasks.feature_columns;
  d.negative_downsampling = c.data.negative_downsampling;
  p->config_yaml_ = lc.resolved_yaml;  // what the run directory's config.yaml holds
  p->dir_ = settings.to;
  p->every_s_ = settings.every_s;
  p->log_ = std::move(log);
  p->figures_.enabled = true;
  p->figures_.every_s = settings.every_s;
  for (embedding::EmbeddingTable* t : bundle.tables) t->TrackChanges(embedding::ChangeLog::kPublish, true);
  if (!p->writer()) return p;  // its rows go to rank 0, which writes
  // To an object store: versions are staged in the run directory (the newest full export and
  // the deltas since), so that runs publishing alike never share a staging directory.
  const serve::PublishOptions o{.versions_dir = settings.to,
                                .full_every = static_cast<int>(settings.full_every),
                                .staging_dir = run_dir + "/publish-staging"};
  Result<std::unique_ptr<serve::Publisher>> opened = serve::Publisher::Open(o);
  if (!opened.ok()) return opened.status().WithContext("train.publish.to");
  p->publisher_ = std::move(opened).value();
  if (const char* hold = std::getenv("RECTRAIN_TEST_PUBLISH_HOLD")) p->test_hold_ = hold;
  p->writer_ = std::thread([raw = p.get()] { raw->WriterLoop(); });
  return p;
}

RunPublisher::~RunPublisher() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !pending_; });  // a snapshot handed over is written
    stop_ = true;
  }
  cv_.notify_all();
  if (writer_.joinable()) writer_.join();
}

void RunPublisher::WriterLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || pending_; });
    if (!pending_) return;  // stop_, nothing left to write
    std::optional<Outcome> outcome;
    {
      serve::ModelSnapshot snapshot = std::move(*pending_);  // pending_ stays set: a write in flight
      lock.unlock();
      HoldForTest(test_hold_);
      outcome.emplace(Outcome{.report = publisher_->Publish(snapshot), .finished_unix_seconds = UnixSeconds(),
                              .newest_event_ms = snapshot.description.events.newest_ms});
    }  // the snapshot's memory is freed outside the lock
    lock.lock();
    pending_.reset();
    done_ = std::move(outcome);
    cv_.notify_all();
  }
}

Status RunPublisher::Plan(bool* start, bool* complete) {
  std::vector<int64_t> plan = {0, 0};
  if (writer()) {
    Poll();
    {
      std::lock_guard lock(mu_);
      plan[0] = busy_ ? 0 : 1;  // busy: skipped, see the header (the record keeps collecting)
    }
    // The writer is idle (its last outcome polled), so the publisher is this thread's to ask.
    plan[1] = plan[0] != 0 && (need_complete_ || publisher_->WantsCompleteSnapshot()) ? 1 : 0;
  }
  if (comm_->distributed()) {
    RECTRAIN_RETURN_IF_ERROR(comm_->Broadcast(std::span<int64_t>(plan), 0));
  }
  *start = plan[0] != 0;
  *complete = plan[1] != 0;
  return OkStatus();
}

Result<bool> RunPublisher::Start(const ModelBundle& bundle, int64_t step, const serve::TrainedEvents& events) {
  bool start = false, complete = false;
  RECTRAIN_RETURN_IF_ERROR(Plan(&start, &complete));
  if (!start) {
    if (writer()) ++figures_.skipped;
    return false;
  }
  serve::ModelSource source;
  source.description = description_;
  source.description.trained_steps = step;
  source.description.events = events;
  source.config_yaml = config_yaml_;
  source.params = bundle.params;
  for (const embedding::EmbeddingTable* t : bundle.tables) source.tables.push_back(t);
  Result<serve::ModelSnapshot> snapshot = serve::TakeSnapshot(source, complete);
  // Every rank's part or none: a rank that cannot snapshot fails the publish for the job.
  const Status taken = comm_->distributed() ? dist::AgreeOk(*comm_, snapshot.status()) : snapshot.status();
  if (!comm_->status().ok()) return comm_->status();
  if (!taken.ok()) {
    Failed(taken);
    return true;
  }
  for (embedding::EmbeddingTable* t : bundle.tables) t->MarkSaved(embedding::ChangeLog::kPublish);
  const Status gathered = GatherSnapshot(*comm_, &*snapshot);
  if (!comm_->status().ok()) return comm_->status();
  if (!writer()) return true;  // its rows are on rank 0 now
  // Until this publish succeeds, the record lacks its changes: a failure makes the next complete.
  need_complete_ = true;
  if (!gathered.ok()) {
    Failed(gathered);
    return true;
  }
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(snapshot).value();
    busy_ = true;
  }
  cv_.notify_all();
  return true;
}

Status RunPublisher::PublishAndWait(const ModelBundle& bundle, int64_t step, const serve::TrainedEvents& events) {
  Wait();
  RECTRAIN_ASSIGN_OR_RETURN(const bool started, Start(bundle, step, events));
  if (started) Wait();
  return OkStatus();
}

void RunPublisher::Wait() {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return !pending_; });
  }
  Poll();
}

void RunPublisher::Poll() {
  std::optional<Outcome> outcome;
  {
    std::lock_guard lock(mu_);
    if (!done_) return;
    outcome = std::move(done_);
    done_.reset();
    busy_ = false;
  }
  Record(std::move(*outcome));
}

void RunPublisher::Record(Outcome outcome) {
  if (!outcome.report.ok()) {
    Failed(outcome.report.status());
    return;
  }
  const serve::PublishReport& r = *outcome.report;
  need_complete_ = false;
  if (failures_in_a_row_ > 0) {
    log_("publish: version " + std::to_string(r.version) + " published to " + dir_ + " after " +
         std::to_string(failures_in_a_row_) + " failed publish(es)");
  } else if (r.full) {
    // Deltas come every interval; a line for each would drown train.log (/metrics counts them).
    log_("publish: version " + std::to_string(r.version) + " (a full export, " + std::to_string(r.rows) + " rows, " +
         Fixed(static_cast<double>(r.bytes) / 1e6, 3) + " MB in " + Fixed(r.seconds, 3) + " s) to " + dir_);
  }
  failures_in_a_row_ = 0;
  ++figures_.publishes;
  figures_.version = r.version;
  figures_.last_seconds = r.seconds;
  figures_.last_unix_seconds = outcome.finished_unix_seconds;
  if (outcome.newest_event_ms > 0) figures_.newest_event_ms = outcome.newest_event_ms;
}

void RunPublisher::Failed(const Status& s) {
  ++figures_.failures;
  need_complete_ = true;
  if (failures_in_a_row_++ == 0) {
    log_("warning: cannot publish to " + dir_ + ": " + s.ToString() + " (training goes on; the next publish, in " +
         Shortest(every_s_) + " s, retries)");
  }
}

}  // namespace rectrain::train::internal

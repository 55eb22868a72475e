// rectrain/train/internal/publishing.cc: see publishing.h.
#include "rectrain/train/internal/publishing.h"

#include <chrono>
#include <utility>

#include "rectrain/train/internal/run_log.h"
#include "rectrain/train/trained_model.h"

namespace rectrain::train::internal {

Result<std::unique_ptr<RunPublisher>> RunPublisher::Open(const config::LoadedConfig& lc, const ModelBundle& bundle,
                                                         const std::string& run_dir, LogFn log) {
  const config::TrainConfig& c = lc.config;
  const config::PublishSettings& settings = *c.train.publish;
  std::unique_ptr<RunPublisher> p(new RunPublisher());
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
  // To an object store: versions are staged in the run directory (the newest full export and
  // the deltas since), so that runs publishing alike never share a staging directory.
  const serve::PublishOptions o{.versions_dir = settings.to,
                                .full_every = static_cast<int>(settings.full_every),
                                .staging_dir = run_dir + "/publish-staging"};
  Result<std::unique_ptr<serve::Publisher>> opened = serve::Publisher::Open(o);
  if (!opened.ok()) return opened.status().WithContext("train.publish.to");
  p->publisher_ = std::move(opened).value();
  return p;
}

void RunPublisher::Publish(const ModelBundle& bundle, int64_t step, const serve::TrainedEvents& events) {
  serve::ModelSource source;
  source.description = description_;
  source.description.trained_steps = step;
  source.description.events = events;
  source.config_yaml = config_yaml_;
  source.params = bundle.params;
  for (const embedding::EmbeddingTable* t : bundle.tables) source.tables.push_back(t);
  Result<serve::PublishReport> r = publisher_->Publish(source);
  if (!r.ok()) {
    Failed(r.status());
    return;
  }
  if (failures_in_a_row_ > 0) {
    log_("publish: version " + std::to_string(r->version) + " published to " + dir_ + " after " +
         std::to_string(failures_in_a_row_) + " failed publish(es)");
  } else if (r->full) {
    // Deltas come every interval; a line for each would drown train.log (/metrics counts them).
    log_("publish: version " + std::to_string(r->version) + " (a full export, " + std::to_string(r->rows) + " rows, " +
         Fixed(static_cast<double>(r->bytes) / 1e6, 3) + " MB in " + Fixed(r->seconds, 3) + " s) to " + dir_);
  }
  failures_in_a_row_ = 0;
  ++figures_.publishes;
  figures_.version = r->version;
  figures_.last_seconds = r->seconds;
  figures_.last_unix_seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  if (events.newest_ms > 0) figures_.newest_event_ms = events.newest_ms;
}

void RunPublisher::Failed(const Status& s) {
  ++figures_.failures;
  if (failures_in_a_row_++ == 0) {
    log_("warning: cannot publish to " + dir_ + ": " + s.ToString() + " (training goes on; the next publish, in " +
         Fixed(every_s_, 1) + " s, retries)");
  }
}

}  // namespace rectrain::train::internal

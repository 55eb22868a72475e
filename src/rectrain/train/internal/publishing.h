// rectrain/train/internal/publishing.h (internal to train/): train.publish, the trainer publishing
// its in-memory model to serving (docs/online.md "Publishing to serving"). The loop (trainer.cc)
// decides when (every train.publish.every_s, agreed by the job, and once at the end); this
// builds the serving model's source from the model as `rectrain export` builds it from a run
// (the same description, the same parameters and rows, so a publish of a state and an export of
// a checkpoint of that state score alike) and hands it to serve::Publisher.
//
// A failed publish (a full disk, a directory made unwritable or removed) never stops training:
// it is logged (the first of a series, and the recovery), counted (PublishFigures::failures,
// rectrain_publish_failures_total) and the next interval tries again; serve::Publisher keeps its
// view of the last version written, so the retry is a delta of what is actually served (or a full
// export when that version is gone).
//
// Thread safety: the training thread only.
#pragma once

#include <memory>
#include <string>

#include "rectrain/base/result.h"
#include "rectrain/config/train_config.h"
#include "rectrain/serve/publish.h"
#include "rectrain/train/internal/model_bundle.h"
#include "rectrain/train/internal/run_setup.h"
#include "rectrain/train/observer.h"

namespace rectrain::train::internal {

class RunPublisher {
 public:
  // The publisher of train.publish (which must be set) for the model of `bundle`; the serving
  // description is read from the config (its data layout as ReadRunLayout reads it).
  static Result<std::unique_ptr<RunPublisher>> Open(const config::LoadedConfig& lc, const ModelBundle& bundle,
                                                    const std::string& run_dir, LogFn log);
  // Publishes the model of `bundle` as it is after `step`, trained on the stream up to `events`
  // (empty for a run from files). Failures are counted and logged, never returned (see above).
  void Publish(const ModelBundle& bundle, int64_t step, const serve::TrainedEvents& events);
  const PublishFigures& figures() const { return figures_; }

 private:
  RunPublisher() = default;
  void Failed(const Status& s);

  std::unique_ptr<serve::Publisher> publisher_;
  serve::Manifest description_;
  std::string config_yaml_;
  std::string dir_;
  double every_s_ = 0;
  LogFn log_;
  PublishFigures figures_;
  int64_t failures_in_a_row_ = 0;
};

}  // namespace rectrain::train::internal

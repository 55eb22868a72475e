// rectrain/config/publish_section.cc: train.publish, the trainer publishing its model to serving
// (docs/config.md "train.publish", docs/online.md), bound only when the section is there so that
// a config without it resolves (and hashes) exactly as before.
#include "rectrain/config/train_config.h"

namespace rectrain::config {

void BindPublishSection(ConfigBinder& b, TrainConfig* c) {
  if (!b.Has("train.publish")) return;
  PublishSettings& p = c->train.publish.emplace();
  p.to = b.String("train.publish.to", "");
  p.every_s = b.Double("train.publish.every_s", 5.0, Range{.min = 0, .max = 1e6, .min_open = true});
  p.full_every = b.Int("train.publish.full_every", 10, Range::Closed(0, 1000000));
  if (p.to.empty()) {
    b.AddError("train.publish.to", "is required: the versions directory `rectrain serve` watches (e.g. models/)");
  } else if (p.to.find("://") != std::string::npos && !p.to.starts_with("s3://")) {
    // Versions are written locally and uploaded (serve/publish.h): to a directory, or a prefix of
    // the object store `rectrain serve s3://...` mirrors.
    b.AddError("train.publish.to", "'" + p.to + "' is neither a directory nor an s3:// prefix (e.g. models/ or "
                                   "s3://bucket/models)");
  }
  // The asynchronous job's model lives on its parameter servers, which no step sees whole.
  if (c->dist.mode == DistMode::kAsync) b.AddError("train.publish", "needs dist.mode sync (an async job's rows live on its servers)");
}

}  // namespace rectrain::config

// rectrain/train/internal/remote_checkpoints.h: private to train/. Checkpoints kept in an object
// store (train.checkpoint_dir: s3://...). Each checkpoint is written locally first
// (RUN_DIR/checkpoints/step-N, as without a store), then uploaded file by file with meta.json
// last: a reader lists only step-N prefixes that hold meta.json, so an upload cut short (a killed
// trainer, a store that went away) never looks like a checkpoint, and the previous one stays
// whole. Old checkpoints are pruned in the store only after the new one is complete.
//
// Thread safety: reentrant; the trainer's lead rank calls these between steps.
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/base/status.h"

namespace rectrain::train::internal {

// Uploads the complete local checkpoint `local_dir` (".../step-N") to `remote_root`/step-N
// (meta.json last), then keeps the newest `keep` complete checkpoints there. The error names
// the object, the operation and the store's last answer (io::s3::S3Client).
Status UploadCheckpoint(const std::string& local_dir, const std::string& remote_root, int64_t keep);

// Makes the newest complete checkpoint of `remote_root` available under `local_root` (the
// run's checkpoints directory) when it is newer than every local one: downloaded into
// "<local_root>/step-N.tmp" and renamed to step-N once whole; a delta checkpoint with every
// checkpoint of its chain (checkpoint::ResolveChain: a broken chain in the store is its error). OK (and nothing done) when the
// store has no checkpoint or none newer than the local ones.
Status FetchNewerCheckpoint(const std::string& remote_root, const std::string& local_root);

}  // namespace rectrain::train::internal

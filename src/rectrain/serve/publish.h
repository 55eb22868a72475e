// rectrain/serve/publish.h: publishing a training model into a versions directory that
// `rectrain serve` watches, as full exports and serving deltas (delta.h), and resolving what a
// version of such a directory is (a full export, or a chain of deltas resting on one).
//
// A delta is the exact difference between the model and the newest published version *as it is
// served* (the publisher holds that view, loaded as the server loads it): rows whose encoded
// bytes differ or that are new, ids that lost their row, the OOV row and all dense parameters.
// So a served chain of deltas scores bit for bit as a full export of the same state, whatever
// happened in between (evictions, a trainer resumed from an older checkpoint).
//
// The online trainer snapshots its model (snapshot.h) every publish interval and a thread of its
// own hands the snapshot to Publisher::Publish: a complete snapshot when a full export is due,
// else only the rows changed since the previous one, diffed against the view as above (a row
// that did not change since the previous snapshot equals the view's, which is that snapshot as
// served). `rectrain publish RUN_DIR --to MODELS` does one publish of a run's final model.
//
// The versions directory may be an object store prefix ("s3://bucket/models", which
// `rectrain serve` mirrors, model_mirror.h): each version is then written into a local staging
// directory exactly as into a local versions directory, and uploaded with its manifest.json last,
// so that a reader never sees a partial version; the staging directory also holds the versions
// the publisher's view rests on (fetched from the store when it opens). A version whose upload
// fails is not published: the view stays the last version uploaded, and the next Publish writes
// the same number again (a version without its manifest is ignored by readers and overwritten).
//
// Thread safety: a Publisher is used by one thread at a time (the trainer hands it from the
// training thread to its publish thread and back); the functions are reentrant. One publisher
// per versions directory (two would number their versions alike).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/serve/export.h"
#include "rectrain/serve/predictor.h"
#include "rectrain/serve/snapshot.h"

namespace rectrain::serve {

// The version directories of `dir` (a number for a name, with a manifest.json), newest first.
std::vector<std::pair<int64_t, std::string>> ListVersions(const std::string& dir);

// What loading version `version` of `versions_dir` takes: `dirs`, oldest first, each a delta of
// the one before; the first is a full export, or (from_current) a delta of the model given as
// current (its version number and manifest XXH64), to which the chain then applies.
struct VersionChain {
  std::vector<std::string> dirs;
  bool from_current = false;
  int deltas_since_full = 0;  // deltas between the full export the chain rests on and `version`
};
// FailedPrecondition naming the delta and what its base should have been when a delta's base
// version is missing or has another manifest than the one the delta was made against.
Result<VersionChain> ResolveVersion(const std::string& versions_dir, int64_t version, int64_t current_version = -1,
                                    uint64_t current_xxh64 = 0);
// Loads a resolved chain (`current` when chain.from_current: the model it applies to).
Result<std::unique_ptr<Predictor>> LoadChain(const VersionChain& chain, const PredictorOptions& options,
                                             const Predictor* current = nullptr);

// A model directory (a full export) or a delta in a versions directory (MODELS/8: its chain is
// loaded from MODELS, as `rectrain serve MODELS` would serve version 8).
Result<std::unique_ptr<Predictor>> LoadModelDir(const std::string& dir, const PredictorOptions& options);

struct PublishOptions {
  std::string versions_dir;           // a local directory or an object store prefix (s3://)
  int full_every = 10;                // a full export after this many deltas in a row (0: only the first)
  bool full_first = false;            // the first Publish writes a full export whatever the view
  RowType row_type = RowType::kFp32;  // of full exports; a delta takes its base's
  int64_t min_count = 0;              // of full exports; a delta takes its base's
  PredictorOptions view{.threads = 1};  // how the publisher loads the served view
  // Of an object store versions_dir: the local directory versions are written in before they are
  // uploaded (its numbered and temporary directories are removed when the publisher opens); empty:
  // a new temporary directory, removed with the publisher.
  std::string staging_dir;
};

struct PublishReport {
  int64_t version = 0;
  bool full = false;
  int64_t base_version = 0;             // a delta's
  int64_t changed_rows = 0, removed_ids = 0, rows = 0;  // all tables (rows: after publishing)
  int64_t bytes = 0;                    // of the files written
  double seconds = 0;
};

// Writes `source` as a delta of `base` (the model as served, version `base_version`) into
// out_dir (through ExportTempDir, renamed when complete) as version `version`. An incremental
// snapshot must hold every change since `base` (the snapshot `base` was written from).
Result<PublishReport> WriteDelta(const ModelSnapshot& source, const Predictor& base, int64_t base_version,
                                 const std::string& out_dir, int64_t version);

class Publisher {
 public:
  // Loads the newest version of versions_dir (if any) as its view; a version that does not load
  // is not an error: the next publish is then a full export. So is an object store that cannot
  // be reached (Unavailable, DeadlineExceeded); its other errors (PermissionDenied, a bucket that
  // does not exist) are returned.
  static Result<std::unique_ptr<Publisher>> Open(const PublishOptions& options);
  ~Publisher();
  // Publishes `source` as version newest + 1: a full export when there is no view or full_every
  // deltas were published since the last full one, else a delta of the view. The view becomes
  // what was written, read back as a server reads it.
  // Publish(ModelSource) takes a complete snapshot of `source` first.
  Result<PublishReport> Publish(const ModelSource& source);
  // FailedPrecondition when a full export is due and `snapshot` is incremental (nothing is
  // written; publish a complete one); InvalidArgument for a snapshot whose sizes disagree.
  Result<PublishReport> Publish(const ModelSnapshot& snapshot);
  // Whether the next Publish writes a full export as far as this publisher knows (no view, the
  // first publish with full_first, full_every deltas since the last full one, a version of
  // another writer newer than the view), so the caller snapshots every row. A directory changed
  // behind its back shows only in Publish (the FailedPrecondition above).
  bool WantsCompleteSnapshot() const;

 private:
  explicit Publisher(PublishOptions options) : options_(std::move(options)) {}
  // Of an object store: makes the staging directory and fetches the newest version's chain.
  Status OpenRemote();
  // Whether the view's version is still published (a server can find the base of a delta of it).
  Result<bool> ViewListed(const std::vector<std::pair<int64_t, std::string>>& local_versions) const;
  // Uploads the staged version `version` (manifest.json last) to the object store.
  Status Upload(int64_t version) const;
  // Removes staged versions the view does not rest on (all but `full` after a full export).
  // Of an object store: removes the staged versions but `newest` and, with keep_oldest, the
  // oldest (the full export the view rests on: staging is emptied when the publisher opens and
  // each full export prunes the rest, so the oldest staged version is always that one). The view
  // holds every applied delta's rows in memory and the store holds each version (a new publisher
  // fetches the chain), so the staging directory of a never-ending run with full_every 0 stays two
  // versions in size.
  void PruneStaging(bool keep_oldest, int64_t newest) const;

  PublishOptions options_;
  std::string remote_;          // the object store prefix; empty: versions_dir is local
  std::string local_;           // where versions are written: versions_dir, or the staging directory
  bool owns_staging_ = false;   // a temporary staging directory, removed with the publisher
  std::unique_ptr<Predictor> view_;
  int64_t view_version_ = 0;
  int64_t newest_ = 0;
  int deltas_since_full_ = 0;
};

}  // namespace rectrain::serve

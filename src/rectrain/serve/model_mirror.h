// rectrain/serve/model_mirror.h: serving from an object store. `rectrain serve s3://b/models`
// keeps a local copy of the prefix's newest complete version (a numbered directory holding
// manifest.json; the manifest is uploaded last, so a version without it is still being written
// and is ignored) in a local cache directory, and the service loads, verifies (checksums) and
// hot-swaps versions from there exactly as from a local versions directory (service.h).
//
// A version is downloaded into "<cache>/<N>.tmp-<pid>" and renamed to "<cache>/<N>" once every
// file is there, so the local watcher never sees half a version. A serving delta (delta.h) comes
// with the versions it rests on that the cache lacks (or holds with another manifest than the
// delta names), oldest first, down to a full export or a cached base: the cache always holds
// whole chains, so the service applies them in order (onto the served version when it is their
// base) whichever versions its polls skipped. Cached versions beyond the newest `keep` that the
// newest version's chain does not need are removed.
//
// Thread safety: Sync is called by one thread at a time (the service's watcher).
#pragma once

#include <cstdint>
#include <string>

#include "rectrain/base/result.h"

namespace rectrain::serve {

class ModelMirror {
 public:
  // `remote`: "s3://bucket/models" (a prefix of numbered versions) or "s3://bucket/models/7" (one
  // model: its manifest.json directly under it). `cache_dir`: a local directory (created).
  ModelMirror(std::string remote, std::string cache_dir, int64_t keep = 2)
      : remote_(std::move(remote)), cache_dir_(std::move(cache_dir)), keep_(keep) {}

  // Fetches the newest complete remote version (and its chain) when the cache lacks it. Returns
  // true when a new version arrived. Errors name the object and the store's answer.
  Result<bool> Sync();

  // The directory to serve: the cache (of numbered versions), or the single model's copy.
  const std::string& local_path() const { return local_path_; }

  // A cache directory derived from the URI under `root` (default ".rectrain/model-cache").
  static std::string DefaultCacheDir(const std::string& remote, const std::string& root = ".rectrain/model-cache");

 private:
  // Downloads `version` and the bases it needs (see above), oldest first.
  Status FetchChain(int64_t version);
  // Removes cached versions beyond the newest `keep_` that `newest`'s chain does not need.
  void Prune(int64_t newest);
  std::string Cached(int64_t version) const { return cache_dir_ + "/" + std::to_string(version); }

  std::string remote_, cache_dir_;
  int64_t keep_;
  std::string local_path_;
};

// The newest complete version under `remote` (a numbered prefix holding manifest.json; one
// without it is still being uploaded), 0 when there is none (or no such prefix). Errors are the
// store's (Unavailable when it cannot be reached).
Result<int64_t> NewestRemoteVersion(const std::string& remote);

}  // namespace rectrain::serve

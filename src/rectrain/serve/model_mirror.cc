#include "rectrain/serve/model_mirror.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/serve/delta.h"
#include "rectrain/serve/model_package.h"
#include "rectrain/serve/publish.h"

namespace rectrain::serve {
namespace {

namespace fs = std::filesystem;

// Downloads `remote` (manifest.json last) into `dst` through a temporary sibling, renamed once
// whole.
Status Download(const std::string& remote, const std::string& dst) {
  const std::string tmp = dst + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  Status s = io::CopyTree(remote, tmp, "manifest.json");
  if (s.ok()) {
    fs::remove_all(dst, ec);
    fs::rename(tmp, dst, ec);
    if (ec) s = ErrnoToStatus(ec.value(), "cannot rename " + tmp + " to " + dst);
  }
  if (!s.ok()) fs::remove_all(tmp, ec);
  return s;
}

}  // namespace

std::string ModelMirror::DefaultCacheDir(const std::string& remote, const std::string& root) {
  std::string name;
  for (char c : remote.substr(remote.find("://") == std::string::npos ? 0 : remote.find("://") + 3)) {
    name += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  }
  char hash[20];
  std::snprintf(hash, sizeof(hash), "%08llx", static_cast<unsigned long long>(HashBytes(remote, 0x6d6972) & 0xffffffffULL));
  return root + "/" + name.substr(0, 80) + "-" + hash;
}

Result<int64_t> NewestRemoteVersion(const std::string& remote) {
  io::FileSystem& store = io::FileSystemFor(remote);
  Result<std::vector<io::DirEntry>> listed = store.List(remote, /*recursive=*/false);
  if (!listed.ok() && listed.status().code() == StatusCode::kNotFound) return 0;  // no version yet
  RECTRAIN_ASSIGN_OR_RETURN(const std::vector<io::DirEntry> entries, std::move(listed));
  std::vector<int64_t> versions;
  for (const io::DirEntry& e : entries) {
    if (e.is_dir && IsVersionName(e.name)) versions.push_back(std::stoll(e.name));
  }
  std::sort(versions.rbegin(), versions.rend());
  for (int64_t v : versions) {
    Result<io::FileStat> st = store.Stat(io::JoinPath(io::JoinPath(remote, std::to_string(v)), "manifest.json"));
    if (st.ok()) return v;
    if (st.status().code() != StatusCode::kNotFound) return st.status();
  }
  return 0;
}

Status ModelMirror::FetchChain(int64_t version) {
  std::vector<int64_t> needed{version};  // newest first
  for (int64_t v = version;;) {
    const std::string manifest = io::JoinPath(io::JoinPath(remote_, std::to_string(v)), "manifest.json");
    RECTRAIN_ASSIGN_OR_RETURN(const std::string text, io::ReadFileToString(manifest));
    if (!IsDeltaManifest(text)) break;  // a full export
    RECTRAIN_ASSIGN_OR_RETURN(const DeltaManifest dm, DeltaManifestFromJson(text, manifest));
    if (dm.base_version >= v) {
      return DataLossError(manifest + " names version " + std::to_string(dm.base_version) + " as its base, not an older one");
    }
    Result<PackageFile> cached = DescribeFile(Cached(dm.base_version), "manifest.json");
    if (cached.ok() && cached->xxh64 == dm.base_manifest_xxh64) break;  // the rest of the chain is here
    v = dm.base_version;
    needed.push_back(v);
  }
  for (auto it = needed.rbegin(); it != needed.rend(); ++it) {
    RECTRAIN_RETURN_IF_ERROR(Download(io::JoinPath(remote_, std::to_string(*it)), Cached(*it)))
        << "while fetching version " << *it << (*it == version ? "" : " (the chain of version " + std::to_string(version) + ")");
  }
  return OkStatus();
}

void ModelMirror::Prune(int64_t newest) {
  std::set<std::string> keep;
  Result<VersionChain> chain = ResolveVersion(cache_dir_, newest);
  if (!chain.ok()) return;  // the service says why when it loads it; remove nothing meanwhile
  keep.insert(chain->dirs.begin(), chain->dirs.end());
  std::vector<int64_t> cached;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator(cache_dir_, ec)) {
    const std::string name = d.path().filename().string();
    if (IsVersionName(name)) cached.push_back(std::stoll(name));
  }
  std::sort(cached.rbegin(), cached.rend());
  // The newest `keep_` stay too (the service may still serve the previous one).
  for (size_t i = static_cast<size_t>(keep_); i < cached.size(); ++i) {
    if (!keep.contains(Cached(cached[i]))) fs::remove_all(Cached(cached[i]), ec);
  }
}

Result<bool> ModelMirror::Sync() {
  io::FileSystem& store = io::FileSystemFor(remote_);
  std::error_code ec;
  fs::create_directories(cache_dir_, ec);
  if (ec) return ErrnoToStatus(ec.value(), "cannot create the model cache directory " + cache_dir_);
  // One model (its manifest directly under the prefix).
  if (store.Stat(io::JoinPath(remote_, "manifest.json")).ok()) {
    const std::string dst = cache_dir_ + "/model";
    const bool had = local_path_ == dst;
    local_path_ = dst;
    if (had || fs::exists(dst + "/manifest.json", ec)) return false;
    RECTRAIN_RETURN_IF_ERROR(Download(remote_, dst));
    return true;
  }
  local_path_ = cache_dir_;
  RECTRAIN_ASSIGN_OR_RETURN(const int64_t newest, NewestRemoteVersion(remote_));
  if (newest == 0 || fs::exists(Cached(newest) + "/manifest.json", ec)) return false;  // none, or already here
  RECTRAIN_RETURN_IF_ERROR(FetchChain(newest));
  Prune(newest);
  return true;
}

}  // namespace rectrain::serve

#include "rectrain/serve/model_mirror.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "rectrain/base/random.h"
#include "rectrain/io/fs/file_system.h"
#include "rectrain/serve/model_package.h"

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
  Result<std::vector<io::DirEntry>> listed = store.List(remote_, /*recursive=*/false);
  if (!listed.ok() && listed.status().code() == StatusCode::kNotFound) return false;  // no version yet
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<io::DirEntry> entries, std::move(listed));
  std::vector<int64_t> versions;
  for (const io::DirEntry& e : entries) {
    if (e.is_dir && IsVersionName(e.name)) versions.push_back(std::stoll(e.name));
  }
  std::sort(versions.rbegin(), versions.rend());
  for (int64_t v : versions) {
    const std::string remote = io::JoinPath(remote_, std::to_string(v));
    if (!store.Stat(io::JoinPath(remote, "manifest.json")).ok()) continue;  // still being uploaded
    const std::string dst = cache_dir_ + "/" + std::to_string(v);
    if (fs::exists(dst + "/manifest.json", ec)) return false;  // the newest complete one is here
    RECTRAIN_RETURN_IF_ERROR(Download(remote, dst));
    // Keep the newest `keep` cached versions (the service may still serve the previous one).
    std::vector<int64_t> cached;
    for (const auto& d : fs::directory_iterator(cache_dir_, ec)) {
      const std::string name = d.path().filename().string();
      if (IsVersionName(name)) cached.push_back(std::stoll(name));
    }
    std::sort(cached.rbegin(), cached.rend());
    for (size_t i = static_cast<size_t>(keep_); i < cached.size(); ++i) {
      fs::remove_all(cache_dir_ + "/" + std::to_string(cached[i]), ec);
    }
    return true;
  }
  return false;
}

}  // namespace rectrain::serve

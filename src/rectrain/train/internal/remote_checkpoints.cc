#include "rectrain/train/internal/remote_checkpoints.h"

#include <filesystem>

#include "rectrain/io/fs/file_system.h"
#include "rectrain/checkpoint/checkpoint.h"

namespace rectrain::train::internal {

Status UploadCheckpoint(const std::string& local_dir, const std::string& remote_root, int64_t keep) {
  const std::string name = std::filesystem::path(local_dir).filename().string();
  const std::string remote = io::JoinPath(remote_root, name);
  RECTRAIN_RETURN_IF_ERROR(io::CopyTree(local_dir, remote, "meta.json"))
      << "while uploading checkpoint " << local_dir << " to " << remote;
  return checkpoint::PruneCheckpoints(remote_root, keep);
}

Status FetchNewerCheckpoint(const std::string& remote_root, const std::string& local_root) {
  const auto remote = checkpoint::ListCheckpoints(remote_root);
  if (remote.empty()) return OkStatus();
  const auto local = checkpoint::ListCheckpoints(local_root);
  if (!local.empty() && local.back().first >= remote.back().first) return OkStatus();
  // A delta comes with its chain (the full checkpoint and the deltas before it), oldest first,
  // so that the newest is renamed into place last.
  RECTRAIN_ASSIGN_OR_RETURN(std::vector<std::string> chain, checkpoint::ResolveChain(remote.back().second));
  for (const std::string& from : chain) {
    const std::string name = std::filesystem::path(from).filename().string();
    const std::string dst = local_root + "/" + name;
    const std::string tmp = dst + ".tmp";
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    RECTRAIN_RETURN_IF_ERROR(io::CopyTree(from, tmp, "meta.json")) << "while downloading checkpoint " << from;
    std::filesystem::remove_all(dst, ec);
    std::filesystem::rename(tmp, dst, ec);
    if (ec) return ErrnoToStatus(ec.value(), "cannot rename " + tmp + " to " + dst);
  }
  return OkStatus();
}

}  // namespace rectrain::train::internal

#include "rectrain/track/workspace.h"

#include <filesystem>

namespace rectrain::track {
namespace fs = std::filesystem;

std::string ResolveStorePath(const std::string& explicit_store, const std::string& env_store,
                             const std::string& workspace) {
  if (!explicit_store.empty()) return explicit_store;
  if (!env_store.empty()) return env_store;
  return (fs::path(workspace.empty() ? "." : workspace) / ".rectrain" / "tracking.db").string();
}

std::string WorkspaceOfStore(const std::string& store_path, const std::string& workspace) {
  std::error_code ec;
  fs::path dir = workspace.empty() ? fs::absolute(store_path, ec).parent_path() : fs::absolute(workspace, ec);
  if (ec) return workspace.empty() ? fs::path(store_path).parent_path().string() : workspace;
  dir = dir.lexically_normal();
  if (workspace.empty() && dir.filename() == ".rectrain") dir = dir.parent_path();
  return dir.string();
}

}  // namespace rectrain::track

// rectrain/track/workspace.h: where the tracking store of a workspace lives, shared by `rectrain
// train`, `runs` and `ui` (docs/tracking.md). The default store is
// <workspace>/.rectrain/tracking.db, the workspace being the current directory unless
// tracking.workspace (train) or --workspace (runs, ui) names one; $RECTRAIN_TRACKING_STORE and
// then tracking.store / --store override the file itself. The CLI reads the environment and
// passes its value in (libraries do not read it).
// Thread safety: pure functions.
#pragma once

#include <string>

namespace rectrain::track {

inline constexpr char kStoreEnv[] = "RECTRAIN_TRACKING_STORE";

// `explicit_store` if non-empty, else `env_store` ($RECTRAIN_TRACKING_STORE, "" when unset) if
// non-empty, else <workspace or ".">/.rectrain/tracking.db.
std::string ResolveStorePath(const std::string& explicit_store, const std::string& env_store,
                             const std::string& workspace);

// The directory whose files the UI may serve (log tails): `workspace` if non-empty, else the
// parent of the store's ".rectrain" directory, else the store's directory. Absolute.
std::string WorkspaceOfStore(const std::string& store_path, const std::string& workspace);

}  // namespace rectrain::track

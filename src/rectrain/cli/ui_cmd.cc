// `rectrain ui`: the web UI, REST API and /metrics over the workspace's tracking store
// (webui::ServeUi; docs/ui.md, docs/cli.md).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

#include "rectrain/cli/commands.h"
#include "rectrain/cli/exit_codes.h"
#include "rectrain/cli/flags.h"
#include "rectrain/cli/process_env.h"
#include "rectrain/cli/stop_signals.h"
#include "rectrain/track/workspace.h"
#include "rectrain/webui/ui_server.h"

namespace rectrain::cli {

int RunUi(const std::vector<std::string>& args) {
  const char* kCmd = "rectrain ui";
  std::string host = "127.0.0.1", token, store, workspace, static_dir, alertmanager;
  int64_t port = 8080, max_connections = 512, idle_timeout_ms = 5000;
  FlagParser flags(kCmd, "[--port P] [--host H] [--token T] [--store PATH] [--workspace DIR] [--alertmanager URL]",
                   "Serves the web UI, its REST API and /metrics from the tracking store until\n"
                   "Ctrl-C. Binds 127.0.0.1 by default; another host needs a token (--token, else\n"
                   "$RECTRAIN_UI_TOKEN, else one is generated and printed with the URL).\n"
                   "With --alertmanager, a run's page shows its alerts (docs/alerts.md).");
  flags.Int("port", &port, "port (default 8080; 0 = any free port)");
  flags.String("host", &host, "address to bind (default 127.0.0.1)");
  flags.String("token", &token, "API token, required off loopback: 16-256 characters of A-Z a-z 0-9 - . _ ~, at least 8 different");
  flags.String("store", &store,
               "tracking database (default $RECTRAIN_TRACKING_STORE, else WORKSPACE/.rectrain/tracking.db)");
  flags.String("workspace", &workspace,
               "workspace directory: the store's default home and the only place log tails are "
               "served from (default: the current directory)");
  flags.String("static-dir", &static_dir, "built UI assets (default: found next to the binary or build)");
  flags.String("alertmanager", &alertmanager,
               "Alertmanager URL (e.g. http://127.0.0.1:9093): run pages show the alerts labelled with "
               "their run id");
  flags.Int("max-connections", &max_connections, "open connections at most (default 512; docs/ui.md \"Limits\")");
  flags.Int("idle-timeout-ms", &idle_timeout_ms, "close a connection without a request for this long (default 5000)");
  if (std::optional<int> exit = ParseOrExit(flags, args, kCmd)) return *exit;
  if (port < 0 || port > 65535) {
    return ReportError(kCmd, InvalidArgumentError("--port must be in [0, 65535], got " + std::to_string(port)));
  }
  webui::UiOptions o;
  o.store_path = track::ResolveStorePath(store, EnvString(track::kStoreEnv), workspace);
  o.host = host;
  o.port = static_cast<int>(port);
  // The environment is read here, at the edge; ServeUi reads none.
  o.token = token.empty() ? EnvString("RECTRAIN_UI_TOKEN") : token;
  o.static_dir = static_dir;
  o.env_ui_dir = EnvString("RECTRAIN_UI_DIR");
  o.alertmanager_url = alertmanager;
  o.max_connections = static_cast<int>(std::clamp<int64_t>(max_connections, 0, 1 << 20));
  o.idle_timeout_ms = idle_timeout_ms;
  RaiseOpenFileLimit();  // --max-connections descriptors
  o.artifact_root = track::WorkspaceOfStore(o.store_path, workspace);
  EnableGracefulStop("");  // a signal while the store opens stops the server once it is up
  o.wait_for_stop = WaitForStopSignal;
  std::error_code ec;
  const std::filesystem::path store_dir = std::filesystem::path(o.store_path).parent_path();
  if (!store_dir.empty()) std::filesystem::create_directories(store_dir, ec);
  if (Status s = webui::ServeUi(o); !s.ok()) return ReportError(kCmd, s);
  return 0;
}

}  // namespace rectrain::cli

// rectrain/webui/ui_server.cc: see ui_server.h.
#include "rectrain/webui/ui_server.h"

#include <signal.h>

#include <filesystem>
#include <iostream>
#include <vector>

#include "rectrain/http/server.h"
#include "rectrain/prometheus/registry.h"
#include "rectrain/track/tracking_store.h"
#include "rectrain/webui/tracking_api.h"

#ifndef RECTRAIN_UI_BUILD_DIR
#define RECTRAIN_UI_BUILD_DIR ""
#endif
#ifndef RECTRAIN_UI_SOURCE_DIST
#define RECTRAIN_UI_SOURCE_DIST ""
#endif

namespace rectrain::webui {
namespace {

namespace fs = std::filesystem;

bool HasIndex(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "index.html", ec);
}

}  // namespace

Result<std::string> FindUiAssets(std::string_view explicit_dir, std::string_view env_ui_dir) {
  if (!explicit_dir.empty()) {
    if (HasIndex(fs::path(explicit_dir))) return std::string(explicit_dir);
    return NotFoundError("UI directory " + std::string(explicit_dir) + " has no index.html");
  }
  if (!env_ui_dir.empty()) {
    if (HasIndex(fs::path(env_ui_dir))) return std::string(env_ui_dir);
    return NotFoundError("RECTRAIN_UI_DIR=" + std::string(env_ui_dir) + " has no index.html");
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    candidates.push_back(exe.parent_path().parent_path() / "share" / "rectrain" / "ui");
    candidates.push_back(exe.parent_path() / "ui");
  }
  candidates.emplace_back(RECTRAIN_UI_BUILD_DIR);
  candidates.emplace_back(RECTRAIN_UI_SOURCE_DIST);
  std::string tried;
  for (const fs::path& c : candidates) {
    if (c.empty()) continue;
    if (HasIndex(c)) return c.string();
    tried += (tried.empty() ? "" : ", ") + c.string();
  }
  return NotFoundError("the web UI is not built (looked in " + tried +
                       "); build it with `cd ui && npm ci && npm run build`, or the CMake "
                       "target rectrain_ui_assets, or point RECTRAIN_UI_DIR at it");
}

Status ServeUi(const UiOptions& options) {
  if (options.store_path.empty()) return InvalidArgumentError("ServeUi needs a store_path");
  if (!options.wait_for_stop) return InvalidArgumentError("ServeUi needs a wait_for_stop");
  if (!options.alertmanager_url.empty()) {
    RECTRAIN_RETURN_IF_ERROR(ParseAlertmanagerUrl(options.alertmanager_url).status());
  }
  std::ostream& out = options.out != nullptr ? *options.out : std::cout;
  RECTRAIN_ASSIGN_OR_RETURN(std::string static_dir, FindUiAssets(options.static_dir, options.env_ui_dir));
  RECTRAIN_ASSIGN_OR_RETURN(auto store, track::TrackingStore::Open(options.store_path));

  http::ServerOptions so;
  so.host = options.host;
  so.port = options.port;
  so.static_dir = static_dir;
  so.num_threads = options.num_threads;
  so.max_connections = options.max_connections;
  so.idle_timeout_ms = options.idle_timeout_ms;
  so.unprotected_risk = "read and delete runs";
  so.token = options.token;
  bool generated = false;
  if (so.token.empty() && !http::IsLoopbackHost(so.host)) {
    RECTRAIN_ASSIGN_OR_RETURN(so.token, http::GenerateToken());
    generated = true;
  }
  TrackingApiOptions api;
  api.alertmanager_url = options.alertmanager_url;
  api.artifact_root = options.artifact_root;
  if (api.artifact_root.empty()) {
    std::error_code ec;
    fs::path abs = fs::absolute(options.store_path, ec);
    if (!ec) api.artifact_root = abs.parent_path().string();
  }
  so.routes = TrackingApiRoutes(store.get(), api);

  prometheus::MetricsRegistry registry;
  RECTRAIN_RETURN_IF_ERROR(prometheus::RegisterProcessMetrics(registry));
  RECTRAIN_ASSIGN_OR_RETURN(auto server, http::Server::Start(so, &registry));
  std::string url = server->url() + "/";
  if (!so.token.empty()) url += "?token=" + so.token;
  out << "rectrain ui: serving " << options.store_path << " at " << url << "\n";
  if (generated) {
    out << "rectrain ui: generated an access token (set --token or RECTRAIN_UI_TOKEN to choose "
           "one); the URL above carries it\n";
  }
  if (!api.alertmanager_url.empty()) {
    out << "rectrain ui: run alerts from Alertmanager at " << api.alertmanager_url << "\n";
  }
  out << "rectrain ui: press Ctrl-C to stop" << std::endl;
  if (options.on_ready) options.on_ready(url);
  const int sig = options.wait_for_stop();
  out << "rectrain ui: " << (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal")
      << " received, stopping" << std::endl;
  server->Stop();
  return OkStatus();
}

}  // namespace rectrain::webui

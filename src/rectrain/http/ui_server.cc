// rectrain/http/ui_server.cc: see ui_server.h.
#include "rectrain/http/ui_server.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "rectrain/http/internal/api.h"
#include "rectrain/http/prometheus.h"
#include "rectrain/http/server.h"
#include "rectrain/track/tracking_store.h"

#ifndef RECTRAIN_UI_BUILD_DIR
#define RECTRAIN_UI_BUILD_DIR ""
#endif
#ifndef RECTRAIN_UI_SOURCE_DIST
#define RECTRAIN_UI_SOURCE_DIST ""
#endif

namespace rectrain::http {
namespace {

namespace fs = std::filesystem;

int g_signal_pipe[2] = {-1, -1};

void OnSignal(int sig) {
  unsigned char b = static_cast<unsigned char>(sig);
  int saved = errno;
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &b, 1);
  errno = saved;
}

bool HasIndex(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "index.html", ec);
}

// Installs SIGINT/SIGTERM handlers writing to a self-pipe; restores the old ones on destruction.
class SignalWaiter {
 public:
  Status Install() {
    if (pipe(g_signal_pipe) != 0) return InternalError("pipe() failed for the signal handler");
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    installed_ = true;
    return OkStatus();
  }
  // Blocks until a signal arrives; returns its number.
  int Wait() {
    pollfd p{g_signal_pipe[0], POLLIN, 0};
    for (;;) {
      int rc = poll(&p, 1, -1);
      if (rc > 0) {
        unsigned char b = 0;
        if (read(g_signal_pipe[0], &b, 1) == 1) return b;
      } else if (rc < 0 && errno != EINTR) {
        return 0;
      }
    }
  }
  ~SignalWaiter() {
    if (!installed_) return;
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    close(g_signal_pipe[0]);
    close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }

 private:
  bool installed_ = false;
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace

Result<std::string> FindUiAssets(std::string_view explicit_dir) {
  if (!explicit_dir.empty()) {
    if (HasIndex(fs::path(explicit_dir))) return std::string(explicit_dir);
    return NotFoundError("UI directory " + std::string(explicit_dir) + " has no index.html");
  }
  if (const char* env = std::getenv("RECTRAIN_UI_DIR"); env != nullptr && *env != '\0') {
    if (HasIndex(env)) return std::string(env);
    return NotFoundError("RECTRAIN_UI_DIR=" + std::string(env) + " has no index.html");
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
  if (!options.alertmanager_url.empty()) {
    RECTRAIN_RETURN_IF_ERROR(internal::ParseAlertmanagerUrl(options.alertmanager_url).status());
  }
  std::ostream& out = options.out != nullptr ? *options.out : std::cout;
  RECTRAIN_ASSIGN_OR_RETURN(std::string static_dir, FindUiAssets(options.static_dir));
  RECTRAIN_ASSIGN_OR_RETURN(auto store, track::TrackingStore::Open(options.store_path));

  ServerOptions so;
  so.host = options.host;
  so.port = options.port;
  so.static_dir = static_dir;
  so.num_threads = options.num_threads;
  so.token = options.token;
  if (so.token.empty()) {
    if (const char* env = std::getenv("RECTRAIN_UI_TOKEN"); env != nullptr) so.token = env;
  }
  bool generated = false;
  if (so.token.empty() && !IsLoopbackHost(so.host)) {
    RECTRAIN_ASSIGN_OR_RETURN(so.token, GenerateToken());
    generated = true;
  }
  so.alertmanager_url = options.alertmanager_url;
  so.artifact_root = options.artifact_root;
  if (so.artifact_root.empty()) {
    std::error_code ec;
    fs::path abs = fs::absolute(options.store_path, ec);
    if (!ec) so.artifact_root = abs.parent_path().string();
  }

  MetricsRegistry registry;
  RECTRAIN_RETURN_IF_ERROR(RegisterProcessMetrics(registry));
  SignalWaiter signals;
  RECTRAIN_RETURN_IF_ERROR(signals.Install());
  RECTRAIN_ASSIGN_OR_RETURN(auto server, Server::Start(so, &registry, store.get()));
  std::string url = server->url() + "/";
  if (!so.token.empty()) url += "?token=" + so.token;
  out << "rectrain ui: serving " << options.store_path << " at " << url << "\n";
  if (generated) {
    out << "rectrain ui: generated an access token (set --token or RECTRAIN_UI_TOKEN to choose "
           "one); the URL above carries it\n";
  }
  if (!so.alertmanager_url.empty()) {
    out << "rectrain ui: run alerts from Alertmanager at " << so.alertmanager_url << "\n";
  }
  out << "rectrain ui: press Ctrl-C to stop" << std::endl;
  if (options.on_ready) options.on_ready(url);
  int sig = signals.Wait();
  out << "rectrain ui: " << (sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "signal")
      << " received, stopping" << std::endl;
  server->Stop();
  return OkStatus();
}

}  // namespace rectrain::http

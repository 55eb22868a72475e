// rectrain_ui_server: serves the web UI over a tracking store until Ctrl-C. A stand-in for
// `rectrain ui` (same library call, webui::ServeUi) used by the browser test.
//   rectrain_ui_server --store ws/rectrain.db [--host 127.0.0.1] [--port 8080] [--token T]
//                      [--static-dir DIR] [--artifact-root DIR] [--alertmanager URL]
#include <pthread.h>
#include <signal.h>

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "rectrain/webui/ui_server.h"

int main(int argc, char** argv) {
  rectrain::webui::UiOptions o;
  auto usage = [] {
    std::cerr << "usage: rectrain_ui_server --store PATH [--host H] [--port P] [--token T] "
                 "[--static-dir DIR] [--artifact-root DIR] [--alertmanager URL]\n";
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") return usage(), 0;
    if (i + 1 >= argc) return usage();
    std::string value = argv[++i];
    if (flag == "--store") {
      o.store_path = value;
    } else if (flag == "--host") {
      o.host = value;
    } else if (flag == "--port") {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), o.port);
      if (ec != std::errc() || p != value.data() + value.size() || o.port < 0 || o.port > 65535) {
        std::cerr << "rectrain_ui_server: --port must be 0..65535, got '" << value << "'\n";
        return 2;
      }
    } else if (flag == "--token") {
      o.token = value;
    } else if (flag == "--static-dir") {
      o.static_dir = value;
    } else if (flag == "--artifact-root") {
      o.artifact_root = value;
    } else if (flag == "--alertmanager") {
      o.alertmanager_url = value;
    } else {
      std::cerr << "rectrain_ui_server: unknown flag '" << flag << "'\n";
      return usage();
    }
  }
  if (o.store_path.empty()) return usage();
  // As `rectrain ui` does: the environment is read by the program, not by ServeUi.
  if (o.token.empty()) {
    if (const char* env = std::getenv("RECTRAIN_UI_TOKEN")) o.token = env;
  }
  if (const char* env = std::getenv("RECTRAIN_UI_DIR")) o.env_ui_dir = env;
  // SIGINT/SIGTERM are taken with sigwait (as `rectrain ui` does, docs/decisions/0006), blocked
  // before ServeUi starts the server's threads so that every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  o.wait_for_stop = [stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    return sig;
  };
  rectrain::Status st = rectrain::webui::ServeUi(o);
  if (!st.ok()) {
    std::cerr << "rectrain_ui_server: " << st << "\n";
    return 1;
  }
  return 0;
}

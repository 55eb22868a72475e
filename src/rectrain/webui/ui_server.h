// rectrain/webui/ui_server.h: `rectrain ui` as a library call. ServeUi() opens the tracking store,
// serves the web UI (static files built from ui/ with npm), the REST API and /metrics on one
// port, prints the URL and blocks until the caller's wait_for_stop returns (for `rectrain ui`:
// SIGINT or SIGTERM), then stops cleanly.
//
// Security: binds 127.0.0.1 by default. A non-loopback host needs a token: UiOptions::token
// (`rectrain ui`: --token, else $RECTRAIN_UI_TOKEN, read by the CLI), else one is generated and
// printed with the URL. Log tails are served only from files under the workspace (the store's
// directory unless artifact_root is set). The library reads no environment variable: the CLI
// passes $RECTRAIN_UI_TOKEN and $RECTRAIN_UI_DIR in the options.
//
// Thread safety: ServeUi may run on any thread; it calls wait_for_stop on that thread.
//
// Example (the whole of `rectrain ui`):
//   webui::UiOptions o;  o.store_path = workspace + "/rectrain.db";  o.port = flags.port;
//   o.token = flags.token.empty() ? cli::EnvString("RECTRAIN_UI_TOKEN") : flags.token;
//   o.env_ui_dir = cli::EnvString("RECTRAIN_UI_DIR");
//   cli::EnableGracefulStop("");  o.wait_for_stop = cli::WaitForStopSignal;
//   return webui::ServeUi(o);
#pragma once

#include <functional>
#include <iosfwd>
#include <string>
#include <string_view>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"

namespace rectrain::webui {

struct UiOptions {
  std::string store_path;          // Required: the tracking database (created if absent).
  std::string host = "127.0.0.1";
  int port = 8080;                 // 0 = any free port.
  std::string token;               // See the top comment.
  std::string static_dir;          // "" = FindUiAssets("", env_ui_dir).
  // $RECTRAIN_UI_DIR as the caller read it ("" = unset): where the built UI is when static_dir
  // is not given (see FindUiAssets).
  std::string env_ui_dir;
  std::string artifact_root;       // "" = the directory of store_path.
  // Alertmanager base URL (http[s]://host:port[/prefix]): the run page shows the alerts whose
  // `run` label is the run's id (GET /api/runs/{id}/alerts); "" = none.
  std::string alertmanager_url;
  int num_threads = 4;
  int max_connections = 512;       // http::ServerOptions::max_connections
  int64_t idle_timeout_ms = 5000;  // http::ServerOptions::idle_timeout_ms
  std::ostream* out = nullptr;     // Where the URL line goes; null = std::cout.
  // Called once the server accepts connections, with the URL (token included); for tests and
  // for callers that open a browser.
  std::function<void(const std::string& url)> on_ready;
  // Required: blocks until the server should stop; returns the signal that asked for it (SIGINT
  // and SIGTERM are named in the log line, anything else is "signal"). The process's signals
  // belong to its main program, not to this library.
  std::function<int()> wait_for_stop;
};

// Locates the built UI (a directory holding index.html), in this order: `explicit_dir`;
// `env_ui_dir` (the value of $RECTRAIN_UI_DIR, named so in the error); <executable
// dir>/../share/rectrain/ui; <executable dir>/ui; the build tree's copy (CMake target
// rectrain_ui_assets); the source tree's ui/dist. NotFound listing the places tried and how to
// build it if none has index.html. An explicit_dir or env_ui_dir without index.html is NotFound
// at once (no silent fallback).
Result<std::string> FindUiAssets(std::string_view explicit_dir, std::string_view env_ui_dir);

// Serves until options.wait_for_stop returns. Errors: InvalidArgument without wait_for_stop;
// those of TrackingStore::Open, FindUiAssets and Server::Start (InvalidArgument for a bad
// token, Unavailable if the port is taken); InvalidArgument for an alertmanager_url that is not
// an http(s) URL. An Alertmanager that is down is no error here: the alerts route reports it.
Status ServeUi(const UiOptions& options);

}  // namespace rectrain::webui

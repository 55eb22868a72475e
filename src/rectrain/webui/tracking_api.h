// rectrain/webui/tracking_api.h: the JSON REST API over a TrackingStore, as routes for
// http::Server (what `rectrain ui` serves; shapes in docs/tracking.md, additions in docs/ui.md):
//   GET  /api/runs                   run list: status, tag (repeatable), q (name substring),
//                                    group, parent, param=k=v (repeatable), metric=auc>=0.8
//                                    (repeatable), sort, order=asc|desc, limit, offset;
//                                    include_params=all|k1,k2 adds "params" to each run
//   GET  /api/runs.csv               the same list as CSV
//   GET  /api/runs/{id}              run detail (config, params, files, artifacts, metric keys)
//   DELETE /api/runs/{id}            deletes a run
//   GET  /api/runs/{id}/metrics      key (repeatable; default all keys), max_points (default
//                                    TrackingApiOptions::default_max_points; 0 = all),
//                                    min_step/max_step (a zoomed range): min/max-downsampled
//   GET  /api/runs/{id}/metrics.csv  every point of the run
//   GET  /api/runs/{id}/log          max_bytes (default 65536): tail of the run's "log"
//                                    artifact, if it lies under TrackingApiOptions::artifact_root
//   GET  /api/runs/{id}/alerts       the run's alerts from Alertmanager (docs/alerts.md)
//   GET  /api/compare?ids=1,2,3      differing params + final metrics side by side
//   GET  /api/groups                 run groups with status counts; by=group|parent|tag
// Errors are http::ErrorJson bodies with the status of http::HttpStatusForCode.
//
// Thread safety: the handlers run concurrently on the server's workers; TrackingStore is
// thread-safe.
//
// Example (what ServeUi does):
//   http::ServerOptions so;  so.static_dir = dir;
//   so.routes = webui::TrackingApiRoutes(store.get(), {.artifact_root = workspace});
//   RECTRAIN_ASSIGN_OR_RETURN(auto server, http::Server::Start(so, &registry));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/http/server.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::webui {

struct TrackingApiOptions {
  int64_t default_max_points = 1000;  // For /api/runs/{id}/metrics without max_points.
  // Log files (artifacts of kind "log") are served by /api/runs/{id}/log only if they resolve
  // to a path under this directory (the workspace); "" = never.
  std::string artifact_root;
  std::string alertmanager_url;       // GET /api/runs/{id}/alerts asks it; "" = none
};

// The routes above over `store`, which must not be null and must outlive the server.
std::vector<http::Route> TrackingApiRoutes(track::TrackingStore* store, const TrackingApiOptions& options);

// An Alertmanager base URL split for httplib::Client: "http[s]://host[:port]" and a path
// prefix ("" or "/prefix", no trailing slash; Alertmanager's --web.route-prefix).
struct AlertmanagerUrl {
  std::string scheme_host_port;
  std::string prefix;
};
// InvalidArgument (naming --alertmanager) unless `url` is http:// or https:// with a host.
Result<AlertmanagerUrl> ParseAlertmanagerUrl(const std::string& url);

}  // namespace rectrain::webui

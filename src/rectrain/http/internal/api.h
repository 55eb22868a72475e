// rectrain/http/internal/api.h: PRIVATE to http/. Registers the JSON REST routes over a
// TrackingStore on an httplib::Server, and the shared helpers to answer with a Status.
#pragma once

#include <httplib.h>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/http/server.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::http::internal {

// Writes the JSON error body and mapped HTTP status for a non-OK `status`.
void SendError(httplib::Response& res, const Status& status);

// Registers /api/* routes. `store` may be null (routes then answer 404).
void RegisterApiRoutes(httplib::Server& server, track::TrackingStore* store,
                       const ServerOptions& options);

// An Alertmanager base URL split for httplib::Client: "http[s]://host[:port]" and a path
// prefix ("" or "/prefix", no trailing slash; Alertmanager's --web.route-prefix).
struct AlertmanagerUrl {
  std::string scheme_host_port;
  std::string prefix;
};
// InvalidArgument (naming --alertmanager) unless `url` is http:// or https:// with a host.
Result<AlertmanagerUrl> ParseAlertmanagerUrl(const std::string& url);

}  // namespace rectrain::http::internal

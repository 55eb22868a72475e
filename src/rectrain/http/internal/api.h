// rectrain/http/internal/api.h: PRIVATE to http/. The JSON REST routes over a TrackingStore.
#pragma once

#include <string>
#include <vector>

#include "rectrain/base/result.h"
#include "rectrain/base/status.h"
#include "rectrain/http/server.h"
#include "rectrain/track/tracking_store.h"

namespace rectrain::http::internal {

// The /api/* routes (server.h lists them). `store` may be null (they then answer 404); it must
// outlive the server.
std::vector<Route> ApiRoutes(track::TrackingStore* store, const ServerOptions& options);

// An Alertmanager base URL split for httplib::Client: "http[s]://host[:port]" and a path
// prefix ("" or "/prefix", no trailing slash; Alertmanager's --web.route-prefix).
struct AlertmanagerUrl {
  std::string scheme_host_port;
  std::string prefix;
};
// InvalidArgument (naming --alertmanager) unless `url` is http:// or https:// with a host.
Result<AlertmanagerUrl> ParseAlertmanagerUrl(const std::string& url);

}  // namespace rectrain::http::internal

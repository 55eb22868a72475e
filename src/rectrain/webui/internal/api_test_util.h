// rectrain/webui/internal/api_test_util.h: for the webui tests only (gtest, httplib): a GET of the
// tracking API on a loopback port, its answer parsed as JSON, its status checked.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

namespace rectrain::webui {

// GET path on 127.0.0.1:port; EXPECTs an answer with `want_status` and returns its body as JSON
// ({} when there was no answer).
inline nlohmann::json GetApiJson(int port, const std::string& path, int want_status = 200) {
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(5, 0);
  auto res = c.Get(path.c_str());
  EXPECT_TRUE(res) << path;
  if (!res) return {};
  EXPECT_EQ(res->status, want_status) << path << " -> " << res->body;
  return nlohmann::json::parse(res->body);
}

}  // namespace rectrain::webui

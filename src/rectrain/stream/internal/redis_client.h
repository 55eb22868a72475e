// rectrain/stream/internal/redis_client.h (internal to stream/): one blocking connection to a
// Redis server over hiredis, with timeouts, binary-safe commands and pipelining.
//
// A failed connection (refused, dropped, timed out) leaves the client broken(): every later
// call returns Unavailable until the owner connects a new one. A server error reply (-ERR ...)
// is FailedPrecondition with the server's text and leaves the client usable.
//
// Thread safety: one thread at a time per client.
#pragma once

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rectrain/base/result.h"

namespace rectrain::stream::internal {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using RedisReply = std::unique_ptr<redisReply, ReplyDeleter>;

class RedisClient {
 public:
  // "host:port"; `timeout_ms` bounds connecting and every command.
  static Result<std::unique_ptr<RedisClient>> Connect(const std::string& host_port, int timeout_ms);
  ~RedisClient();

  Result<RedisReply> Command(const std::vector<std::string_view>& args);
  // Pipelining: Append several commands, then one GetReply per command, in order.
  Status Append(const std::vector<std::string_view>& args);
  Result<RedisReply> GetReply();
  // Changes the command timeout (a blocking read needs more than its BLOCK time).
  void SetTimeout(int timeout_ms);
  bool broken() const { return broken_; }
  const std::string& address() const { return address_; }

 private:
  RedisClient(redisContext* c, std::string address) : c_(c), address_(std::move(address)) {}
  Status Failure(const char* what);
  Result<RedisReply> Checked(redisReply* r);

  redisContext* c_;
  std::string address_;
  bool broken_ = false;
};

// The string of a reply that is one (STRING or STATUS), else "".
std::string_view ReplyText(const redisReply* r);
// Field `name` of a RESP2 array of alternating names and values (XINFO replies); null if absent.
const redisReply* ReplyField(const redisReply* r, std::string_view name);

}  // namespace rectrain::stream::internal

// rectrain/stream/internal/redis_client.cc: see redis_client.h.
#include "rectrain/stream/internal/redis_client.h"

#include <charconv>

namespace rectrain::stream::internal {
namespace {

timeval Timeval(int ms) { return timeval{ms / 1000, (ms % 1000) * 1000}; }

}  // namespace

Result<std::unique_ptr<RedisClient>> RedisClient::Connect(const std::string& host_port, int timeout_ms) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  const char* p = host_port.data() + (colon == std::string::npos ? 0 : colon + 1);
  auto [end, ec] = std::from_chars(p, host_port.data() + host_port.size(), port);
  if (colon == std::string::npos || ec != std::errc() || end != host_port.data() + host_port.size() || port <= 0 || port > 65535) {
    return InvalidArgumentError("\"" + host_port + "\" is not HOST:PORT");
  }
  const std::string host = host_port.substr(0, colon);
  redisContext* c = redisConnectWithTimeout(host.c_str(), port, Timeval(timeout_ms));
  if (c == nullptr) return ResourceExhaustedError("cannot allocate a redis connection");
  if (c->err != 0) {
    Status s = UnavailableError("cannot connect to redis at " + host_port + ": " + c->errstr);
    redisFree(c);
    return s;
  }
  redisSetTimeout(c, Timeval(timeout_ms));
  return std::unique_ptr<RedisClient>(new RedisClient(c, host_port));
}

RedisClient::~RedisClient() { redisFree(c_); }

void RedisClient::SetTimeout(int timeout_ms) { redisSetTimeout(c_, Timeval(timeout_ms)); }

Status RedisClient::Failure(const char* what) {
  broken_ = true;
  return UnavailableError(std::string("redis at ") + address_ + ": " + what + ": " +
                          (c_->err != 0 ? c_->errstr : "connection lost"));
}

Result<RedisReply> RedisClient::Checked(redisReply* r) {
  if (r == nullptr) return Failure("no reply");
  RedisReply reply(r);
  if (reply->type == REDIS_REPLY_ERROR) {
    const std::string_view text(reply->str, reply->len);
    // What a server answers while it cannot serve yet (loading its data after a restart, a busy
    // script, a failover) passes: Unavailable, retried as a lost connection is (not BUSYGROUP).
    for (std::string_view transient : {"LOADING", "BUSY", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN"}) {
      if (text.substr(0, transient.size()) == transient && (text.size() == transient.size() || text[transient.size()] == ' ')) {
        return UnavailableError("redis at " + address_ + ": " + std::string(text));
      }
    }
    return FailedPreconditionError("redis: " + std::string(text));
  }
  return reply;
}

Result<RedisReply> RedisClient::Command(const std::vector<std::string_view>& args) {
  RECTRAIN_RETURN_IF_ERROR(Append(args));
  return GetReply();
}

Status RedisClient::Append(const std::vector<std::string_view>& args) {
  if (broken_) return UnavailableError("redis at " + address_ + ": the connection was lost");
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (std::string_view a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  if (redisAppendCommandArgv(c_, static_cast<int>(args.size()), argv.data(), lens.data()) != REDIS_OK) {
    return Failure("cannot send the command");
  }
  return OkStatus();
}

Result<RedisReply> RedisClient::GetReply() {
  if (broken_) return UnavailableError("redis at " + address_ + ": the connection was lost");
  void* r = nullptr;
  if (redisGetReply(c_, &r) != REDIS_OK) return Failure("no reply");
  return Checked(static_cast<redisReply*>(r));
}

std::string_view ReplyText(const redisReply* r) {
  if (r == nullptr || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS)) return {};
  return std::string_view(r->str, r->len);
}

const redisReply* ReplyField(const redisReply* r, std::string_view name) {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY) return nullptr;
  for (size_t i = 0; i + 1 < r->elements; i += 2) {
    if (ReplyText(r->element[i]) == name) return r->element[i + 1];
  }
  return nullptr;
}

}  // namespace rectrain::stream::internal

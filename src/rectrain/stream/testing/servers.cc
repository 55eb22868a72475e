// rectrain/stream/testing/servers.cc: see servers.h.
#include "rectrain/stream/testing/servers.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "rectrain/stream/internal/redis_client.h"

namespace rectrain::stream::testing {

std::string RedisServerPath() {
  for (const char* p : {"/usr/bin/redis-server", "/usr/local/bin/redis-server"}) {
    if (access(p, X_OK) == 0) return p;
  }
  return "";
}

Result<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& dir, bool durable) {
  if (RedisServerPath().empty()) return NotFoundError("redis-server is not installed (scripts/install_deps.sh)");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::unique_ptr<RedisServer> s(new RedisServer(dir, durable, FreePort()));
  RECTRAIN_RETURN_IF_ERROR(s->Launch());
  return s;
}

RedisServer::~RedisServer() { Kill().IgnoreError(); }

Status RedisServer::Launch() {
  const std::string port = std::to_string(port_);
  std::vector<std::string> args = {RedisServerPath(), "--port", port, "--bind", "127.0.0.1", "--dir", dir_,
                                   "--save", "", "--daemonize", "no", "--logfile", dir_ + "/redis.log"};
  if (durable_) {
    for (const char* a : {"--appendonly", "yes", "--appendfsync", "always"}) args.push_back(a);
  } else {
    for (const char* a : {"--appendonly", "no"}) args.push_back(a);
  }
  pid_ = fork();
  if (pid_ == 0) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto c = internal::RedisClient::Connect(address(), 1000);
    if (c.ok() && (*c)->Command({"PING"}).ok()) return OkStatus();
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return UnavailableError("redis-server exited at start (see " + dir_ + "/redis.log)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return DeadlineExceededError("redis-server on port " + port + " did not answer PING within 10s");
}

Status RedisServer::Kill() {
  if (pid_ <= 0) return OkStatus();
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return OkStatus();
}

Status RedisServer::Restart() {
  RECTRAIN_RETURN_IF_ERROR(Kill());
  return Launch();
}

struct KafkaMock::Impl {
  rd_kafka_t* rk = nullptr;
  rd_kafka_mock_cluster_t* cluster = nullptr;
  ~Impl() {
    if (cluster != nullptr) rd_kafka_mock_cluster_destroy(cluster);
    if (rk != nullptr) rd_kafka_destroy(rk);
  }
};

KafkaMock::KafkaMock(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KafkaMock::~KafkaMock() = default;

Result<std::unique_ptr<KafkaMock>> KafkaMock::Start(int brokers) {
  auto impl = std::make_unique<Impl>();
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));  // no warning about the missing bootstrap.servers
  impl->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (impl->rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return InternalError(std::string("kafka mock: ") + err);
  }
  impl->cluster = rd_kafka_mock_cluster_new(impl->rk, brokers);
  if (impl->cluster == nullptr) return InternalError("kafka mock: cannot create the mock cluster");
  std::unique_ptr<KafkaMock> m(new KafkaMock(std::move(impl)));
  m->bootstraps_ = rd_kafka_mock_cluster_bootstraps(m->impl_->cluster);
  return m;
}

Status KafkaMock::CreateTopic(const std::string& topic, int partitions) {
  const rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(impl_->cluster, topic.c_str(), partitions, 1);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return InternalError(std::string("kafka mock topic: ") + rd_kafka_err2str(err));
  return OkStatus();
}

Status KafkaMock::SetTopicUnknown(const std::string& topic) {
  rd_kafka_mock_topic_set_error(impl_->cluster, topic.c_str(), RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  return OkStatus();
}

Status KafkaMock::SetBrokerDown(int id, bool down) {
  const rd_kafka_resp_err_t err = down ? rd_kafka_mock_broker_set_down(impl_->cluster, id)
                                       : rd_kafka_mock_broker_set_up(impl_->cluster, id);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return InternalError(std::string("kafka mock broker: ") + rd_kafka_err2str(err));
  return OkStatus();
}

}  // namespace rectrain::stream::testing

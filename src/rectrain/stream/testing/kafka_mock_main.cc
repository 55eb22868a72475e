// stream_kafka_mock (test and bench helper): runs librdkafka's mock cluster in its own process,
// so that a consumer can be killed and restarted against brokers that keep their topics and
// committed offsets.
//
//   stream_kafka_mock --out BOOTSTRAPS_FILE [--brokers N] [--topic NAME:PARTITIONS]...
//
// Writes the bootstrap list ("127.0.0.1:P,...") to BOOTSTRAPS_FILE once the brokers listen.
// SIGUSR1 takes every broker down (connections drop, new ones are refused), SIGUSR2 brings them
// back; SIGTERM or SIGINT ends it. The mock keeps only the newest 5 MiB (and 100,000 produce
// batches) of each partition and drops older batches silently (librdkafka 2.0.2, not settable):
// give a topic enough partitions for the data it must hold (bench/online/ingest.py).
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "rectrain/stream/testing/servers.h"

int main(int argc, char** argv) {
  std::string out;
  int brokers = 3;
  std::vector<std::pair<std::string, int>> topics;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--out") {
      out = value;
    } else if (flag == "--brokers") {
      brokers = std::stoi(value);
    } else if (flag == "--topic" && value.find(':') != std::string::npos) {
      topics.emplace_back(value.substr(0, value.find(':')), std::stoi(value.substr(value.find(':') + 1)));
    } else {
      std::fprintf(stderr, "usage: stream_kafka_mock --out FILE [--brokers N] [--topic NAME:PARTITIONS]...\n");
      return 2;
    }
  }
  if (out.empty()) {
    std::fprintf(stderr, "stream_kafka_mock: --out FILE is required\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGUSR1, SIGUSR2, SIGTERM, SIGINT}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before librdkafka starts its threads
  auto mock = rectrain::stream::testing::KafkaMock::Start(brokers);
  if (!mock.ok()) {
    std::fprintf(stderr, "stream_kafka_mock: %s\n", mock.status().ToString().c_str());
    return 1;
  }
  for (const auto& [name, partitions] : topics) {
    if (auto s = (*mock)->CreateTopic(name, partitions); !s.ok()) {
      std::fprintf(stderr, "stream_kafka_mock: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  {
    const std::string tmp = out + ".tmp";
    std::ofstream f(tmp);
    f << (*mock)->bootstraps() << "\n";
    f.close();
    std::rename(tmp.c_str(), out.c_str());
  }
  while (true) {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGUSR1 || sig == SIGUSR2) {
      for (int id = 1; id <= brokers; ++id) (*mock)->SetBrokerDown(id, sig == SIGUSR1).IgnoreError();
      std::fprintf(stderr, "stream_kafka_mock: brokers %s\n", sig == SIGUSR1 ? "down" : "up");
    } else {
      return 0;
    }
  }
}

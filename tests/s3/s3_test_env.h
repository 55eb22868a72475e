// tests/s3/s3_test_env.h: the object-storage tests' servers and independent client: npm's s3rver
// (installed by `npm ci` in tests/s3, see CMake) on a free loopback port, the fault-injecting
// proxy (fault_proxy.py) in front of it, and Debian's boto3 (boto_tool.py) to write fixtures
// and check what rectrain wrote.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/process_util.h"

namespace rectrain::testing {

inline std::string SourceDir() {
  const char* s = std::getenv("RECTRAIN_SOURCE_DIR");
  return s ? s : RECTRAIN_S3_SOURCE_DIR;
}

// True once something accepts TCP connections on 127.0.0.1:port.
inline bool Accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// Polls until `port` accepts or `pid` exits or 30 s pass; returns an empty string or the reason.
inline std::string WaitForPort(int port, pid_t pid, const std::string& log) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (Accepts(port)) return "";
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      std::ifstream in(log);
      std::stringstream ss;
      ss << in.rdbuf();
      return "exited before listening: " + ss.str();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "did not listen on port " + std::to_string(port) + " within 30 s";
}

// s3rver serving `dir` (its data survives restarts) with the given buckets.
class S3Server {
 public:
  S3Server(std::string dir, std::vector<std::string> buckets)
      : dir_(std::move(dir)), buckets_(std::move(buckets)), port_(FreePort()) {
    std::filesystem::create_directories(dir_ + "/data");
    error_ = Start();
  }
  ~S3Server() { Kill(); }
  S3Server(const S3Server&) = delete;
  S3Server& operator=(const S3Server&) = delete;

  // Empty when running, else why not.
  const std::string& error() const { return error_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }
  const std::string& dir() const { return dir_; }

  // (Re)starts on the same port and data directory.
  std::string Start() {
    const std::string bin = SourceDir() + "/tests/s3/node_modules/s3rver/bin/s3rver.js";
    if (!std::filesystem::exists(bin)) return bin + " is missing: run `npm ci` in tests/s3 (the build does it)";
    // s3rver 3.7 makes ListObjectsV2 continuation tokens with DES, which Node 17+ only offers
    // through OpenSSL's legacy provider.
    std::vector<std::string> argv{"/usr/bin/node", "--openssl-legacy-provider", bin, "-d", dir_ + "/data",
                                  "-a", "127.0.0.1", "-p", std::to_string(port_), "--silent"};
    for (const std::string& b : buckets_) {
      argv.push_back("--configure-bucket");
      argv.push_back(b);
    }
    pid_ = Spawn(argv, dir_ + "/s3rver.log");
    return WaitForPort(port_, pid_, dir_ + "/s3rver.log");
  }
  // SIGKILL: the server vanishes mid-request, as a crashed store would.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
  }

 private:
  std::string dir_;
  std::vector<std::string> buckets_;
  int port_;
  pid_t pid_ = -1;
  std::string error_;
};

// fault_proxy.py in front of `upstream` with a fault plan (see its docstring).
class FaultProxy {
 public:
  // `tls`: a certificate and key file (PEM) to serve HTTPS with; empty: plain HTTP.
  FaultProxy(const std::string& upstream, const std::string& plan, const std::string& log,
             double stall_seconds = 3, const std::pair<std::string, std::string>& tls = {})
      : port_(FreePort()), log_(log), https_(!tls.first.empty()) {
    std::vector<std::string> argv{"/usr/bin/python3", SourceDir() + "/tests/s3/fault_proxy.py", "--upstream", upstream,
                                  "--port", std::to_string(port_), "--plan", plan, "--log", log,
                                  "--stall-seconds", std::to_string(stall_seconds)};
    if (https_) {
      argv.insert(argv.end(), {"--certfile", tls.first, "--keyfile", tls.second});
    }
    pid_ = Spawn(argv, log + ".stderr");
    error_ = WaitForPort(port_, pid_, log + ".stderr");
  }
  ~FaultProxy() {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;
  const std::string& error() const { return error_; }
  std::string endpoint() const { return (https_ ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port_); }
  // The request log, one JSON object per line.
  std::vector<std::string> LogLines() const {
    std::ifstream in(log_);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

 private:
  int port_;
  std::string log_;
  bool https_;
  pid_t pid_ = -1;
  std::string error_;
};

// Runs boto_tool.py against `endpoint`; returns its exit status and stdout.
inline std::pair<int, std::string> Boto(const std::string& endpoint, const std::string& args) {
  const std::string cmd = "/usr/bin/python3 " + SourceDir() + "/tests/s3/boto_tool.py " + endpoint + " " + args;
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace rectrain::testing

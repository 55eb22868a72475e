// tests/http_util.h: a minimal blocking HTTP/1.1 GET over loopback for the end-to-end tests
// (our /metrics and REST API, Prometheus' query API), with chunked transfer decoding; and
// RawHttpConnection, which sends exactly the bytes a test gives it (malformed, pipelined,
// trickled) and reads replies with a deadline, for the servers' hardening tests.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

namespace rectrain::testing {

// GET http://127.0.0.1:port/path (path already URL-encoded). Returns the body of a 200 answer,
// "" otherwise; *status gets the HTTP status (0 when the connection failed).
inline std::string HttpGet(int port, const std::string& path, int* status = nullptr) {
  if (status != nullptr) *status = 0;
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return "";
  }
  const std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n";
  if (write(fd, req.data(), req.size()) != static_cast<ssize_t>(req.size())) {
    close(fd);
    return "";
  }
  std::string resp;
  char buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) resp.append(buf, static_cast<size_t>(n));
  close(fd);
  const size_t sp = resp.find(' ');
  const int code = sp == std::string::npos ? 0 : std::atoi(resp.c_str() + sp + 1);
  if (status != nullptr) *status = code;
  const size_t head_end = resp.find("\r\n\r\n");
  if (code != 200 || head_end == std::string::npos) return "";
  std::string head = resp.substr(0, head_end);
  for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string body = resp.substr(head_end + 4);
  if (head.find("transfer-encoding: chunked") == std::string::npos) return body;
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t len = std::strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (len == 0) break;
    out += body.substr(eol + 2, len);
    pos = eol + 2 + len + 2;
  }
  return out;
}

// One client connection to 127.0.0.1:port. Thread-compatible.
class RawHttpConnection {
 public:
  struct Reply {
    int status = 0;                // 0: no complete reply before the deadline or the close
    std::string head;              // status line and headers, lower-cased
    std::string body;
  };

  explicit RawHttpConnection(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawHttpConnection() {
    if (fd_ >= 0) close(fd_);
  }
  RawHttpConnection(const RawHttpConnection&) = delete;
  RawHttpConnection& operator=(const RawHttpConnection&) = delete;

  bool connected() const { return fd_ >= 0; }
  // Sends all of `bytes`; false if the connection is closed or reset.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // The next reply (Content-Length framed, as our servers send), waiting at most `timeout`;
  // `no_body` for the reply to a HEAD request.
  Reply Read(std::chrono::milliseconds timeout = std::chrono::milliseconds(5000), bool no_body = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Reply r;
    while (true) {
      const size_t head_end = buf_.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = buf_.substr(0, head_end);
        for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const size_t cl = head.find("\r\ncontent-length:");
        const size_t len = cl == std::string::npos || no_body ? 0 : std::strtoul(head.c_str() + cl + 17, nullptr, 10);
        if (buf_.size() >= head_end + 4 + len) {
          r.status = std::atoi(buf_.c_str() + 9);
          r.head = head;
          r.body = buf_.substr(head_end + 4, len);
          buf_.erase(0, head_end + 4 + len);
          return r;
        }
      }
      if (!Fill(deadline)) return r;
    }
  }
  // True if the server closes the connection (EOF or reset) within `timeout`, with no bytes
  // beyond those already read.
  bool ClosedWithin(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (Fill(deadline)) {
    }
    return closed_;
  }
  // Bytes received but not yet returned by Read().
  const std::string& pending() const { return buf_; }

 private:
  // Reads what arrives before `deadline`; false at the deadline or at EOF (closed_ then set).
  bool Fill(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (fd_ < 0 || left.count() <= 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) != 1) return false;
    char tmp[65536];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) {
      closed_ = true;
      return false;
    }
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool closed_ = false;
  std::string buf_;
};

}  // namespace rectrain::testing

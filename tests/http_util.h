// tests/http_util.h: a minimal blocking HTTP/1.1 GET over loopback for the end-to-end tests
// (our /metrics and REST API, Prometheus' query API), with chunked transfer decoding.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

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

}  // namespace rectrain::testing

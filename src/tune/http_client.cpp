#include "tune/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace hetrec::tune {

HttpUrl parse_http_url(const std::string& url, const std::string& what) {
  const std::string scheme = "http://";
  if (url.rfind("https://", 0) == 0)
    throw ConfigError(what + " = '" + url + "': https is not supported by the built-in client; point it at a local "
                      "plain-http proxy (docs/tuning.md)");
  if (url.rfind(scheme, 0) != 0) throw ConfigError(what + " = '" + url + "': expected http://host[:port][/path]");
  HttpUrl u;
  std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    u.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  const auto colon = rest.rfind(':');
  if (colon != std::string::npos) {
    const std::string port = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 1 || p > 65535)
      throw ConfigError(what + " = '" + url + "': port '" + port + "' is not a number in 1..65535");
    u.port = static_cast<int>(p);
  }
  if (rest.empty()) throw ConfigError(what + " = '" + url + "': no host");
  u.host = rest;
  return u;
}

namespace {

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

int connect_to(const HttpUrl& url) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found);
  if (rc != 0) throw IoError("http: cannot resolve " + url.host + ": " + gai_strerror(rc));
  int fd = -1;
  std::string last_error = "no address";
  for (addrinfo* a = found; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    last_error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd < 0) throw IoError("http: cannot connect to " + url.host + ":" + std::to_string(url.port) + ": " + last_error);
  return fd;
}

void wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline, const std::string& what) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  pollfd p{fd, events, 0};
  const int rc = ::poll(&p, 1, left.count() > 0 ? static_cast<int>(left.count()) : 0);
  if (rc == 0) throw IoError("http: timed out while " + what);
  if (rc < 0) throw IoError("http: poll failed while " + what + ": " + std::strerror(errno));
}

std::string decode_chunked(const std::string& body) {
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const auto eol = body.find("\r\n", pos);
    if (eol == std::string::npos) throw IoError("http: truncated chunked body");
    const std::size_t size = std::stoul(body.substr(pos, eol - pos), nullptr, 16);
    pos = eol + 2;
    if (size == 0) return out;
    if (pos + size > body.size()) throw IoError("http: truncated chunk");
    out.append(body, pos, size);
    pos += size + 2;
  }
}

}  // namespace

HttpResponse http_post(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& body, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  Socket s(connect_to(url));
  std::string request = "POST " + url.path + " HTTP/1.1\r\nHost: " + url.host + ":" + std::to_string(url.port) +
                        "\r\nConnection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  for (const auto& [name, value] : headers) request += name + ": " + value + "\r\n";
  request += "\r\n" + body;
  std::size_t sent = 0;
  while (sent < request.size()) {
    wait_for(s.fd(), POLLOUT, deadline, "sending the request");
    const ssize_t n = ::send(s.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0) throw IoError(std::string("http: send failed: ") + std::strerror(errno));
    sent += static_cast<std::size_t>(n);
  }
  // Reads until the server closes the connection or the Content-Length body is complete.
  std::string raw;
  char buf[16384];
  while (true) {
    wait_for(s.fd(), POLLIN, deadline, "waiting for the response");
    const ssize_t n = ::recv(s.fd(), buf, sizeof buf, 0);
    if (n < 0) throw IoError(std::string("http: recv failed: ") + std::strerror(errno));
    if (n == 0) break;
    raw.append(buf, static_cast<std::size_t>(n));
    const auto end = raw.find("\r\n\r\n");
    if (end == std::string::npos) continue;
    std::string head = raw.substr(0, end);
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const auto cl = head.find("content-length:");
    if (cl != std::string::npos && raw.size() - end - 4 >= std::stoul(head.substr(cl + 15))) break;
  }
  const auto head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/1.", 0) != 0 || head_end == std::string::npos)
    throw IoError("http: malformed response from " + url.host);
  HttpResponse r;
  r.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  std::string head = raw.substr(0, head_end);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  r.body = raw.substr(head_end + 4);
  if (head.find("transfer-encoding: chunked") != std::string::npos) r.body = decode_chunked(r.body);
  const auto cl = head.find("content-length:");
  if (cl != std::string::npos) {
    const std::size_t length = std::stoul(head.substr(cl + 15));
    if (r.body.size() < length) throw IoError("http: response body shorter than its Content-Length");
    r.body.resize(length);
  }
  return r;
}

}  // namespace hetrec::tune

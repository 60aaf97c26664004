#pragma once
// A one-connection HTTP server on 127.0.0.1 for the proposer's client tests: it accepts
// at most one connection, reads the request (headers and Content-Length body), waits
// `delay_ms` (or less, when the client hangs up first), sends `response` verbatim and
// closes. Every wait is bounded (kWaitMs), so the server stops by itself even when no
// client comes or the client stops reading.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>

namespace hetrec::tune::test {

class LoopbackServer {
 public:
  // The longest the server waits for a connection, for request bytes, or to send.
  static constexpr int kWaitMs = 5000;

  explicit LoopbackServer(std::string response, int delay_ms = 0)
      : response_(std::move(response)), delay_ms_(delay_ms) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 1) != 0)
      throw std::runtime_error("test server: cannot listen on 127.0.0.1");
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~LoopbackServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  int port() const { return port_; }
  std::string url(const std::string& path = "/v1/chat/completions") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // The request as received (waits for the server to finish).
  std::string request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }
  bool connected() {
    if (thread_.joinable()) thread_.join();
    return connected_;
  }

 private:
  static bool wait_readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) > 0;
  }

  void serve() {
    if (!wait_readable(fd_, kWaitMs)) return;
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    connected_ = true;
    timeval send_limit{kWaitMs / 1000, 0};
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &send_limit, sizeof send_limit);
    char buf[65536];
    while (wait_readable(c, kWaitMs)) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      request_.append(buf, static_cast<std::size_t>(n));
      const auto head = request_.find("\r\n\r\n");
      if (head == std::string::npos) continue;
      const auto cl = request_.find("Content-Length: ");
      const std::size_t length = cl == std::string::npos ? 0 : std::stoul(request_.substr(cl + 16));
      if (request_.size() >= head + 4 + length) break;
    }
    // A slow server: nothing for delay_ms, unless the client gives up (closes) first.
    if (delay_ms_ > 0) wait_readable(c, delay_ms_);
    std::size_t sent = 0;
    while (sent < response_.size()) {
      const ssize_t n = ::send(c, response_.data() + sent, response_.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;  // the client hung up or stopped reading
      sent += static_cast<std::size_t>(n);
    }
    ::close(c);
  }

  std::string response_;
  int delay_ms_ = 0;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
  bool connected_ = false;
};

}  // namespace hetrec::tune::test

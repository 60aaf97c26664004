#pragma once
// A one-connection HTTPS server on 127.0.0.1 for the proposer's client tests, with a
// certificate made on the spot (OpenSSL): self-signed, for the subject alternative name
// IP:127.0.0.1 only, valid for an hour. It accepts at most one connection; when the TLS
// handshake succeeds it reads the request and sends `response`. Every wait is bounded
// (kWaitMs), so it stops by itself.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

namespace hetrec::tune::test {

class TlsServer {
 public:
  static constexpr int kWaitMs = 5000;
  static constexpr int kCertificateSeconds = 3600;

  // Writes the certificate (PEM) to `cert_path`, for a client that is to trust it.
  TlsServer(std::string response, const std::string& cert_path) : response_(std::move(response)) {
    // OpenSSL writes to the socket with plain write(): a client that hung up first (as it
    // does after a refused handshake or a complete reply) must not kill the test.
    std::signal(SIGPIPE, SIG_IGN);
    key_ = EVP_EC_gen("P-256");
    cert_ = X509_new();
    if (!key_ || !cert_) throw std::runtime_error("tls test server: cannot make a key");
    X509_set_version(cert_, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert_), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert_), 0);
    X509_gmtime_adj(X509_getm_notAfter(cert_), kCertificateSeconds);
    X509_set_pubkey(cert_, key_);
    X509_NAME* name = X509_get_subject_name(cert_);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("hetrec test"), -1,
                               -1, 0);
    X509_set_issuer_name(cert_, name);
    X509V3_CTX v3;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, cert_, cert_, nullptr, nullptr, 0);
    for (const auto& [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"},
                                     std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, nid, value);
      if (!ext) throw std::runtime_error("tls test server: cannot make an extension");
      X509_add_ext(cert_, ext, -1);
      X509_EXTENSION_free(ext);
    }
    if (X509_sign(cert_, key_, EVP_sha256()) <= 0) throw std::runtime_error("tls test server: cannot sign");
    if (FILE* f = std::fopen(cert_path.c_str(), "w")) {
      PEM_write_X509(f, cert_);
      std::fclose(f);
    }
    ctx_ = SSL_CTX_new(TLS_server_method());
    if (!ctx_ || SSL_CTX_use_certificate(ctx_, cert_) != 1 || SSL_CTX_use_PrivateKey(ctx_, key_) != 1)
      throw std::runtime_error("tls test server: cannot set up the TLS context");

    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 1) != 0)
      throw std::runtime_error("tls test server: cannot listen on 127.0.0.1");
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~TlsServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
    SSL_CTX_free(ctx_);
    X509_free(cert_);
    EVP_PKEY_free(key_);
  }
  TlsServer(const TlsServer&) = delete;
  TlsServer& operator=(const TlsServer&) = delete;

  int port() const { return port_; }
  // Whether a TLS handshake completed (the client accepted the certificate).
  bool handshake_done() {
    if (thread_.joinable()) thread_.join();
    return handshake_done_;
  }

 private:
  void serve() {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, kWaitMs) <= 0) return;
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    timeval limit{kWaitMs / 1000, 0};
    ::setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, c);
    if (SSL_accept(ssl) == 1) {
      handshake_done_ = true;
      std::string request;
      char buf[16384];
      while (true) {
        const int n = SSL_read(ssl, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<std::size_t>(n));
        const auto head = request.find("\r\n\r\n");
        if (head == std::string::npos) continue;
        const auto cl = request.find("Content-Length: ");
        const std::size_t length = cl == std::string::npos ? 0 : std::stoul(request.substr(cl + 16));
        if (request.size() >= head + 4 + length) break;
      }
      SSL_write(ssl, response_.data(), static_cast<int>(response_.size()));
      SSL_shutdown(ssl);
    }
    SSL_free(ssl);
    ::close(c);
  }

  std::string response_;
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  SSL_CTX* ctx_ = nullptr;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  bool handshake_done_ = false;
};

}  // namespace hetrec::tune::test

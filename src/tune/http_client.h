#pragma once
// The LLM-backed proposer's HTTP client: one POST through libcurl, https with the
// system's certificate store (peer and host name verified) or plain http, nothing else
// (no other protocol, no redirects). The reply is bounded in size and in time; a bearer
// key never travels over plain http except to a loopback address (SECURITY.md).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace hetrec::tune {

struct HttpUrl {
  bool https = false;
  std::string host;  // a name, a dotted IPv4 address, or an IPv6 address without brackets
  int port = 80;
  std::string path = "/";
  // scheme://host:port/path, the form the client connects to.
  std::string text() const;
};
// Parses "http[s]://host[:port][/path]" (an IPv6 host in brackets). Throws ConfigError
// naming `what` and the URL otherwise: another scheme, user info ("user@host"), an empty
// host or one with characters outside letters, digits, '.', '-' (and ':' in brackets), a
// port outside 1..65535.
HttpUrl parse_http_url(const std::string& url, const std::string& what);

// Whether `host` is a loopback address: "localhost", an IPv4 address in 127.0.0.0/8, or
// ::1. Pure: resolves nothing.
bool is_loopback_host(const std::string& host);
// The rule for a bearer key: over https anywhere, over plain http only to a loopback
// address. Throws ConfigError naming `what`, the URL and the rule otherwise. Pure: it is
// checked before any connection is made.
void check_key_transport(const HttpUrl& url, bool has_key, const std::string& what);

// Bounds of one exchange.
struct HttpLimits {
  // The largest reply body accepted: a chat completion carrying one kernel header (tens
  // of KB) with a wide margin.
  static constexpr std::size_t kDefaultMaxReplyBytes = std::size_t{4} << 20;
  // Connecting (TCP and TLS handshake) must finish within this.
  static constexpr long kDefaultConnectTimeoutSeconds = 10;
  std::size_t max_reply_bytes = kDefaultMaxReplyBytes;
  long connect_timeout_seconds = kDefaultConnectTimeoutSeconds;
  long total_timeout_seconds = 300;  // the whole exchange, reply included
};

struct HttpResponse {
  int status = 0;
  std::string body;
};

// POSTs `body` with the given extra headers. Throws IoError naming the URL and what went
// wrong on a failed connection or TLS verification, a timeout, a reply past
// limits.max_reply_bytes, a malformed reply (bad Content-Length, broken chunked encoding,
// no HTTP status line); a non-2xx status is returned, not thrown. Throws ConfigError
// from check_key_transport when `headers` carry an Authorization header the URL may not
// receive. `ca_file`: a PEM file of certificate authorities trusted instead of the
// system's store (a private CA); verification stays on.
HttpResponse http_post(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& body, const HttpLimits& limits, const std::string& ca_file = {});

}  // namespace hetrec::tune

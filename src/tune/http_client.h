#pragma once
// A minimal HTTP/1.1 client over POSIX sockets, for the model-backed proposer: one POST
// per connection, plain http only (for an https endpoint run a local proxy, see
// docs/tuning.md), Content-Length or chunked responses.
#include <string>
#include <utility>
#include <vector>

namespace hetrec::tune {

struct HttpUrl {
  std::string host;
  int port = 80;
  std::string path = "/";
};
// Parses "http://host[:port][/path]"; throws ConfigError naming `what` otherwise (https
// included, with the hint to use a local proxy).
HttpUrl parse_http_url(const std::string& url, const std::string& what);

struct HttpResponse {
  int status = 0;
  std::string body;
};

// POSTs `body` with the given extra headers; throws IoError on connection, timeout or
// protocol errors (a non-2xx status is returned, not thrown).
HttpResponse http_post(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& body, int timeout_seconds);

}  // namespace hetrec::tune

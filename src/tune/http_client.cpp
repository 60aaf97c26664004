#include "tune/http_client.h"

#include <arpa/inet.h>
#include <curl/curl.h>

#include <cctype>
#include <cstdlib>
#include <memory>
#include <mutex>

#include "core/error.h"

namespace hetrec::tune {

namespace {

constexpr const char* kKeyRule =
    "a bearer key is sent only over https, or over plain http to a loopback address (localhost, 127.0.0.0/8, ::1)";

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-';
}

// Printable ASCII without space: what a request target may hold unescaped.
bool path_char(char c) { return c > 0x20 && c < 0x7f; }

}  // namespace

std::string HttpUrl::text() const {
  const std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return std::string(https ? "https://" : "http://") + h + ":" + std::to_string(port) + path;
}

HttpUrl parse_http_url(const std::string& url, const std::string& what) {
  const std::string where = what + " = '" + url + "'";
  HttpUrl u;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    u.https = true;
    u.port = 443;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    throw ConfigError(where + ": expected http[s]://host[:port][/path]");
  }
  const auto slash = rest.find('/');
  if (slash != std::string::npos) {
    u.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  for (char c : u.path)
    if (!path_char(c)) throw ConfigError(where + ": the path holds a space or a control character");
  if (rest.find('@') != std::string::npos)
    throw ConfigError(where + ": user info (user@host) is not accepted; a key goes in HETREC_TUNE_LLM_KEY");
  std::string port;
  bool has_port = false;
  if (!rest.empty() && rest[0] == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos) throw ConfigError(where + ": unterminated '[' of an IPv6 address");
    u.host = rest.substr(1, close - 1);
    const std::string after = rest.substr(close + 1);
    if (!after.empty() && after[0] != ':') throw ConfigError(where + ": expected ':port' after the IPv6 address");
    has_port = !after.empty();
    if (has_port) port = after.substr(1);
    in6_addr a6{};
    if (::inet_pton(AF_INET6, u.host.c_str(), &a6) != 1)
      throw ConfigError(where + ": '" + u.host + "' is not an IPv6 address");
  } else {
    const auto colon = rest.find(':');
    u.host = rest.substr(0, colon);
    has_port = colon != std::string::npos;
    if (has_port) port = rest.substr(colon + 1);
    for (char c : u.host)
      if (!host_char(c)) throw ConfigError(where + ": the host may hold letters, digits, '.' and '-' only");
  }
  if (u.host.empty()) throw ConfigError(where + ": no host");
  if (has_port) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (port.empty() || *end != '\0' || p < 1 || p > 65535)
      throw ConfigError(where + ": port '" + port + "' is not a number in 1..65535");
    u.port = static_cast<int>(p);
  }
  return u;
}

bool is_loopback_host(const std::string& host) {
  std::string lower;
  for (char c : host) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "localhost") return true;
  in_addr a4{};
  if (::inet_pton(AF_INET, host.c_str(), &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
  in6_addr a6{};
  if (::inet_pton(AF_INET6, host.c_str(), &a6) == 1) return IN6_IS_ADDR_LOOPBACK(&a6);
  return false;
}

void check_key_transport(const HttpUrl& url, bool has_key, const std::string& what) {
  if (!has_key || url.https || is_loopback_host(url.host)) return;
  throw ConfigError(what + " = '" + url.text() + "': refusing to send the key in clear text to " + url.host + ": " +
                    kKeyRule);
}

namespace {

void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) throw IoError("http: libcurl failed to initialise");
  });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* s) const { curl_slist_free_all(s); }
};

struct Sink {
  std::string body;
  std::size_t limit = 0;
  bool over_limit = false;
  std::size_t header_bytes = 0;
  std::string content_length;  // the first Content-Length value seen
  std::string header_problem;  // why the headers were refused
};

// All header lines of a reply together: far above any real reply's (a few hundred bytes)
// and below libcurl's own limit, so an endless header stream ends here.
constexpr std::size_t kMaxHeaderBytes = std::size_t{64} << 10;
// A Content-Length of more than 18 digits does not fit a signed 64-bit count.
constexpr std::size_t kMaxLengthDigits = 18;

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Checks each header line as it arrives: the total size, and that every Content-Length
// is a plain decimal count, the same in every copy (libcurl reads "12abc" as 12).
std::size_t check_header(char* data, std::size_t size, std::size_t count, void* user) {
  Sink& s = *static_cast<Sink*>(user);
  const std::size_t n = size * count;
  s.header_bytes += n;
  if (s.header_bytes > kMaxHeaderBytes) {
    s.header_problem = "the reply's headers exceed " + std::to_string(kMaxHeaderBytes) + " bytes";
    return 0;
  }
  const std::string line(data, n);
  const auto colon = line.find(':');
  if (colon == std::string::npos) {
    // A new status line (after a 1xx reply) starts a new header block.
    if (line.rfind("HTTP/", 0) == 0) s.content_length.clear();
    return n;
  }
  std::string name = line.substr(0, colon);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (name != "content-length") return n;
  const std::string value = trimmed(line.substr(colon + 1));
  bool digits = !value.empty() && value.size() <= kMaxLengthDigits;
  for (char c : value) digits = digits && std::isdigit(static_cast<unsigned char>(c));
  if (!digits) {
    s.header_problem = "malformed Content-Length '" + value.substr(0, 40) + "': expected a decimal byte count";
    return 0;
  }
  if (!s.content_length.empty() && s.content_length != value) {
    s.header_problem = "conflicting Content-Length headers (" + s.content_length + " and " + value + ")";
    return 0;
  }
  s.content_length = value;
  return n;
}

// What a libcurl failure means for the user, before libcurl's own detail.
std::string meaning(CURLcode rc) {
  switch (rc) {
    case CURLE_PARTIAL_FILE: return "the reply ended before its announced length or its last chunk";
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL: return "not a valid HTTP reply";
    case CURLE_RECV_ERROR: return "the reply could not be read (broken connection or chunked encoding)";
    case CURLE_PEER_FAILED_VERIFICATION:
      return "the server's certificate is not trusted or does not name this host (see HETREC_TUNE_LLM_CA_FILE)";
    case CURLE_SSL_CONNECT_ERROR: return "the TLS handshake failed";
    case CURLE_COULDNT_RESOLVE_HOST: return "cannot resolve the host";
    case CURLE_COULDNT_CONNECT: return "cannot connect";
    default: return curl_easy_strerror(rc);
  }
}

std::size_t write_body(char* data, std::size_t size, std::size_t count, void* user) {
  Sink& s = *static_cast<Sink*>(user);
  const std::size_t n = size * count;
  if (n > s.limit - s.body.size()) {
    s.over_limit = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  s.body.append(data, n);
  return n;
}

void set(CURL* c, CURLoption option, long value) {
  if (curl_easy_setopt(c, option, value) != CURLE_OK) throw IoError("http: libcurl refused an option");
}
template <class T>
void set(CURL* c, CURLoption option, T* value) {
  if (curl_easy_setopt(c, option, value) != CURLE_OK) throw IoError("http: libcurl refused an option");
}

}  // namespace

HttpResponse http_post(const HttpUrl& url, const std::vector<std::pair<std::string, std::string>>& headers,
                       const std::string& body, const HttpLimits& limits, const std::string& ca_file) {
  bool has_key = false;
  for (const auto& [name, value] : headers) {
    for (char ch : name + value)
      if (ch == '\r' || ch == '\n' || ch == '\0')
        throw ConfigError("http: header '" + name + "' holds a line break or NUL");
    std::string lower;
    for (char ch : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == "authorization") has_key = true;
  }
  check_key_transport(url, has_key, "http: POST");
  init_curl_once();
  const std::unique_ptr<CURL, CurlDeleter> handle(curl_easy_init());
  if (!handle) throw IoError("http: libcurl could not create a handle");
  CURL* c = handle.get();
  const std::string target = url.text();
  char error[CURL_ERROR_SIZE] = {};
  Sink sink;
  sink.limit = limits.max_reply_bytes;

  curl_slist* list = nullptr;
  for (const auto& [name, value] : headers) list = curl_slist_append(list, (name + ": " + value).c_str());
  list = curl_slist_append(list, "Expect:");  // no 100-continue round trip
  const std::unique_ptr<curl_slist, SlistDeleter> header_list(list);

  set(c, CURLOPT_ERRORBUFFER, error);
  set(c, CURLOPT_URL, target.c_str());
  // Only the URL's own protocol; redirects are not followed (the default, set for clarity).
#if LIBCURL_VERSION_NUM >= 0x075500
  set(c, CURLOPT_PROTOCOLS_STR, url.https ? "https" : "http");
#else
  set(c, CURLOPT_PROTOCOLS, url.https ? long{CURLPROTO_HTTPS} : long{CURLPROTO_HTTP});
#endif
  set(c, CURLOPT_FOLLOWLOCATION, 0L);
  set(c, CURLOPT_SSL_VERIFYPEER, 1L);
  set(c, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!ca_file.empty()) set(c, CURLOPT_CAINFO, ca_file.c_str());
  // Plain http goes only to a loopback address when it carries a key: no proxy from the
  // environment may stand in between.
  if (!url.https) set(c, CURLOPT_NOPROXY, "*");
  set(c, CURLOPT_NOSIGNAL, 1L);
  set(c, CURLOPT_CONNECTTIMEOUT, limits.connect_timeout_seconds);
  set(c, CURLOPT_TIMEOUT, limits.total_timeout_seconds);
  if (curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(limits.max_reply_bytes)) != CURLE_OK)
    throw IoError("http: libcurl refused an option");
  set(c, CURLOPT_HTTPHEADER, header_list.get());
  set(c, CURLOPT_POST, 1L);
  set(c, CURLOPT_POSTFIELDS, body.data());
  if (curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size())) != CURLE_OK)
    throw IoError("http: libcurl refused an option");
  if (curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, write_body) != CURLE_OK) throw IoError("http: libcurl refused an option");
  set(c, CURLOPT_WRITEDATA, static_cast<void*>(&sink));
  if (curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, check_header) != CURLE_OK)
    throw IoError("http: libcurl refused an option");
  set(c, CURLOPT_HEADERDATA, static_cast<void*>(&sink));

  const CURLcode rc = curl_easy_perform(c);
  const std::string prefix = "http: POST " + target + ": ";
  if (!sink.header_problem.empty()) throw IoError(prefix + sink.header_problem);
  if (sink.over_limit || rc == CURLE_FILESIZE_EXCEEDED)
    throw IoError(prefix + "the reply is larger than the limit of " + std::to_string(limits.max_reply_bytes) +
                  " bytes");
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw IoError(prefix + "no complete reply within " + std::to_string(limits.total_timeout_seconds) +
                  " s (connect limit " + std::to_string(limits.connect_timeout_seconds) + " s): " + error);
  if (rc != CURLE_OK) throw IoError(prefix + meaning(rc) + (error[0] ? std::string(" (") + error + ")" : std::string()));
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  HttpResponse r;
  r.status = static_cast<int>(status);
  r.body = std::move(sink.body);
  return r;
}

}  // namespace hetrec::tune

// The LLM-backed proposer's client against servers started by the test on 127.0.0.1:
// the request it sends (chat-completions JSON with the kernel source, resources, profile
// and hardware; bearer key), the reply it parses (Content-Length and chunked), and every
// way a remote service can fail it: a reply past the size bound, a bad Content-Length,
// broken chunked encoding, invalid JSON, a reply slower than the timeout, an untrusted
// or mismatched certificate. Each is an IoError with a clear message, and
// propose_kernel_rewrite turns it into a missing candidate, never an exception. A key
// over plain http to a non-loopback address is refused before any connection. The
// returned kernel's gate is tests/tune/test_gate.cpp (CPU) and test_gate_gpu.cpp.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "loopback_server.h"
#include "tls_test_server.h"
#include "tune/http_client.h"
#include "tune/llm_proposer.h"

namespace hetrec::tune {
namespace {

using test::LoopbackServer;
using test::TlsServer;

const std::string kKernel = "template <class Row> __global__ void k(Row* p) { p[threadIdx.x] = Row(); }\n";

std::string completion_json(const std::string& content = "Here it is:\n```cuda\n" + kKernel + "```\nDone.") {
  const nlohmann::json j = {{"id", "chatcmpl-1"},
                            {"object", "chat.completion"},
                            {"choices", {{{"index", 0},
                                          {"message", {{"role", "assistant"}, {"content", content}}},
                                          {"finish_reason", "stop"}}}}};
  return j.dump();
}

std::string ok_response(const std::string& body) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

std::string chunked(const std::string& body, std::size_t piece) {
  std::string out;
  for (std::size_t i = 0; i < body.size(); i += piece) {
    const std::string part = body.substr(i, piece);
    char size[32];
    std::snprintf(size, sizeof size, "%zx", part.size());
    out += std::string(size) + "\r\n" + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

KernelRewriteRequest request() {
  KernelRewriteRequest r;
  r.kernel = "embedding_bag_forward";
  r.header_name = "tunable/embedding_forward/embedding_bag_forward_kernel.cuh";
  r.header_text = "// the current kernel source, marker 7f3a\n";
  r.signature = "embedding_bag_forward_kernel<Row, Out, VEC, UNITS, IDS_IN_FLIGHT, BLOCK_THREADS>";
  r.resources = "registers 40, local 0 B";
  r.profile = "best 1500.0 us; floor 1375.0 us";
  r.hardware = "NVIDIA H200 SXM: 132 SMs";
  return r;
}

// Limits small enough for the tests to run in a second or two.
HttpLimits test_limits() {
  HttpLimits l;
  l.max_reply_bytes = 64 << 10;
  l.connect_timeout_seconds = 2;
  l.total_timeout_seconds = 5;
  return l;
}

// The IoError request_kernel_rewrite throws against a server sending `response`.
std::string io_error_for(const std::string& response, const HttpLimits& limits = test_limits(), int delay_ms = 0) {
  LoopbackServer server(response, delay_ms);
  const LlmEndpoint e{server.url(), "", "m", ""};
  try {
    request_kernel_rewrite(e, request(), limits);
  } catch (const IoError& err) {
    return err.what();
  }
  ADD_FAILURE() << "expected an IoError for the response " << response.substr(0, 120);
  return "";
}

TEST(LlmProposer, SendsTheChatRequestAndReturnsTheCodeBlock) {
  LoopbackServer server(ok_response(completion_json()));
  const LlmEndpoint e{server.url(), "sk-test", "kernel-model", ""};
  EXPECT_EQ(request_kernel_rewrite(e, request(), test_limits()), kKernel);

  const std::string sent = server.request();
  EXPECT_EQ(sent.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0), 0u) << sent.substr(0, 200);
  EXPECT_NE(sent.find("Authorization: Bearer sk-test\r\n"), std::string::npos);  // loopback: allowed
  EXPECT_NE(sent.find("Content-Type: application/json\r\n"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(sent.substr(sent.find("\r\n\r\n") + 4));
  EXPECT_EQ(j["model"], "kernel-model");
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["messages"][0]["role"], "system");
  const std::string user = j["messages"][1]["content"];
  for (const char* part : {"marker 7f3a", "registers 40", "floor 1375.0 us", "132 SMs", "IDS_IN_FLIGHT"})
    EXPECT_NE(user.find(part), std::string::npos) << part;
}

TEST(LlmProposer, ReadsChunkedResponses) {
  LoopbackServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(completion_json(), 97));
  const LlmEndpoint e{server.url(), "", "m", ""};
  EXPECT_EQ(request_kernel_rewrite(e, request(), test_limits()), kKernel);
  EXPECT_EQ(server.request().find("Authorization"), std::string::npos);  // no key, no header
}

TEST(LlmProposer, ErrorStatusIsAnIoErrorWithTheStatus) {
  const std::string what = io_error_for("HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nbad key here");
  EXPECT_NE(what.find("401"), std::string::npos) << what;
  EXPECT_NE(what.find("bad key here"), std::string::npos) << what;
}

TEST(LlmProposer, OversizedRepliesAreRefusedAtTheBound) {
  const HttpLimits limits = test_limits();
  const std::string big(limits.max_reply_bytes + 1, 'x');
  // Announced by Content-Length: refused before the body is read.
  std::string what = io_error_for(ok_response(big), limits);
  EXPECT_NE(what.find("larger than the limit of " + std::to_string(limits.max_reply_bytes) + " bytes"),
            std::string::npos)
      << what;
  // Streamed without a length (chunked): cut off once past the bound.
  what = io_error_for("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(big, 4096), limits);
  EXPECT_NE(what.find("larger than the limit"), std::string::npos) << what;
  // Streamed until the server closes.
  what = io_error_for("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + big, limits);
  EXPECT_NE(what.find("larger than the limit"), std::string::npos) << what;
}

TEST(LlmProposer, MalformedLengthsAndChunksAreIoErrors) {
  const std::string body = completion_json();
  const std::string size = std::to_string(body.size());
  // A Content-Length that is no number, a negative one, one that overflows, two that differ.
  // (libcurl refuses a negative one itself, and takes a huge one for a reply past the bound.)
  for (const auto& [length, expect] :
       {std::pair<std::string, std::string>{"12abc", "malformed Content-Length '12abc': expected a decimal byte count"},
        {"0x10", "malformed Content-Length '0x10'"},
        {"-5", "not a valid HTTP reply (Invalid Content-Length"},
        {"99999999999999999999999", "larger than the limit"}}) {
    const std::string what = io_error_for("HTTP/1.1 200 OK\r\nContent-Length: " + length + "\r\n\r\n" + body);
    EXPECT_NE(what.find(expect), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1"), std::string::npos) << what;  // names the URL
  }
  std::string what = io_error_for("HTTP/1.1 200 OK\r\nContent-Length: " + size + "\r\nContent-Length: 7\r\n\r\n" + body);
  EXPECT_NE(what.find("conflicting Content-Length headers (" + size + " and 7)"), std::string::npos) << what;
  // A Content-Length longer than what the server sends before closing.
  what = io_error_for("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size() + 100) + "\r\n\r\n" + body);
  EXPECT_NE(what.find("the reply ended before its announced length"), std::string::npos) << what;
  // A chunk size that is not hex, and a chunk longer than its data.
  what = io_error_for("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_NE(what.find("chunked"), std::string::npos) << what;
  what = io_error_for("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffff\r\n" + body);
  EXPECT_NE(what.find("the reply ended before its announced length or its last chunk"), std::string::npos) << what;
  // No HTTP at all, and an endless header.
  what = io_error_for("hello\r\n\r\n");
  EXPECT_NE(what.find("not a valid HTTP reply"), std::string::npos) << what;
  what = io_error_for("HTTP/1.1 200 OK\r\n" + std::string(200, 'X') + ": " + std::string(80 << 10, 'y') + "\r\n\r\n");
  EXPECT_NE(what.find("the reply's headers exceed 65536 bytes"), std::string::npos) << what;
}

TEST(LlmProposer, InvalidJsonAndRepliesWithoutCodeAreIoErrors) {
  std::string what = io_error_for(ok_response("{\"choices\": [ {\"message\": "));
  EXPECT_NE(what.find("not JSON"), std::string::npos) << what;
  what = io_error_for(ok_response("[1, 2, 3]"));
  EXPECT_NE(what.find("no 'choices'"), std::string::npos) << what;
  what = io_error_for(ok_response(completion_json("I cannot help with that.")));
  EXPECT_NE(what.find("no fenced code block"), std::string::npos) << what;
  const nlohmann::json cut = {{"choices", {{{"message", {{"content", "```cuda\nvoid k("}}}, {"finish_reason", "length"}}}}};
  what = io_error_for(ok_response(cut.dump()));
  EXPECT_NE(what.find("length limit"), std::string::npos) << what;
  what = io_error_for(ok_response(completion_json("```cuda\n#include \"/etc/passwd\"\n```")));
  EXPECT_NE(what.find("#include"), std::string::npos) << what;
  EXPECT_THROW(chat_content("{\"choices\": [7]}"), IoError);
  EXPECT_THROW(chat_content("{\"choices\": [{\"message\": \"text\"}]}"), IoError);
}

TEST(LlmProposer, ASlowReplyEndsAtTheTimeout) {
  HttpLimits limits = test_limits();
  limits.total_timeout_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  // The server answers after 4 s (or when the client hangs up).
  const std::string what = io_error_for(ok_response(completion_json()), limits, 4000);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(what.find("no complete reply within 1 s"), std::string::npos) << what;
  EXPECT_LT(seconds, 3.5);
}

TEST(LlmProposer, FailuresCostTheCandidateNotTheSession) {
  LoopbackServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nnot-hex\r\n");
  const LlmEndpoint e{server.url(), "", "m", ""};
  LlmProposal p;
  EXPECT_NO_THROW(p = propose_kernel_rewrite(e, request(), test_limits()));
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(p.header.empty());
  EXPECT_NE(p.error.find(server.url().substr(0, 16)), std::string::npos) << p.error;

  LoopbackServer good(ok_response(completion_json()));
  p = propose_kernel_rewrite({good.url(), "", "m", ""}, request(), test_limits());
  EXPECT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p.header, kKernel);
}

TEST(LlmProposer, KeyRuleIsAPureCheckOnTheUrl) {
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_TRUE(is_loopback_host("LocalHost"));
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.255.3.4"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_FALSE(is_loopback_host("128.0.0.1"));
  EXPECT_FALSE(is_loopback_host("192.0.2.1"));
  EXPECT_FALSE(is_loopback_host("127.0.0.1.example.com"));
  EXPECT_FALSE(is_loopback_host("0x7f000001"));
  EXPECT_FALSE(is_loopback_host("::ffff:10.0.0.1"));
  EXPECT_FALSE(is_loopback_host("localhost.example.com"));

  const auto allowed = [](const std::string& url) {
    check_key_transport(parse_http_url(url, "X"), true, "X");
    return true;
  };
  EXPECT_TRUE(allowed("https://api.example.com/v1/chat/completions"));
  EXPECT_TRUE(allowed("http://127.0.0.1:8000/v1"));
  EXPECT_TRUE(allowed("http://localhost/v1"));
  EXPECT_TRUE(allowed("http://[::1]:8000/v1"));
  check_key_transport(parse_http_url("http://192.0.2.1/v1", "X"), false, "X");  // no key: nothing to protect
  try {
    check_key_transport(parse_http_url("http://192.0.2.1:8000/v1", "HETREC_TUNE_LLM_URL"), true, "HETREC_TUNE_LLM_URL");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("http://192.0.2.1:8000/v1"), std::string::npos) << what;
    EXPECT_NE(what.find("loopback"), std::string::npos) << what;
    EXPECT_NE(what.find("https"), std::string::npos) << what;
  }
}

TEST(LlmProposer, AKeyForAPlainHttpRemoteIsRefusedBeforeConnecting) {
  // 192.0.2.1 is TEST-NET-1 (RFC 5737): nothing answers there, so a client that tried to
  // connect would fail with an IoError after the connect timeout. The refusal is a
  // ConfigError, at once: the check runs before any connection.
  HttpLimits limits = test_limits();
  limits.connect_timeout_seconds = 3;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(request_kernel_rewrite({"http://192.0.2.1/v1/chat/completions", "sk-secret", "m", ""}, request(), limits),
               ConfigError);
  EXPECT_THROW(http_post(parse_http_url("http://192.0.2.1/v1", "X"), {{"authorization", "Bearer k"}}, "{}", limits),
               ConfigError);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
}

TEST(LlmProposer, UrlParsing) {
  HttpUrl u = parse_http_url("http://localhost:8080/v1/chat/completions", "X");
  EXPECT_FALSE(u.https);
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.path, "/v1/chat/completions");
  EXPECT_EQ(parse_http_url("http://example", "X").port, 80);
  EXPECT_EQ(parse_http_url("http://example", "X").path, "/");
  u = parse_http_url("https://api.example.com/v1", "X");
  EXPECT_TRUE(u.https);
  EXPECT_EQ(u.port, 443);
  EXPECT_EQ(u.text(), "https://api.example.com:443/v1");
  u = parse_http_url("http://[::1]:9000/x", "X");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.text(), "http://[::1]:9000/x");
  for (const char* bad : {"ftp://x", "file:///etc/passwd", "http://x:99999/", "http://x:/", "http://", "http:///v1",
                          "http://127.0.0.1@evil.example/v1", "http://user:pw@127.0.0.1/", "http://a b/",
                          "http://x/a b", "http://[::1/", "http://[nothex]/", "http://x%00y/", "gopher://x"})
    EXPECT_THROW(parse_http_url(bad, "X"), ConfigError) << bad;
}

TEST(LlmProposer, EndpointFromTheEnvironment) {
  for (const char* v : {"HETREC_TUNE_LLM_URL", "HETREC_TUNE_LLM_MODEL", "HETREC_TUNE_LLM_KEY", "HETREC_TUNE_LLM_CA_FILE"})
    ::unsetenv(v);
  EXPECT_FALSE(llm_endpoint_from_env().has_value());  // nothing needed otherwise
  ::setenv("HETREC_TUNE_LLM_URL", "http://127.0.0.1:9/v1/chat/completions", 1);
  EXPECT_THROW(llm_endpoint_from_env(), ConfigError);  // a URL without a model
  ::setenv("HETREC_TUNE_LLM_MODEL", "m", 1);
  ::setenv("HETREC_TUNE_LLM_KEY", "k", 1);
  const auto e = llm_endpoint_from_env();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->model, "m");
  EXPECT_EQ(e->key, "k");
  ::setenv("HETREC_TUNE_LLM_URL", "http://192.0.2.1/v1/chat/completions", 1);
  EXPECT_THROW(llm_endpoint_from_env(), ConfigError);  // a key in clear text to a remote host
  ::setenv("HETREC_TUNE_LLM_URL", "https://192.0.2.1/v1/chat/completions", 1);
  EXPECT_TRUE(llm_endpoint_from_env().has_value());
  ::setenv("HETREC_TUNE_LLM_CA_FILE", "/nonexistent/ca.pem", 1);
  EXPECT_THROW(llm_endpoint_from_env(), ConfigError);
  for (const char* v : {"HETREC_TUNE_LLM_URL", "HETREC_TUNE_LLM_MODEL", "HETREC_TUNE_LLM_KEY", "HETREC_TUNE_LLM_CA_FILE"})
    ::unsetenv(v);
}

TEST(LlmProposer, ConnectionRefusedIsAnIoError) {
  // Bind a port, close it, then connect to it: nothing listens.
  int port = 0;
  {
    LoopbackServer probe("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    port = probe.port();
    EXPECT_THROW(request_kernel_rewrite({probe.url(), "", "m", ""}, request(), test_limits()), IoError);  // no JSON
  }
  const LlmEndpoint e{"http://127.0.0.1:" + std::to_string(port) + "/", "", "m", ""};
  EXPECT_THROW(request_kernel_rewrite(e, request(), test_limits()), IoError);
}

class LlmProposerTls : public ::testing::Test {
 protected:
  void SetUp() override {
    cert_ = (std::filesystem::temp_directory_path() / ("hetrec_proposer_tls_" + std::to_string(::getpid()) + "_" +
                                                       ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                                                       ".pem"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(cert_); }
  std::string cert_;
};

TEST_F(LlmProposerTls, AnUntrustedCertificateIsRefused) {
  TlsServer server(ok_response(completion_json()), cert_);
  const LlmEndpoint e{"https://127.0.0.1:" + std::to_string(server.port()) + "/v1", "sk-test", "m", ""};
  try {
    request_kernel_rewrite(e, request(), test_limits());
    FAIL() << "expected an IoError: the certificate is self-signed and not trusted";
  } catch (const IoError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("certificate"), std::string::npos) << what;
  }
  EXPECT_FALSE(server.handshake_done());
}

TEST_F(LlmProposerTls, ATrustedCertificateWorksAndItsHostNameIsChecked) {
  {
    TlsServer server(ok_response(completion_json()), cert_);
    const LlmEndpoint e{"https://127.0.0.1:" + std::to_string(server.port()) + "/v1", "sk-test", "m", cert_};
    EXPECT_EQ(request_kernel_rewrite(e, request(), test_limits()), kKernel);
    EXPECT_TRUE(server.handshake_done());
  }
  // The same trusted certificate, reached under a name it was not issued for.
  TlsServer server(ok_response(completion_json()), cert_);
  const LlmEndpoint e{"https://localhost:" + std::to_string(server.port()) + "/v1", "sk-test", "m", cert_};
  try {
    request_kernel_rewrite(e, request(), test_limits());
    FAIL() << "expected an IoError: the certificate names 127.0.0.1 only";
  } catch (const IoError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("certificate"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace hetrec::tune

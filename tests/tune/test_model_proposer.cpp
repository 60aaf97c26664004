// The model-backed proposer's client against a local HTTP server started by the test:
// the request it sends (chat-completions JSON with the kernel source, resources, profile
// and hardware; bearer key), the reply it parses (Content-Length and chunked), and its
// errors. The returned kernel's compile/verify/time gate is the same as every
// candidate's (tests/tune/test_gate_gpu.cpp).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.h"
#include "tune/http_client.h"
#include "tune/model_proposer.h"

namespace hetrec::tune {
namespace {

// Serves one connection: reads the request (headers and Content-Length body), keeps it,
// answers with `response` verbatim.
class OneShotServer {
 public:
  explicit OneShotServer(std::string response) : response_(std::move(response)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 1) != 0)
      throw std::runtime_error("test server: cannot listen");
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~OneShotServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string request() {
    if (thread_.joinable()) thread_.join();
    return request_;
  }

 private:
  void serve() {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    char buf[65536];
    while (true) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      request_.append(buf, static_cast<std::size_t>(n));
      const auto head = request_.find("\r\n\r\n");
      if (head == std::string::npos) continue;
      const auto cl = request_.find("Content-Length: ");
      const std::size_t length = cl == std::string::npos ? 0 : std::stoul(request_.substr(cl + 16));
      if (request_.size() >= head + 4 + length) break;
    }
    ::send(c, response_.data(), response_.size(), MSG_NOSIGNAL);
    ::close(c);
  }

  std::string response_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
};

const std::string kKernel = "template <class Row> __global__ void k(Row* p) { p[threadIdx.x] = Row(); }\n";

std::string completion_json() {
  const nlohmann::json j = {
      {"id", "chatcmpl-1"},
      {"object", "chat.completion"},
      {"choices", {{{"index", 0},
                    {"message", {{"role", "assistant"}, {"content", "Here it is:\n```cuda\n" + kKernel + "```\nDone."}}},
                    {"finish_reason", "stop"}}}}};
  return j.dump();
}

KernelRewriteRequest request() {
  KernelRewriteRequest r;
  r.kernel = "embedding_bag_forward";
  r.header_name = "kernels/embedding_bag_forward_kernel.cuh";
  r.header_text = "// the current kernel source, marker 7f3a\n";
  r.signature = "embedding_bag_forward_kernel<Row, Out, VEC, UNITS, IDS_IN_FLIGHT, BLOCK_THREADS>";
  r.resources = "registers 40, local 0 B";
  r.profile = "best 1500.0 us; floor 1375.0 us";
  r.hardware = "NVIDIA H200 SXM: 132 SMs";
  return r;
}

TEST(ModelProposer, SendsTheChatRequestAndReturnsTheCodeBlock) {
  const std::string body = completion_json();
  OneShotServer server("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body);
  const ModelEndpoint e{"http://127.0.0.1:" + std::to_string(server.port()) + "/v1/chat/completions", "sk-test",
                        "kernel-model"};
  EXPECT_EQ(request_kernel_rewrite(e, request(), 10), kKernel);

  const std::string sent = server.request();
  EXPECT_EQ(sent.rfind("POST /v1/chat/completions HTTP/1.1\r\n", 0), 0u) << sent.substr(0, 200);
  EXPECT_NE(sent.find("Authorization: Bearer sk-test\r\n"), std::string::npos);
  EXPECT_NE(sent.find("Content-Type: application/json\r\n"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(sent.substr(sent.find("\r\n\r\n") + 4));
  EXPECT_EQ(j["model"], "kernel-model");
  ASSERT_EQ(j["messages"].size(), 2u);
  EXPECT_EQ(j["messages"][0]["role"], "system");
  const std::string user = j["messages"][1]["content"];
  for (const char* part : {"marker 7f3a", "registers 40", "floor 1375.0 us", "132 SMs", "IDS_IN_FLIGHT"})
    EXPECT_NE(user.find(part), std::string::npos) << part;
}

TEST(ModelProposer, ReadsChunkedResponses) {
  const std::string body = completion_json();
  const std::size_t half = body.size() / 2;
  char a[32], b[32];
  std::snprintf(a, sizeof a, "%zx", half);
  std::snprintf(b, sizeof b, "%zx", body.size() - half);
  OneShotServer server("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(a) + "\r\n" +
                       body.substr(0, half) + "\r\n" + b + "\r\n" + body.substr(half) + "\r\n0\r\n\r\n");
  const ModelEndpoint e{"http://127.0.0.1:" + std::to_string(server.port()) + "/v1/chat/completions", "", "m"};
  EXPECT_EQ(request_kernel_rewrite(e, request(), 10), kKernel);
  EXPECT_EQ(server.request().find("Authorization"), std::string::npos);  // no key, no header
}

TEST(ModelProposer, ErrorStatusAndRepliesWithoutCodeAreIoErrors) {
  {
    OneShotServer server("HTTP/1.1 401 Unauthorized\r\nContent-Length: 12\r\n\r\nbad key here");
    const ModelEndpoint e{"http://127.0.0.1:" + std::to_string(server.port()) + "/v1", "k", "m"};
    try {
      request_kernel_rewrite(e, request(), 10);
      FAIL() << "expected IoError";
    } catch (const IoError& err) {
      EXPECT_NE(std::string(err.what()).find("401"), std::string::npos);
    }
  }
  const nlohmann::json no_code = {{"choices", {{{"message", {{"content", "I cannot help with that."}}}}}}};
  EXPECT_THROW(first_code_block(chat_content(no_code.dump())), IoError);
  EXPECT_THROW(chat_content("{\"choices\": []}"), IoError);
  EXPECT_THROW(chat_content("not json"), IoError);
}

TEST(ModelProposer, UrlParsing) {
  const HttpUrl u = parse_http_url("http://localhost:8080/v1/chat/completions", "X");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.path, "/v1/chat/completions");
  EXPECT_EQ(parse_http_url("http://example", "X").port, 80);
  EXPECT_EQ(parse_http_url("http://example", "X").path, "/");
  EXPECT_THROW(parse_http_url("https://api.example.com/v1", "X"), ConfigError);
  EXPECT_THROW(parse_http_url("ftp://x", "X"), ConfigError);
  EXPECT_THROW(parse_http_url("http://x:99999/", "X"), ConfigError);
}

TEST(ModelProposer, EndpointFromTheEnvironment) {
  ::unsetenv("HETREC_TUNE_LLM_URL");
  ::unsetenv("HETREC_TUNE_LLM_MODEL");
  ::unsetenv("HETREC_TUNE_LLM_KEY");
  EXPECT_FALSE(model_endpoint_from_env().has_value());  // nothing needed otherwise
  ::setenv("HETREC_TUNE_LLM_URL", "http://127.0.0.1:9/v1/chat/completions", 1);
  EXPECT_THROW(model_endpoint_from_env(), ConfigError);  // a URL without a model
  ::setenv("HETREC_TUNE_LLM_MODEL", "m", 1);
  ::setenv("HETREC_TUNE_LLM_KEY", "k", 1);
  const auto e = model_endpoint_from_env();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->model, "m");
  EXPECT_EQ(e->key, "k");
  ::unsetenv("HETREC_TUNE_LLM_URL");
  ::unsetenv("HETREC_TUNE_LLM_MODEL");
  ::unsetenv("HETREC_TUNE_LLM_KEY");
}

TEST(ModelProposer, ConnectionRefusedIsAnIoError) {
  // Bind a port, close it, then connect to it: nothing listens.
  int port = 0;
  {
    OneShotServer probe("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    port = probe.port();
    const ModelEndpoint e{"http://127.0.0.1:" + std::to_string(port) + "/", "", "m"};
    EXPECT_THROW(request_kernel_rewrite(e, request(), 10), IoError);  // empty body: no JSON
  }
  const ModelEndpoint e{"http://127.0.0.1:" + std::to_string(port) + "/", "", "m"};
  EXPECT_THROW(request_kernel_rewrite(e, request(), 10), IoError);
}

}  // namespace
}  // namespace hetrec::tune

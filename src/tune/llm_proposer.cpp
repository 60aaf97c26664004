#include "tune/llm_proposer.h"

#include <cstdlib>
#include <fstream>

#include "core/error.h"

namespace hetrec::tune {

namespace {
constexpr const char* kUrlVariable = "HETREC_TUNE_LLM_URL";
}  // namespace

HttpLimits proposer_limits() {
  HttpLimits l;
  l.total_timeout_seconds = kProposerTimeoutSeconds;
  return l;
}

std::optional<LlmEndpoint> llm_endpoint_from_env() {
  const char* url = std::getenv(kUrlVariable);
  if (!url || !*url) return std::nullopt;
  LlmEndpoint e;
  e.url = url;
  if (const char* key = std::getenv("HETREC_TUNE_LLM_KEY")) e.key = key;
  check_key_transport(parse_http_url(e.url, kUrlVariable), !e.key.empty(), kUrlVariable);
  const char* model = std::getenv("HETREC_TUNE_LLM_MODEL");
  if (!model || !*model) throw ConfigError("HETREC_TUNE_LLM_URL is set but HETREC_TUNE_LLM_MODEL is not: name the model");
  e.model = model;
  if (const char* ca = std::getenv("HETREC_TUNE_LLM_CA_FILE"); ca && *ca) {
    e.ca_file = ca;
    if (!std::ifstream(e.ca_file))
      throw ConfigError("HETREC_TUNE_LLM_CA_FILE = '" + e.ca_file + "': cannot open the certificate file");
  }
  return e;
}

nlohmann::json build_chat_request(const LlmEndpoint& endpoint, const KernelRewriteRequest& r) {
  const std::string system =
      "You optimise GPU kernels. Reply with the complete rewritten header file in one fenced code block and nothing "
      "else. Keep the kernel's name, template parameters and argument list exactly; the result must stay correct "
      "for every template instantiation: it is compiled with NVRTC, checked against a double-precision reference on "
      "several random inputs (empty bags, one-row tables and hot rows among them) and timed, and discarded if it is "
      "wrong or slower.";
  const std::string user = "Kernel: " + r.kernel + "\nFile: " + r.header_name + "\n\nSignature to keep:\n" +
                           r.signature + "\n\nHardware:\n" + r.hardware + "\n\nResource report of the best variant:\n" +
                           r.resources + "\n\nProfile:\n" + r.profile + "\n\nCurrent source:\n```cuda\n" +
                           r.header_text + "\n```\n";
  return {{"model", endpoint.model},
          {"messages", nlohmann::json::array({{{"role", "system"}, {"content", system}},
                                              {{"role", "user"}, {"content", user}}})},
          {"temperature", 0.2}};
}

std::string request_kernel_rewrite(const LlmEndpoint& endpoint, const KernelRewriteRequest& request,
                                   const HttpLimits& limits) {
  const HttpUrl url = parse_http_url(endpoint.url, kUrlVariable);
  check_key_transport(url, !endpoint.key.empty(), kUrlVariable);
  std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", "application/json"}};
  if (!endpoint.key.empty()) headers.emplace_back("Authorization", "Bearer " + endpoint.key);
  std::string body;
  try {
    body = build_chat_request(endpoint, request).dump();
  } catch (const nlohmann::json::exception& e) {
    throw IoError("model proposer: cannot encode the request for " + endpoint.url + ": " + e.what());
  }
  const HttpResponse r = http_post(url, headers, body, limits, endpoint.ca_file);
  if (r.status < 200 || r.status >= 300) {
    // At most this much of an error body goes into the message (and the attempt log).
    constexpr std::size_t kErrorBodyExcerpt = 200;
    std::string excerpt;
    for (char c : r.body.substr(0, kErrorBodyExcerpt))
      excerpt += (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) ? '?' : c;
    throw IoError("model proposer: " + endpoint.url + " answered HTTP " + std::to_string(r.status) + ": " + excerpt);
  }
  try {
    return proposed_header(r.body);
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + " (reply of " + endpoint.url + ")");
  }
}

LlmProposal propose_kernel_rewrite(const LlmEndpoint& endpoint, const KernelRewriteRequest& request,
                                     const HttpLimits& limits) {
  LlmProposal p;
  try {
    p.header = request_kernel_rewrite(endpoint, request, limits);
  } catch (const IoError& e) {
    p.error = e.what();
  }
  return p;
}

}  // namespace hetrec::tune

#include "tune/model_proposer.h"

#include <cstdlib>

#include "core/error.h"
#include "tune/http_client.h"

namespace hetrec::tune {

std::optional<ModelEndpoint> model_endpoint_from_env() {
  const char* url = std::getenv("HETREC_TUNE_LLM_URL");
  if (!url || !*url) return std::nullopt;
  ModelEndpoint e;
  e.url = url;
  (void)parse_http_url(e.url, "HETREC_TUNE_LLM_URL");
  if (const char* key = std::getenv("HETREC_TUNE_LLM_KEY")) e.key = key;
  const char* model = std::getenv("HETREC_TUNE_LLM_MODEL");
  if (!model || !*model) throw ConfigError("HETREC_TUNE_LLM_URL is set but HETREC_TUNE_LLM_MODEL is not: name the model");
  e.model = model;
  return e;
}

nlohmann::json build_chat_request(const ModelEndpoint& endpoint, const KernelRewriteRequest& r) {
  const std::string system =
      "You optimise GPU kernels. Reply with the complete rewritten header file in one fenced code block and nothing "
      "else. Keep the kernel's name, template parameters and argument list exactly; the result must stay correct "
      "for every template instantiation: it is compiled with NVRTC, checked against a double-precision reference on "
      "random inputs and timed, and discarded if it is wrong or slower.";
  const std::string user = "Kernel: " + r.kernel + "\nFile: " + r.header_name + "\n\nSignature to keep:\n" +
                           r.signature + "\n\nHardware:\n" + r.hardware + "\n\nResource report of the best variant:\n" +
                           r.resources + "\n\nProfile:\n" + r.profile + "\n\nCurrent source:\n```cuda\n" +
                           r.header_text + "\n```\n";
  return {{"model", endpoint.model},
          {"messages", nlohmann::json::array({{{"role", "system"}, {"content", system}},
                                              {{"role", "user"}, {"content", user}}})},
          {"temperature", 0.2}};
}

std::string chat_content(const std::string& response_body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(response_body);
  } catch (const nlohmann::json::parse_error& e) {
    throw IoError(std::string("model proposer: the response is not JSON: ") + e.what());
  }
  if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    throw IoError("model proposer: the response has no 'choices'");
  const nlohmann::json& c = j["choices"][0];
  if (!c.contains("message") || !c["message"].contains("content") || !c["message"]["content"].is_string())
    throw IoError("model proposer: choices[0] has no string message.content");
  return c["message"]["content"].get<std::string>();
}

std::string first_code_block(const std::string& content) {
  const auto open = content.find("```");
  if (open == std::string::npos) throw IoError("model proposer: the reply holds no fenced code block");
  const auto body = content.find('\n', open);
  if (body == std::string::npos) throw IoError("model proposer: unterminated code block");
  const auto close = content.find("```", body + 1);
  if (close == std::string::npos) throw IoError("model proposer: unterminated code block");
  return content.substr(body + 1, close - body - 1);
}

std::string request_kernel_rewrite(const ModelEndpoint& endpoint, const KernelRewriteRequest& request,
                                   int timeout_seconds) {
  const HttpUrl url = parse_http_url(endpoint.url, "HETREC_TUNE_LLM_URL");
  std::vector<std::pair<std::string, std::string>> headers = {{"Content-Type", "application/json"}};
  if (!endpoint.key.empty()) headers.emplace_back("Authorization", "Bearer " + endpoint.key);
  const HttpResponse r = http_post(url, headers, build_chat_request(endpoint, request).dump(), timeout_seconds);
  if (r.status < 200 || r.status >= 300)
    throw IoError("model proposer: " + endpoint.url + " answered HTTP " + std::to_string(r.status) + ": " +
                  r.body.substr(0, 200));
  return first_code_block(chat_content(r.body));
}

}  // namespace hetrec::tune

#pragma once
// The optional model-backed proposer: when HETREC_TUNE_LLM_URL names an
// OpenAI-compatible chat-completions endpoint, the tuner sends it the kernel source, the
// resource report, the measured profile and the hardware description, and takes the
// kernel header it returns as one more candidate. That candidate goes through exactly the
// same gate as the others (compile, verify against the reference, time).
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace hetrec::tune {

struct ModelEndpoint {
  std::string url;    // HETREC_TUNE_LLM_URL, e.g. http://127.0.0.1:8000/v1/chat/completions
  std::string key;    // HETREC_TUNE_LLM_KEY (sent as a bearer token when set)
  std::string model;  // HETREC_TUNE_LLM_MODEL (required with the URL)
};

// The endpoint from the environment; nullopt when HETREC_TUNE_LLM_URL is unset. Throws
// ConfigError when the URL is set but the model is not, or the URL is not plain http.
std::optional<ModelEndpoint> model_endpoint_from_env();

struct KernelRewriteRequest {
  std::string kernel;        // "embedding_bag_forward"
  std::string header_name;   // the file the reply replaces
  std::string header_text;   // its current text
  std::string signature;     // what must stay the same (template parameters, arguments)
  std::string resources;     // the compiler's resource report of the current best variant
  std::string profile;       // measured times, floor, best parameters
  std::string hardware;      // the hardware description
};

// The chat-completions request body.
nlohmann::json build_chat_request(const ModelEndpoint& endpoint, const KernelRewriteRequest& request);
// choices[0].message.content of a chat-completions response; throws IoError saying what
// is missing.
std::string chat_content(const std::string& response_body);
// The first fenced code block (``` ... ```) of a reply; throws IoError when there is none.
std::string first_code_block(const std::string& content);

// Sends the request and returns the rewritten header. Throws IoError on a failed
// exchange (status other than 2xx included).
std::string request_kernel_rewrite(const ModelEndpoint& endpoint, const KernelRewriteRequest& request,
                                   int timeout_seconds);

}  // namespace hetrec::tune

#pragma once
// The optional LLM-backed proposer: when HETREC_TUNE_LLM_URL names an
// OpenAI-compatible chat-completions endpoint, the tuner sends it the kernel source, the
// resource report, the measured profile and the hardware description, and takes the
// kernel header it returns as one more candidate. That candidate goes through the same
// gate as the others (compile, verify against the reference, time), verified on several
// independent input sets (tune/gate.h verification_sets). What is sent where, and what
// is trusted: SECURITY.md.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "tune/http_client.h"
#include "tune/proposer_reply.h"

namespace hetrec::tune {

struct LlmEndpoint {
  std::string url;    // HETREC_TUNE_LLM_URL, e.g. https://api.example.com/v1/chat/completions
  std::string key;    // HETREC_TUNE_LLM_KEY (sent as a bearer token when set)
  std::string model;  // HETREC_TUNE_LLM_MODEL (required with the URL)
  std::string ca_file;  // HETREC_TUNE_LLM_CA_FILE: trusted CAs (PEM) instead of the system's
};

// The bounds of one exchange with the model: the reply (a chat completion with one
// kernel header) within HttpLimits' default size; connected within 10 s; the whole
// answer within 300 s, since a model writing a header of tens of KB at tens of tokens a
// second takes minutes.
inline constexpr long kProposerTimeoutSeconds = 300;
HttpLimits proposer_limits();

// The endpoint from the environment; nullopt when HETREC_TUNE_LLM_URL is unset. Throws
// ConfigError when the URL is set but the model is not, the URL is not http[s]://, or a
// key would go over plain http to a host that is not a loopback address
// (check_key_transport), or HETREC_TUNE_LLM_CA_FILE names no readable file. Checked when
// `hetrec tune` starts, before any device work.
std::optional<LlmEndpoint> llm_endpoint_from_env();

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
nlohmann::json build_chat_request(const LlmEndpoint& endpoint, const KernelRewriteRequest& request);

// Sends the request and returns the rewritten header (proposed_header). Throws IoError on
// a failed exchange (transport, limits, status other than 2xx, a malformed reply) and
// ConfigError when the endpoint breaks check_key_transport (before connecting).
std::string request_kernel_rewrite(const LlmEndpoint& endpoint, const KernelRewriteRequest& request,
                                   const HttpLimits& limits);

// One proposal as the tuning loop takes it: the header, or why there is none.
struct LlmProposal {
  std::string header;  // empty when the exchange failed
  std::string error;   // the IoError's message when it failed
  bool ok() const { return error.empty(); }
};
// request_kernel_rewrite with every IoError turned into LlmProposal::error, so that a
// failing service costs one candidate, never the tuning session.
LlmProposal propose_kernel_rewrite(const LlmEndpoint& endpoint, const KernelRewriteRequest& request,
                                     const HttpLimits& limits);

}  // namespace hetrec::tune

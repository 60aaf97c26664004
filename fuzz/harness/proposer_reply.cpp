// Fuzz target: an LLM-backed proposer's reply (tune/proposer_reply.h), what a remote
// service sends back for the tuner to compile.
#include <string>

#include <nlohmann/json.hpp>

#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "tune/proposer_reply.h"

namespace hetrec::fuzz {

void proposer_reply(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const uint8_t mode = in.byte();
  const std::string rest(in.rest());
  // Mode bit 0: the rest is the message content, wrapped in a well-formed completion so
  // that mutations reach the code block and header checks; else the rest is the body.
  std::string body = rest;
  if (mode & 1) {
    nlohmann::json j = {{"choices", {{{"message", {{"role", "assistant"}, {"content", rest}}}}}}};
    try {
      body = j.dump();
    } catch (const nlohmann::json::exception&) {
      return;  // not UTF-8: no service can send it as a JSON string
    }
  }
  std::string header;
  try {
    header = tune::proposed_header(body);
  } catch (const IoError&) {
    return;  // the documented rejection: the tuning loop goes on without a candidate
  }
  // An accepted header is bounded, holds no fence and no NUL, and passes the check again.
  if (header.empty() || header.size() > tune::kMaxProposedHeaderBytes)
    finding("accepted a header of " + std::to_string(header.size()) + " bytes");
  if (header.find("```") != std::string::npos) finding("the accepted header holds a code fence");
  if (header.find('\0') != std::string::npos) finding("the accepted header holds a NUL byte");
  try {
    tune::check_proposed_header(header);
  } catch (const IoError& e) {
    finding(std::string("an accepted header fails its own check: ") + e.what());
  }
}

}  // namespace hetrec::fuzz

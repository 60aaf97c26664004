#pragma once
// The LLM-backed proposer's reply, taken apart: the chat-completions JSON, the message
// content, and the rewritten kernel header in its first fenced code block. Everything a
// remote service sends is checked here before the tuner compiles it; every failure is an
// IoError saying what was wrong (the tuning loop logs it and goes on without a
// candidate). Pure functions: no I/O.
#include <cstddef>
#include <string>

namespace hetrec::tune {

// The largest rewritten header accepted: the tuned kernels' headers are a few to a few
// tens of KB; ten times the largest with room to spare.
inline constexpr std::size_t kMaxProposedHeaderBytes = std::size_t{256} << 10;

// choices[0].message.content of a chat-completions response. Throws IoError when the body
// is not JSON, has no choices[0].message.content string, or the completion stopped at the
// model's length limit (finish_reason "length": the code is cut off).
std::string chat_content(const std::string& response_body);
// The first fenced code block (``` ... ```) of a reply; throws IoError when there is none
// or it is unterminated.
std::string first_code_block(const std::string& content);
// Throws IoError unless `header` is usable as a kernel header: not empty, at most
// kMaxProposedHeaderBytes, no NUL byte, and every #include naming either a standard
// header (<name>, letters, digits and '_') or a relative project path ("dir/file.h":
// letters, digits, '_', '-', '.', '/', no "..", not absolute), so that compiling it reads
// nothing outside the embedded sources.
void check_proposed_header(const std::string& header);
// first_code_block(chat_content(body)), checked by check_proposed_header.
std::string proposed_header(const std::string& response_body);

}  // namespace hetrec::tune

#include "tune/proposer_reply.h"

#include <cctype>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace hetrec::tune {

namespace {

constexpr const char* kWhat = "model proposer: ";

bool standard_header_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool project_path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
}

// The text of an #include line after the directive, trimmed; empty when `line` is not one.
bool include_target(const std::string& line, std::string& target) {
  std::size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (i >= line.size() || line[i] != '#') return false;
  ++i;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  if (line.compare(i, 7, "include") != 0) return false;
  i += 7;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  std::size_t end = line.size();
  while (end > i && std::isspace(static_cast<unsigned char>(line[end - 1]))) --end;
  target = line.substr(i, end - i);
  return true;
}

}  // namespace

std::string chat_content(const std::string& response_body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(response_body);
  } catch (const nlohmann::json::exception& e) {
    throw IoError(std::string(kWhat) + "the response is not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty())
    throw IoError(std::string(kWhat) + "the response has no 'choices'");
  const nlohmann::json& c = j["choices"][0];
  if (!c.is_object() || !c.contains("message") || !c["message"].is_object() || !c["message"].contains("content") ||
      !c["message"]["content"].is_string())
    throw IoError(std::string(kWhat) + "choices[0] has no string message.content");
  if (c.contains("finish_reason") && c["finish_reason"].is_string() && c["finish_reason"] == "length")
    throw IoError(std::string(kWhat) + "the completion stopped at the model's length limit (finish_reason "
                  "\"length\"): the code is cut off");
  return c["message"]["content"].get<std::string>();
}

std::string first_code_block(const std::string& content) {
  const auto open = content.find("```");
  if (open == std::string::npos) throw IoError(std::string(kWhat) + "the reply holds no fenced code block");
  const auto body = content.find('\n', open);
  if (body == std::string::npos) throw IoError(std::string(kWhat) + "unterminated code block");
  const auto close = content.find("```", body + 1);
  if (close == std::string::npos) throw IoError(std::string(kWhat) + "unterminated code block");
  return content.substr(body + 1, close - body - 1);
}

void check_proposed_header(const std::string& header) {
  if (header.find_first_not_of(" \t\r\n") == std::string::npos)
    throw IoError(std::string(kWhat) + "the code block is empty");
  if (header.size() > kMaxProposedHeaderBytes)
    throw IoError(std::string(kWhat) + "the code block has " + std::to_string(header.size()) +
                  " bytes, more than the limit of " + std::to_string(kMaxProposedHeaderBytes));
  if (header.find('\0') != std::string::npos) throw IoError(std::string(kWhat) + "the code block holds a NUL byte");
  std::size_t begin = 0;
  int line_number = 1;
  while (begin < header.size()) {
    const std::size_t nl = header.find('\n', begin);
    const std::size_t end = nl == std::string::npos ? header.size() : nl;
    std::string target;
    if (include_target(header.substr(begin, end - begin), target)) {
      const std::string where = std::string(kWhat) + "line " + std::to_string(line_number) + " of the code block: ";
      const bool angled = target.size() > 2 && target.front() == '<' && target.back() == '>';
      const bool quoted = target.size() > 2 && target.front() == '"' && target.back() == '"';
      if (!angled && !quoted) throw IoError(where + "#include of '" + target + "': expected <name> or \"path\"");
      const std::string name = target.substr(1, target.size() - 2);
      bool ok = true;
      for (char ch : name) ok = ok && (angled ? standard_header_char(ch) : project_path_char(ch));
      if (quoted && (name.front() == '/' || name.find("..") != std::string::npos)) ok = false;
      if (!ok)
        throw IoError(where + "#include of " + target + ": only standard headers (<name>) and relative project "
                      "paths (\"dir/file.h\", no \"..\") are accepted");
    }
    ++line_number;
    begin = end + 1;
  }
}

std::string proposed_header(const std::string& response_body) {
  std::string header = first_code_block(chat_content(response_body));
  check_proposed_header(header);
  return header;
}

}  // namespace hetrec::tune

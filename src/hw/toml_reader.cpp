#include "hw/toml_reader.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace hetrec::inline hw {

namespace {

std::string type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    case toml::node_type::none:
      break;
  }
  return "nothing";
}

}  // namespace

TomlTableReader::TomlTableReader(const toml::table& table, std::string file, std::string prefix)
    : table_(&table), file_(std::move(file)), prefix_(std::move(prefix)) {}

std::string TomlTableReader::key_path(std::string_view key) const {
  if (prefix_.empty()) return std::string(key);
  return prefix_ + "." + std::string(key);
}

std::size_t TomlTableReader::line_of(std::string_view key) const {
  if (const toml::node* node = table_->get(key)) return node->source().begin.line;
  return table_->source().begin.line;
}

void TomlTableReader::fail(std::string_view key, const std::string& what) const {
  throw ConfigError(file_ + ":" + std::to_string(line_of(key)) + ": key '" + key_path(key) + "': " + what);
}

bool TomlTableReader::has(std::string_view key) const { return table_->get(key) != nullptr; }

const toml::node* TomlTableReader::find(std::string_view key) {
  const toml::node* node = table_->get(key);
  if (node) read_.emplace(key);
  return node;
}

const toml::node& TomlTableReader::require(std::string_view key) {
  const toml::node* node = find(key);
  if (!node) fail(key, "missing (required)");
  return *node;
}

std::string TomlTableReader::string(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_string()) fail(key, "expected a string, found " + type_name(node));
  return node.as_string()->get();
}

std::optional<std::string> TomlTableReader::optional_string(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return string(key);
}

double TomlTableReader::number(std::string_view key) {
  const toml::node& node = require(key);
  if (node.is_integer()) return static_cast<double>(node.as_integer()->get());
  if (node.is_floating_point()) return node.as_floating_point()->get();
  fail(key, "expected a number, found " + type_name(node));
}

std::optional<double> TomlTableReader::optional_number(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return number(key);
}

int64_t TomlTableReader::integer(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_integer()) fail(key, "expected an integer, found " + type_name(node));
  return node.as_integer()->get();
}

std::optional<int64_t> TomlTableReader::optional_integer(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

bool TomlTableReader::boolean(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_boolean()) fail(key, "expected true or false, found " + type_name(node));
  return node.as_boolean()->get();
}

std::optional<bool> TomlTableReader::optional_boolean(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

SourcedNumber TomlTableReader::sourced(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_table())
    fail(key, "expected { value = <number>, source = \"<where the number comes from>\" }, found " +
                  type_name(node));
  TomlTableReader inner(*node.as_table(), file_, key_path(key));
  SourcedNumber out;
  out.value = inner.number("value");
  out.source = inner.string("source");
  if (out.source.empty()) inner.fail("source", "must name where the number comes from");
  inner.finish();
  return out;
}

std::optional<SourcedNumber> TomlTableReader::optional_sourced(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return sourced(key);
}

SourcedNumber TomlTableReader::sourced_integer(std::string_view key) {
  SourcedNumber out = sourced(key);
  const toml::node* value = table_->get(key)->as_table()->get("value");
  if (!value->is_integer()) {
    TomlTableReader inner(*table_->get(key)->as_table(), file_, key_path(key));
    inner.fail("value", "expected an integer, found " + type_name(*value));
  }
  return out;
}

TomlTableReader TomlTableReader::table(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_table()) fail(key, "expected a table, found " + type_name(node));
  return TomlTableReader(*node.as_table(), file_, key_path(key));
}

std::optional<TomlTableReader> TomlTableReader::optional_table(std::string_view key) {
  if (!has(key)) return std::nullopt;
  return table(key);
}

std::vector<TomlTableReader> TomlTableReader::array_of_tables(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_array_of_tables())
    fail(key, "expected an array of tables ([[" + key_path(key) + "]]), found " + type_name(node));
  std::vector<TomlTableReader> out;
  const toml::array& array = *node.as_array();
  for (std::size_t i = 0; i < array.size(); ++i)
    out.emplace_back(*array.get(i)->as_table(), file_, key_path(key) + "[" + std::to_string(i) + "]");
  return out;
}

std::vector<std::string> TomlTableReader::string_array(std::string_view key) {
  const toml::node& node = require(key);
  if (!node.is_array()) fail(key, "expected an array of strings, found " + type_name(node));
  std::vector<std::string> out;
  for (const toml::node& element : *node.as_array()) {
    if (!element.is_string())
      fail(key, "expected an array of strings, found an element that is " + type_name(element));
    out.push_back(element.as_string()->get());
  }
  return out;
}

std::vector<std::string> TomlTableReader::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : *table_) out.emplace_back(k.str());
  return out;
}

void TomlTableReader::finish() const {
  for (const auto& [key, node] : *table_) {
    if (read_.count(key.str()) == 0)
      throw ConfigError(file_ + ":" + std::to_string(node.source().begin.line) + ": key '" +
                        key_path(key.str()) + "': unknown key");
  }
}

toml::table parse_toml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open for reading");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw IoError(path + ": read failed");
  try {
    return toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    throw ConfigError(path + ":" + std::to_string(e.source().begin.line) +
                      ": TOML syntax error: " + std::string(e.description()));
  }
}

}  // namespace hetrec::hw::hw

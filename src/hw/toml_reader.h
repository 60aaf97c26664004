#pragma once
// Checked reading of one TOML table. Every key that is read is remembered so that
// finish() can reject the keys nobody asked for (typos must not pass silently). Every
// error is a ConfigError naming the file, the line and the dotted key.
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hetrec::inline hw {

// A number together with the note saying where it comes from; in TOML it is written
// `key = { value = 132, source = "datasheet name" }`.
struct SourcedNumber {
  double value = 0.0;
  std::string source;
};

class TomlTableReader {
 public:
  // `prefix` is the dotted path of this table inside the file ("" for the root).
  TomlTableReader(const toml::table& table, std::string file, std::string prefix);

  const std::string& file() const { return file_; }
  // "compute.units" for key "units" in table [compute].
  std::string key_path(std::string_view key) const;
  // Throws ConfigError "<file>:<line>: key '<path>': <what>".
  [[noreturn]] void fail(std::string_view key, const std::string& what) const;

  bool has(std::string_view key) const;
  std::string string(std::string_view key);
  std::optional<std::string> optional_string(std::string_view key);
  double number(std::string_view key);  // a TOML integer or float
  std::optional<double> optional_number(std::string_view key);
  int64_t integer(std::string_view key);
  std::optional<int64_t> optional_integer(std::string_view key);
  bool boolean(std::string_view key);
  std::optional<bool> optional_boolean(std::string_view key);
  SourcedNumber sourced(std::string_view key);
  std::optional<SourcedNumber> optional_sourced(std::string_view key);
  // As sourced(), but the value must be a TOML integer.
  SourcedNumber sourced_integer(std::string_view key);
  TomlTableReader table(std::string_view key);
  std::optional<TomlTableReader> optional_table(std::string_view key);
  std::vector<TomlTableReader> array_of_tables(std::string_view key);
  std::vector<std::string> string_array(std::string_view key);

  // The keys of this table in file order (does not mark them read).
  std::vector<std::string> keys() const;
  // Throws ConfigError for the first key of this table that was never read.
  void finish() const;

 private:
  const toml::node* find(std::string_view key);  // marks the key as read
  const toml::node& require(std::string_view key);
  std::size_t line_of(std::string_view key) const;

  const toml::table* table_;
  std::string file_;
  std::string prefix_;
  std::set<std::string, std::less<>> read_;
};

// Parses a TOML file; IoError if it cannot be opened, ConfigError with the line of a
// syntax error otherwise.
toml::table parse_toml_file(const std::string& path);

}  // namespace hetrec::hw::hw

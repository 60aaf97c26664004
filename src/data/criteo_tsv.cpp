#include "data/criteo_tsv.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "core/error.h"
#include "core/rng.h"

namespace hetrec::inline data {
namespace {

// A categorical is a 32-bit hash written in hex.
constexpr std::size_t kMaxHexDigits = 8;
// Longest excerpt of a bad field quoted in an error message.
constexpr std::size_t kQuoteChars = 40;

std::string quote(std::string_view text) {
  if (text.size() <= kQuoteChars) return std::string(text);
  return std::string(text.substr(0, kQuoteChars)) + "...";
}

std::string field_name(const CriteoLayout& layout, int field) {
  if (field == 0) return "label";
  if (field <= layout.num_dense) return "I" + std::to_string(field);
  return "C" + std::to_string(field - layout.num_dense);
}

[[noreturn]] void bad_field(std::string_view file, int64_t line_no, const CriteoLayout& layout, int field,
                            std::string_view expected, std::string_view text) {
  throw DataError(fmt::format("{}:{}: field {}: expected {}, got '{}'", file, line_no, field_name(layout, field),
                              expected, quote(text)));
}

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

float parse_label(std::string_view text, std::string_view file, int64_t line_no, const CriteoLayout& layout) {
  if (text == "0") return 0.0f;
  if (text == "1") return 1.0f;
  bad_field(file, line_no, layout, 0, "0 or 1", text);
}

float parse_dense(std::string_view text, int field, std::string_view file, int64_t line_no,
                  const CriteoLayout& layout) {
  if (text.empty()) return 0.0f;  // missing value
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range)
    bad_field(file, line_no, layout, field, "a decimal integer within the signed 64-bit range", text);
  if (ec != std::errc() || end != text.data() + text.size())
    bad_field(file, line_no, layout, field, "a decimal integer", text);
  // Criteo preprocessing: negative counts clamp to 0, then log(x + 1).
  return static_cast<float>(std::log1p(static_cast<double>(value < 0 ? 0 : value)));
}

int32_t parse_categorical(std::string_view text, int table, std::string_view file, int64_t line_no,
                          const CriteoLayout& layout) {
  if (text.empty()) return static_cast<int32_t>(layout.missing_id);
  const int field = 1 + layout.num_dense + table;
  if (text.size() > kMaxHexDigits) bad_field(file, line_no, layout, field, "at most 8 hex digits", text);
  uint64_t value = 0;
  for (char c : text) {
    if (!is_hex_digit(c)) bad_field(file, line_no, layout, field, "8 hex digits", text);
    value = value * 16 + static_cast<uint64_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
  }
  const auto rows = static_cast<uint64_t>(layout.rows[static_cast<std::size_t>(table)]);
  const uint64_t row = layout.mapping == CategoricalMapping::modulo ? value % rows : mix64(value) % rows;
  return static_cast<int32_t>(row);
}

}  // namespace

CriteoLayout make_criteo_layout(const DataConfig& data, const FeatureSpec& model) {
  CriteoLayout layout;
  layout.num_dense = model.num_dense;
  layout.mapping = data.categorical;
  layout.missing_id = data.missing_categorical_id;
  if (model.num_dense < 0) throw ConfigError(fmt::format("model.num_dense = {}: expected >= 0", model.num_dense));
  for (int t = 0; t < model.num_tables(); ++t) {
    const TableConfig& table = model.tables[static_cast<std::size_t>(t)];
    if (table.rows < 1 || table.rows > std::numeric_limits<int32_t>::max())
      throw ConfigError(fmt::format("model.tables[{}] ({}).rows = {}: expected 1 to {} (ids are int32)", t,
                                    table.name, table.rows, std::numeric_limits<int32_t>::max()));
    if (data.missing_categorical_id < 0 || data.missing_categorical_id >= table.rows)
      throw ConfigError(fmt::format(
          "data.missing_categorical_id = {}: expected a row of every table, but table {} ({}) has {} rows",
          data.missing_categorical_id, t, table.name, table.rows));
    layout.rows.push_back(table.rows);
  }
  return layout;
}

void parse_criteo_line(std::string_view line, const CriteoLayout& layout, std::string_view file, int64_t line_no,
                       ParsedLine& out) {
  const int expected = layout.fields();
  int fields = 1;
  for (char c : line) fields += c == '\t';
  if (fields != expected)
    throw DataError(fmt::format("{}:{}: expected {} tab-separated fields (label, {} integer, {} categorical), got {}",
                                file, line_no, expected, layout.num_dense, layout.num_tables(), fields));
  out.dense.resize(static_cast<std::size_t>(layout.num_dense));
  out.ids.resize(static_cast<std::size_t>(layout.num_tables()));
  std::size_t begin = 0;
  for (int field = 0; field < expected; ++field) {
    std::size_t end = line.find('\t', begin);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view text = line.substr(begin, end - begin);
    if (field == 0) {
      out.label = parse_label(text, file, line_no, layout);
    } else if (field <= layout.num_dense) {
      out.dense[static_cast<std::size_t>(field - 1)] = parse_dense(text, field, file, line_no, layout);
    } else {
      const int table = field - 1 - layout.num_dense;
      out.ids[static_cast<std::size_t>(table)] = parse_categorical(text, table, file, line_no, layout);
    }
    begin = end + 1;
  }
}

ParsedLine parse_criteo_line(std::string_view line, const CriteoLayout& layout, std::string_view file,
                             int64_t line_no) {
  ParsedLine out;
  parse_criteo_line(line, layout, file, line_no, out);
  return out;
}

CriteoTsvSource::CriteoTsvSource(std::string path, CriteoLayout layout, OnError on_error, int threads,
                                 const std::string& what)
    : reader_(std::move(path), what), layout_(std::move(layout)), on_error_(on_error), threads_(threads) {
  if (threads < 1) throw ConfigError(fmt::format("data.reader_threads = {}: expected >= 1", threads));
}

std::size_t CriteoTsvSource::read_lines(std::size_t wanted) {
  if (lines_.size() < wanted) {
    lines_.resize(wanted);
    line_numbers_.resize(wanted);
    parsed_.resize(wanted);
    errors_.resize(wanted);
  }
  std::size_t count = 0;
  while (count < wanted && reader_.next(lines_[count])) {
    line_numbers_[count] = reader_.line_number();
    ++count;
  }
  return count;
}

void CriteoTsvSource::parse_lines(std::size_t count) {
  const auto n = static_cast<int64_t>(count);
#pragma omp parallel for num_threads(threads_) schedule(static) if (n > 1)
  for (int64_t k = 0; k < n; ++k) {
    const auto sk = static_cast<std::size_t>(k);
    errors_[sk].clear();
    try {
      parse_criteo_line(lines_[sk], layout_, reader_.path(), line_numbers_[sk], parsed_[sk]);
    } catch (const DataError& e) {
      errors_[sk] = e.what();
    }
  }
}

bool CriteoTsvSource::next(Batch& batch, int64_t batch_size) {
  if (batch_size < 1) throw ConfigError(fmt::format("batch size {}: expected >= 1", batch_size));
  assembler_.begin(layout_.num_dense, layout_.num_tables());
  while (assembler_.size() < batch_size) {
    const std::size_t count = read_lines(static_cast<std::size_t>(batch_size - assembler_.size()));
    if (count == 0) break;
    parse_lines(count);
    for (std::size_t k = 0; k < count; ++k) {
      if (!errors_[k].empty()) {
        if (on_error_ == OnError::fail) throw DataError(errors_[k]);
        ++skipped_lines_;
        continue;
      }
      const ParsedLine& line = parsed_[k];
      assembler_.add_sample(line.label, line.dense.data());
      for (int t = 0; t < layout_.num_tables(); ++t) assembler_.add_bag(t, &line.ids[static_cast<std::size_t>(t)], 1);
    }
  }
  if (assembler_.size() == 0) return false;
  assembler_.finish(batch, position_);
  position_ += batch.size;
  return true;
}

void CriteoTsvSource::seek(int64_t sample) {
  if (sample < 0) throw DataError(fmt::format("{}: cannot seek to sample {}", reader_.path(), sample));
  reader_.rewind();
  position_ = 0;
  skipped_lines_ = 0;
  while (position_ < sample) {
    const auto wanted = static_cast<std::size_t>(std::min<int64_t>(sample - position_, kSeekChunkLines));
    const std::size_t count = read_lines(wanted);
    if (count == 0)
      throw DataError(fmt::format("{}: cannot seek to sample {}: the file holds {} samples", reader_.path(), sample,
                                  position_));
    parse_lines(count);
    for (std::size_t k = 0; k < count; ++k) {
      if (errors_[k].empty()) {
        ++position_;
      } else if (on_error_ == OnError::fail) {
        throw DataError(errors_[k]);
      } else {
        ++skipped_lines_;
      }
    }
  }
}

std::string CriteoTsvSource::describe() const {
  return fmt::format("Criteo TSV {} ({} integer + {} categorical fields, {} mapping, on_error {})", reader_.path(),
                     layout_.num_dense, layout_.num_tables(),
                     layout_.mapping == CategoricalMapping::modulo ? "modulo" : "hash",
                     on_error_ == OnError::fail ? "fail" : "skip");
}

}  // namespace hetrec::data::data

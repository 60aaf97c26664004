#pragma once
// Criteo click logs as tab-separated text (Kaggle train.txt, Criteo 1TB day_N):
//
//   label \t I1 .. I<num_dense> \t C1 .. C<num_tables>
//
// label is 0 or 1; I fields are decimal integers (may be negative), delivered as
// log(max(x, 0) + 1); C fields are up to 8 hex digits (a 32-bit hash), mapped to a row
// of their table by `modulo` (value % rows) or `hash` (mix64(value) % rows). Any field
// may be empty: a missing I is 0, a missing C is data.missing_categorical_id. Every bag
// holds exactly one id, whatever the table's hotness in the model config.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "data/batch_assembler.h"
#include "data/data_config.h"
#include "data/line_reader.h"
#include "data/source.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

struct CriteoLayout {
  int num_dense = 13;
  std::vector<int64_t> rows;  // per table (categorical field)
  CategoricalMapping mapping = CategoricalMapping::modulo;
  int64_t missing_id = 0;

  int num_tables() const { return static_cast<int>(rows.size()); }
  int fields() const { return 1 + num_dense + num_tables(); }
};

// The layout of the model's inputs; throws ConfigError when data.missing_categorical_id
// is not a row of every table or a table has more rows than int32 ids can address.
CriteoLayout make_criteo_layout(const DataConfig& data, const FeatureSpec& model);

struct ParsedLine {
  float label = 0.0f;
  std::vector<float> dense;  // num_dense, transformed
  std::vector<int32_t> ids;  // one per table
};

// Parses one line (without its newline) into `out`. Throws DataError
// "<file>:<line_no>: field <name>: expected ..., got '<text>'" on: a wrong number of
// fields, a label other than 0/1, a non-decimal or out-of-int64 dense value, a
// categorical that is not 1 to 8 hex digits.
void parse_criteo_line(std::string_view line, const CriteoLayout& layout, std::string_view file, int64_t line_no,
                       ParsedLine& out);
ParsedLine parse_criteo_line(std::string_view line, const CriteoLayout& layout, std::string_view file,
                             int64_t line_no);

// Streams a TSV file in constant memory. `threads` parse the lines of a batch in
// parallel. position() counts samples delivered (skipped lines excluded); seek(n)
// re-reads the file from the start up to sample n, which is O(n) for text.
class CriteoTsvSource final : public BatchSource {
 public:
  // `what` names the file's origin in open errors (e.g. "data.train_path").
  CriteoTsvSource(std::string path, CriteoLayout layout, OnError on_error, int threads = 1,
                  const std::string& what = "");

  bool next(Batch& batch, int64_t batch_size) override;
  int64_t position() const override { return position_; }
  void seek(int64_t sample) override;
  int64_t size_hint() const override { return -1; }
  DataCounters counters() const override { return DataCounters{position_, skipped_lines_}; }
  std::string describe() const override;

 private:
  // Reads up to `wanted` lines into lines_ (with their numbers); returns how many.
  std::size_t read_lines(std::size_t wanted);
  // Parses lines_[0 .. count) in parallel into parsed_ / errors_ (empty = parsed).
  void parse_lines(std::size_t count);

  // Lines read and parsed together while seeking.
  static constexpr std::size_t kSeekChunkLines = 4096;

  LineReader reader_;
  CriteoLayout layout_;
  OnError on_error_;
  int threads_;
  int64_t position_ = 0;
  int64_t skipped_lines_ = 0;
  std::vector<std::string> lines_;
  std::vector<int64_t> line_numbers_;
  std::vector<ParsedLine> parsed_;
  std::vector<std::string> errors_;
  BatchAssembler assembler_;
};

}  // namespace hetrec::data::data

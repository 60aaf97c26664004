#pragma once
// Producing and examining binary columnar files: TSV conversion, synthetic export (the
// same samples for hetrec and for an outside reference implementation), inspection.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/binary_format.h"
#include "data/criteo_tsv.h"
#include "data/feature_spec.h"
#include "data/source.h"
#include "data/synthetic.h"

namespace hetrec::inline data {

struct ConvertReport {
  int64_t samples = 0;        // samples written
  int64_t skipped_lines = 0;  // malformed lines skipped (on_error = skip)
  int64_t groups = 0;         // row groups written
  int64_t bytes = 0;          // size of the output file
};

struct ConvertOptions {
  OnError on_error = OnError::fail;
  int64_t group_samples = kDefaultGroupSamples;
  int threads = 1;  // parse threads
  // false: a conversion that would write no sample (an empty input, or every line
  // skipped) is a DataError and nothing is written.
  bool allow_empty = true;
};

// Samples read through the source and written per call to BinaryWriter::append.
inline constexpr int64_t kConvertBatchSamples = 8192;

// Streams a Criteo TSV file into a binary file in constant memory; ids are mapped with
// the layout's mapping. The output is written through a temporary (BinaryWriter) and
// refused before anything is created when it is the input file itself or not a regular
// file (check_binary_output). On any error the temporary is removed, `out_path` is left
// as it was, and the error (a DataError naming the TSV file, line and field, in fail
// mode) is re-thrown.
ConvertReport convert_tsv_to_binary(const std::string& in_path, const std::string& out_path,
                                    const CriteoLayout& layout, const ConvertOptions& options = {});

// Writes samples [first, first + samples) of `source` to `out_path` with the given
// header, restoring the source's position afterwards. Same protection of `out_path` on
// error; a source that ends early is an error.
ConvertReport write_binary(BatchSource& source, int64_t first, int64_t samples, const std::string& out_path,
                           const BinaryHeader& header);

// Samples 0 .. samples-1 of the synthetic source's split (samples <= size_hint()).
ConvertReport write_synthetic_binary(SyntheticSource& source, int64_t samples, const std::string& out_path,
                                     int64_t group_samples = kDefaultGroupSamples);

// A human-readable summary: header fields, row groups, sample count, label mean, per
// table id range and mean bag length, and the checksum status of every group. A file
// whose header or trailer is unreadable throws DataError; a bad group is reported.
struct BinaryInspection {
  std::string text;                   // the summary
  std::vector<std::string> failures;  // per failed row group, its DataError message
};
BinaryInspection inspect_binary_file(const std::string& path);
// The summary alone.
std::string inspect_binary(const std::string& path);

// Where verify_binary is, after each row group.
struct VerifyProgress {
  int64_t groups_done = 0, groups = 0;
  int64_t bytes_done = 0, bytes = 0;
};

struct VerifyReport {
  int64_t samples = 0, groups = 0, bytes = 0;
  std::vector<std::string> failures;  // what failed, each naming the file (and group, sample, table)
  bool ok() const { return failures.empty(); }
};

// Checks the whole of `path` as training would read it against `model`: header and
// trailer, every row group (CRC-32C, structure, labels, finite dense values, ids within
// the file's tables) and every id within the model's tables, the file holding the
// model's numbers of dense features and tables. Problems with the data are collected in
// the report, one per row group at most (a file whose header or trailer is unreadable
// gives one); IoError is thrown when the file cannot be read. `threads` read and check
// each group; `progress` is called after each one.
VerifyReport verify_binary(const std::string& path, const FeatureSpec& model, int threads = 1,
                           const std::function<void(const VerifyProgress&)>& progress = {});

}  // namespace hetrec::data::data

#pragma once
// Producing and examining binary columnar files: TSV conversion, synthetic export (the
// same samples for hetrec and for an outside reference implementation), inspection.
#include <cstdint>
#include <string>

#include "data/binary_format.h"
#include "data/criteo_tsv.h"
#include "data/source.h"
#include "data/synthetic.h"

namespace hetrec {

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
};

// Samples read through the source and written per call to BinaryWriter::append.
inline constexpr int64_t kConvertBatchSamples = 8192;

// Streams a Criteo TSV file into a binary file in constant memory; ids are mapped with
// the layout's mapping. On any error the partial output file is removed and the error
// (a DataError naming the TSV file, line and field, in fail mode) is re-thrown.
ConvertReport convert_tsv_to_binary(const std::string& in_path, const std::string& out_path,
                                    const CriteoLayout& layout, const ConvertOptions& options = {});

// Writes samples [first, first + samples) of `source` to `out_path` with the given
// header, restoring the source's position afterwards. Same clean-up on error; a source
// that ends early is an error.
ConvertReport write_binary(BatchSource& source, int64_t first, int64_t samples, const std::string& out_path,
                           const BinaryHeader& header);

// Samples 0 .. samples-1 of the synthetic source's split (samples <= size_hint()).
ConvertReport write_synthetic_binary(SyntheticSource& source, int64_t samples, const std::string& out_path,
                                     int64_t group_samples = kDefaultGroupSamples);

// A human-readable summary: header fields, row groups, sample count, label mean, per
// table id range and mean bag length, and the checksum status of every group. A file
// whose header or trailer is unreadable throws DataError; a bad group is reported.
std::string inspect_binary(const std::string& path);

}  // namespace hetrec

#pragma once
// `hetrec data convert` for the MLPerf multi-hot days (data/mlperf_multihot.h): every
// sample of the days, in order, into one hetrec binary columnar file.
#include <cstdint>
#include <functional>
#include <string>

#include "data/binary_format.h"
#include "data/binary_tools.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

// Where a conversion is, after each batch written (samples = the total to write).
struct ConvertProgress {
  int64_t samples_done = 0, samples = 0;
};

// Reads the days `spec` names (checked against `model` as training checks them) and
// writes them to `out_path` through BinaryWriter, in batches of kConvertBatchSamples,
// with the model's table rows in the header (ids are stored as read: the MLPerf
// preprocessing has already reduced them modulo the table sizes). `threads` read the
// tables; `progress` is called after each batch. ConfigError when `out_path` is one of
// the day files; any error of the reader (DataError naming the file, member, sample) or
// the writer is re-thrown.
ConvertReport convert_mlperf_to_binary(const std::string& spec, const std::string& out_path, const FeatureSpec& model,
                                       int threads = 1, int64_t group_samples = kDefaultGroupSamples,
                                       const std::function<void(const ConvertProgress&)>& progress = {});

}  // namespace hetrec::data::data

#include "data/mlperf_convert.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.h"
#include "data/mlperf_multihot.h"

namespace hetrec::inline data {

ConvertReport convert_mlperf_to_binary(const std::string& spec, const std::string& out_path, const FeatureSpec& model,
                                       int threads, int64_t group_samples,
                                       const std::function<void(const ConvertProgress&)>& progress) {
  std::error_code ec;
  for (const std::string& prefix : expand_mlperf_days(spec, "--input")) {
    const MlperfDayFiles f = mlperf_day_files(prefix);
    for (const std::string* input : {&f.dense, &f.labels, &f.sparse})
      if (*input == out_path || std::filesystem::equivalent(*input, out_path, ec))
        throw ConfigError(fmt::format("--output {}: is the input file {}: expected a new file", out_path, *input));
  }
  MlperfMultihotSource source(spec, model, "--input", threads);
  BinaryHeader header;
  header.num_dense = model.num_dense;
  for (const TableConfig& table : model.tables) header.rows.push_back(table.rows);
  header.group_samples = group_samples;
  header.mapping = IdMapping::modulo;  // the preprocessing's raw id % rows, then its multi-hot expansion
  BinaryWriter writer(out_path, header);
  Batch batch;
  const int64_t total = source.size_hint();
  if (progress) progress(ConvertProgress{0, total});
  while (source.next(batch, kConvertBatchSamples)) {
    writer.append(batch);
    if (progress) progress(ConvertProgress{writer.samples(), total});
  }
  writer.finish();
  return ConvertReport{writer.samples(), 0, writer.groups(), writer.bytes()};
}

}  // namespace hetrec::data::data

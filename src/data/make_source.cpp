#include "data/make_source.h"

#include <string>

#include <fmt/format.h>

#include "core/error.h"
#include "data/binary_source.h"
#include "data/criteo_tsv.h"
#include "data/mlperf_multihot.h"
#include "data/synthetic.h"

namespace hetrec::inline data {

std::unique_ptr<BatchSource> make_source(const DataConfig& data, const FeatureSpec& model, Split split) {
  if (data.reader_threads < 1)
    throw ConfigError(fmt::format("data.reader_threads = {}: expected >= 1", data.reader_threads));
  if (data.format == DataFormat::synthetic)
    return std::make_unique<SyntheticSource>(model, data.synthetic, split, data.reader_threads);

  const std::string key = split == Split::train ? "data.train_path" : "data.eval_path";
  const std::string& path = split == Split::train ? data.train_path : data.eval_path;
  const char* format = data.format == DataFormat::criteo_tsv        ? "criteo_tsv"
                       : data.format == DataFormat::mlperf_multihot ? "mlperf_multihot"
                                                                    : "binary";
  if (path.empty()) throw ConfigError(fmt::format("{}: required when data.format = \"{}\"", key, format));
  if (data.format == DataFormat::criteo_tsv)
    return std::make_unique<CriteoTsvSource>(path, make_criteo_layout(data, model), data.on_error,
                                             data.reader_threads, key);
  if (data.format == DataFormat::mlperf_multihot)
    return std::make_unique<MlperfMultihotSource>(path, model, key, data.reader_threads);
  return std::make_unique<BinarySource>(path, model, key, data.reader_threads);
}

}  // namespace hetrec::data::data

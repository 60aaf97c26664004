#pragma once
// Builds the batch source a [data] config describes, for one split.
#include <memory>

#include "data/data_config.h"
#include "data/source.h"
#include "data/split.h"
#include "data/feature_spec.h"

namespace hetrec::inline data {

// synthetic -> SyntheticSource; criteo_tsv -> CriteoTsvSource; binary -> BinarySource,
// mlperf_multihot -> MlperfMultihotSource (both checked against the model). Files come
// from data.train_path or data.eval_path: ConfigError when the key is empty, IoError
// naming the path and the key when a file cannot be opened.
std::unique_ptr<BatchSource> make_source(const DataConfig& data, const FeatureSpec& model, Split split);

}  // namespace hetrec::data::data

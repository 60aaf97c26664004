#pragma once
// The broad GEMM corpus `hetrec gemm bench --suite corpus` times for training and judging a
// selector: many layer families of recommendation models beyond the ones hetrec ships, so
// that a selector is judged on widths it has never seen (held out by family). Each family is
// a few dense layers; every layer gives the three GEMMs of gemm_layer_shapes
// (gemm_perf/gemm_suite.h). The families and their sources are in gemm_corpus.cpp.
#include <cstdint>
#include <string>
#include <vector>

#include "gemm_perf/gemm_suite.h"

namespace hetrec::inline gemm_perf {

struct GemmCorpusFamily {
  std::string name;    // e.g. "dlrm_mlperf_top", "hstu_qkv_512"
  std::string source;  // the model or paper the widths come from
  std::vector<DenseLayerShape> layers;  // model = name
};

// Every family, in a fixed order; names are unique.
std::vector<GemmCorpusFamily> gemm_corpus_families();

// The (batch, precision) points the corpus times: batches 1K..256K, fp32, tf32, bf16, fp16.
struct GemmCorpusPoint {
  int64_t batch = 0;
  std::string precision;
};
std::vector<GemmCorpusPoint> gemm_corpus_points();

// The corpus shapes, each with `model` = its family's name, batch-major like gemm_suite().
// `families` (empty: all) restricts them; a name that is not a family throws ConfigError
// listing the known ones. A GEMM two families share is listed once, under the first.
std::vector<GemmSuiteShape> gemm_corpus(const std::vector<std::string>& families = {});

// Shard `index` of `count` (0 <= index < count): every count-th shape starting at index, so
// every shard spans all families, batches and precisions and the shards take alike time.
// Throws ConfigError when the shard does not exist.
std::vector<GemmSuiteShape> gemm_shard(std::vector<GemmSuiteShape> shapes, int index, int count);

// Parses "i/n" (0-based i < n) into index and count; ConfigError naming `option` otherwise.
void parse_shard(const std::string& text, const std::string& option, int& index, int& count);

}  // namespace hetrec::gemm_perf::gemm_perf

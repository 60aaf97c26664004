#pragma once
// The validators the GEMM selection cache target loads files under; the seed generator
// (fuzz/make_seeds.cpp) writes its cache seeds under the same ones, so seeds are not
// discarded at the validator check.
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_selection_cache.h"

namespace hetrec::fuzz {

inline GemmCacheValidators fuzz_cache_validators() {
  return make_gemm_cache_validators("NVIDIA H200", "580.65.06", "cublasLt 13.0.0", GemmModelParams{});
}

}  // namespace hetrec::fuzz

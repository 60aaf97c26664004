#pragma once
// Shared helpers of the perf tests: the shipped hardware files and parameters, random
// shapes, and scratch directories.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/rng.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_problem.h"

namespace hetrec::test {

inline const std::string kHwDir = std::string(HETREC_SOURCE_DIR) + "/hw";
inline const std::string kParamsDir = kHwDir + "/params";

inline Hardware shipped_hardware(const std::string& name) { return load_hardware_by_name(name, kHwDir); }
inline GemmModelParams shipped_params(const Hardware& hw) { return load_gemm_params_for(hw, kParamsDir); }

// Log-uniform integer in [lo, hi].
inline int64_t log_uniform(Rng& rng, int64_t lo, int64_t hi) {
  const double x =
      std::exp(std::log(double(lo)) + rng.uniform() * (std::log(double(hi)) - std::log(double(lo))));
  return std::clamp<int64_t>(int64_t(std::llround(x)), lo, hi);
}

// A random GEMM of a precision the GPU has, with random layout and epilogue.
inline GemmProblem random_problem(Rng& rng, const Hardware& hw, int64_t max_extent = 16384) {
  GemmProblem p;
  p.m = log_uniform(rng, 1, max_extent);
  p.n = log_uniform(rng, 1, max_extent);
  p.k = log_uniform(rng, 1, max_extent);
  p.batch = rng.below(4) == 0 ? 1 + int64_t(rng.below(8)) : 1;
  const DType types[] = {DType::bf16, DType::f16, DType::f8e4m3, DType::f32};
  p.a_type = p.b_type = types[rng.below(4)];
  if (p.a_type == DType::f8e4m3 && hw.dense_tflops.fp8 <= 0.0) p.a_type = p.b_type = DType::bf16;
  if (p.a_type == DType::f8e4m3 && rng.below(2)) p.b_type = DType::f8e5m2;
  p.c_type = p.a_type == DType::f32 ? DType::f32 : DType::bf16;
  p.allow_tf32 = p.a_type == DType::f32 && rng.below(2) == 1;
  p.trans_a = rng.below(2) == 1;
  p.trans_b = rng.below(2) == 1;
  p.accumulate = rng.below(4) == 0;
  p.epilogue = GemmEpilogue(rng.below(3));
  if (p.a_type == DType::f8e4m3) p.fp8_scaling = Fp8Scaling(rng.below(3));
  return p;
}

// A scratch directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("hetrec_gemm_perf_" + std::to_string(::getpid()) + "_" +
                                                      info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace hetrec::test

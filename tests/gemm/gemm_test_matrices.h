#pragma once
// Host matrices for the cuBLASLt wrapper's tests (tests/gemm/test_cublaslt_*.cpp): fresh
// random values, exact in the operands' precision, with leading dimensions wider than the
// rows; their upload in that precision; and the tolerance of each precision against a
// double-precision reference.
#include <cstdint>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/device.h"

namespace hetrec::gemm_test {

using cublaslt::Precision;

struct HostMatrix {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<float> v;
  double at(int64_t r, int64_t c) const { return v[static_cast<std::size_t>(r * ld + c)]; }
};

// The 16-bit operand precisions: inputs are generated as exact values of the type.
inline bool sixteen_bit(Precision p) { return p == Precision::bf16 || p == Precision::fp16; }
inline uint16_t to_bits(float x, Precision p) { return p == Precision::fp16 ? f32_to_f16(x) : f32_to_bf16(x); }
inline float from_bits(uint16_t b, Precision p) { return p == Precision::fp16 ? f16_to_f32(b) : bf16_to_f32(b); }

inline HostMatrix random_matrix(int64_t rows, int64_t cols, uint64_t seed, Precision prec) {
  HostMatrix m{rows, cols, cols + 3, {}};
  m.v.resize(static_cast<std::size_t>(rows * m.ld));
  Rng rng(seed);
  for (float& x : m.v) {
    x = static_cast<float>(rng.normal());
    if (sixteen_bit(prec)) x = from_bits(to_bits(x, prec), prec);
  }
  return m;
}

inline gpu::DeviceBuffer upload(const HostMatrix& m, Precision prec) {
  if (!sixteen_bit(prec)) return testing::to_device(m.v);
  std::vector<uint16_t> bits(m.v.size());
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = to_bits(m.v[i], prec);
  return testing::to_device(bits);
}

inline double tolerance(Precision p) {
  switch (p) {
    case Precision::fp32: return 2e-6;
    case Precision::tf32: return 2e-3;  // 10-bit mantissa inputs
    case Precision::bf16: return 2e-6;  // inputs are exact bf16 values; fp32 accumulation
    case Precision::fp16: return 2e-6;  // inputs are exact fp16 values; fp32 accumulation
    case Precision::fp8_e4m3: break;  // not covered here (tests/gemm/test_cublaslt_algos.cpp)
  }
  return 0;
}

inline const char* name(Precision p) {
  return p == Precision::fp32 ? "fp32" : p == Precision::tf32 ? "tf32" : p == Precision::bf16 ? "bf16" : "fp16";
}

}  // namespace hetrec::gemm_test

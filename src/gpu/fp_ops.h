#pragma once
// Floating-point products that round on their own on both vendors. Kernels that mirror
// a host computation operation for operation (the optimizers' update rules) need every
// product rounded before the following add, as the host rounds it; a compiler that fuses
// `w + a * b` into one FMA rounds once instead of twice and the results drift apart.
//
// CUDA's __fmul_rn / __dmul_rn are never contracted. HIP's are plain `a * b`, which
// clang contracts with a neighbouring add (HIP's default contraction mode fuses across
// inlined calls, but honours `#pragma clang fp contract`), so under HIP the product is
// written in a scope where contraction is off. A HIP build must not pass
// -ffp-contract=fast: that mode ignores the pragma.
#include "gpu/platform.h"

#if defined(__CUDACC__) || defined(__HIPCC__)

namespace hetrec::gpu {

#if defined(HETREC_GPU_HIP)
__device__ inline float mul_rn(float a, float b) {
#pragma clang fp contract(off)
  return a * b;
}
__device__ inline double mul_rn(double a, double b) {
#pragma clang fp contract(off)
  return a * b;
}
#else
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
#endif

}  // namespace hetrec::gpu

#endif

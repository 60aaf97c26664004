#pragma once
// Device helpers to move short vectors of row elements (fp32, fp16, bf16) between memory
// and fp32 registers with the widest aligned accesses: N elements of type T are read or
// written as 16-byte (or narrower) words.
#include <cstdint>

#include "gpu/half.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// Storage tags for 16-bit rows: the raw bits, converted exactly like core/dtype.h.
struct Bf16Bits {
  uint16_t bits;
};
struct F16Bits {
  uint16_t bits;
};

__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(Bf16Bits x) { return gpu::bf16_bits_to_f32(x.bits); }
__device__ inline float to_float(F16Bits x) { return gpu::f16_bits_to_f32(x.bits); }

// Round to nearest even.
template <class T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) { return x; }
template <>
__device__ inline Bf16Bits from_float<Bf16Bits>(float x) { return Bf16Bits{gpu::f32_to_bf16_bits(x)}; }
template <>
__device__ inline F16Bits from_float<F16Bits>(float x) { return F16Bits{gpu::f32_to_f16_bits(x)}; }

// Stochastic rounding with 32 random bits (fp32 ignores them).
template <class T>
__device__ inline T from_float_sr(float x, uint32_t random);
template <>
__device__ inline float from_float_sr<float>(float x, uint32_t) { return x; }
template <>
__device__ inline Bf16Bits from_float_sr<Bf16Bits>(float x, uint32_t r) { return Bf16Bits{gpu::f32_to_bf16_bits_sr(x, r)}; }
template <>
__device__ inline F16Bits from_float_sr<F16Bits>(float x, uint32_t r) { return F16Bits{gpu::f32_to_f16_bits_sr(x, r)}; }

namespace detail {
template <int Bytes>
struct Word;
template <>
struct Word<16> { using type = uint4; };
template <>
struct Word<8> { using type = uint2; };
template <>
struct Word<4> { using type = uint32_t; };
template <>
struct Word<2> { using type = uint16_t; };

constexpr int word_bytes(int total) { return total >= 16 ? 16 : total; }
}  // namespace detail

// Loads N consecutive elements at p (aligned to min(16, N*sizeof(T)) bytes) as they are
// stored, with the widest aligned words.
template <int N, class T>
__device__ inline void load_raw_vec(const T* p, T (&out)[N]) {
  constexpr int kTotal = N * static_cast<int>(sizeof(T));
  constexpr int kWord = detail::word_bytes(kTotal);
  constexpr int kWords = kTotal / kWord;
  constexpr int kPerWord = N / kWords;
  static_assert(kWords * kWord == kTotal, "vector must be a whole number of words");
  using W = typename detail::Word<kWord>::type;
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    union {
      W word;
      T e[kPerWord];
    } u;
    u.word = reinterpret_cast<const W*>(p)[w];
#pragma unroll
    for (int i = 0; i < kPerWord; ++i) out[w * kPerWord + i] = u.e[i];
  }
}

// Loads N consecutive elements at p (aligned as load_raw_vec) into floats.
template <int N, class T>
__device__ inline void load_vec(const T* p, float (&out)[N]) {
  T raw[N];
  load_raw_vec<N>(p, raw);
#pragma unroll
  for (int i = 0; i < N; ++i) out[i] = to_float(raw[i]);
}

// Stores N already-encoded elements with the widest aligned words.
template <int N, class T>
__device__ inline void store_raw_vec(T* p, const T (&in)[N]) {
  constexpr int kTotal = N * static_cast<int>(sizeof(T));
  constexpr int kWord = detail::word_bytes(kTotal);
  constexpr int kWords = kTotal / kWord;
  constexpr int kPerWord = N / kWords;
  static_assert(kWords * kWord == kTotal, "vector must be a whole number of words");
  using W = typename detail::Word<kWord>::type;
#pragma unroll
  for (int w = 0; w < kWords; ++w) {
    union {
      W word;
      T e[kPerWord];
    } u;
#pragma unroll
    for (int i = 0; i < kPerWord; ++i) u.e[i] = in[w * kPerWord + i];
    reinterpret_cast<W*>(p)[w] = u.word;
  }
}

// Stores N floats as consecutive elements of type T, rounding to nearest even.
template <int N, class T>
__device__ inline void store_vec(T* p, const float (&in)[N]) {
  T raw[N];
#pragma unroll
  for (int i = 0; i < N; ++i) raw[i] = from_float<T>(in[i]);
  store_raw_vec<N>(p, raw);
}

}  // namespace hetrec::kernels

#pragma once
// Deterministic, counter-based random numbers. Every random choice in hetrec derives
// from a seed in the config: a stream is (seed, stream id), and the n-th draw of a
// stream is a pure function of (seed, stream, n), so work can be split across threads
// or resumed mid-run without changing any number.
#include <cmath>
#include <cstdint>

#include "core/mix64.h"

namespace hetrec {

__extension__ typedef unsigned __int128 uint128_t;

// A sequential generator over a counter: next() = mix64(key + counter++).
class Rng {
 public:
  constexpr Rng(uint64_t seed, uint64_t stream = 0) : key_(hash_combine(seed, stream)) {}
  constexpr uint64_t next_u64() { return mix64(key_ + 0x632BE59BD9B4E019ull * ++counter_); }
  constexpr uint32_t next_u32() { return static_cast<uint32_t>(next_u64() >> 32); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
  // Uniform in (0, 1): never 0, safe for log().
  double uniform_open() { return (static_cast<double>(next_u64() >> 11) + 0.5) * 0x1.0p-53; }
  // Standard normal by Box-Muller (one value per call; the pair's twin is discarded so
  // that the state stays a plain counter).
  double normal() {
    const double u1 = uniform_open();
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // Uniform integer in [0, n) (Lemire's multiply-shift; bias below 2^-32 for n < 2^32).
  uint64_t below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<uint128_t>(next_u64()) * n) >> 64);
  }
  constexpr uint64_t counter() const { return counter_; }
  constexpr void set_counter(uint64_t c) { counter_ = c; }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

}  // namespace hetrec

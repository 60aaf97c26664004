#pragma once
// The 64-bit mixer every random stream of hetrec is built on, apart from the generator
// (core/rng.h) so that device code compiled at run time (core/seed_streams.h through
// kernels/sparse_rounding.h) includes it without the host generator's <cmath>.
#include <cstdint>

namespace hetrec {

// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mixer.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

constexpr uint64_t hash_combine(uint64_t a, uint64_t b) { return mix64(a ^ mix64(b)); }

}  // namespace hetrec

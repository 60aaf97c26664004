#include "data/permutation.h"

#include <bit>

#include "core/error.h"
#include "core/rng.h"

namespace hetrec::inline data {
namespace {

// Multiplier of the round function: 2^64 / golden ratio, odd (Knuth's multiplicative
// hashing); the top bits of the product depend on every bit of the input.
constexpr uint64_t kRoundMultiplier = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kMaxDomain = uint64_t{1} << 62;

uint64_t low_mask(int bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

}  // namespace

IndexPermutation::IndexPermutation(uint64_t n, uint64_t key) : n_(n) {
  HETREC_CHECK(n >= 1 && n <= kMaxDomain, "a permutation domain holds 1 to 2^62 values");
  bits_ = n <= 2 ? 1 : std::bit_width(n - 1);
  for (int r = 0; r < kRounds; ++r) round_keys_[r] = hash_combine(key, static_cast<uint64_t>(r));
}

uint64_t IndexPermutation::network(uint64_t x) const {
  int low_bits = bits_ / 2;
  int high_bits = bits_ - low_bits;
  for (int r = 0; r < kRounds; ++r) {
    const uint64_t high = x >> low_bits;
    const uint64_t low = x & low_mask(low_bits);
    // Round function: the top high_bits bits of a keyed multiplicative hash of `low`.
    const uint64_t mixed = high_bits == 0 ? 0 : ((low ^ round_keys_[r]) * kRoundMultiplier) >> (64 - high_bits);
    x = (low << high_bits) | (high ^ mixed);
    // `low` now sits on top: the halves swap widths.
    const int swap = low_bits;
    low_bits = high_bits;
    high_bits = swap;
  }
  return x;
}

uint64_t IndexPermutation::operator()(uint64_t i) const {
  HETREC_CHECK(i < n_, "permutation index out of its domain");
  // The network permutes [0, 2^bits); walking the cycle through i until it comes back
  // inside [0, n) gives a permutation of [0, n).
  uint64_t x = network(i);
  while (x >= n_) x = network(x);
  return x;
}

}  // namespace hetrec::data::data

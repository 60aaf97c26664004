#pragma once
// A keyed bijection of [0, n) with O(1) memory: a Feistel network over [0, 2^bits), the
// smallest power of two holding n, restricted to [0, n) by cycle walking (Black and
// Rogaway 2002, "Ciphers with arbitrary finite domains"). When bits is odd the two
// halves differ by one bit and swap widths every round (an alternating Feistel
// network, each round still a bijection). The domain is below 2n, so a call evaluates
// the network fewer than 2 times on average. Used to scatter Zipf ranks over a table so
// hot rows are not clustered; it needs to mix well, not to be cryptographically strong.
#include <cstdint>

namespace hetrec::inline data {

class IndexPermutation {
 public:
  // n in [1, 2^62].
  IndexPermutation(uint64_t n, uint64_t key);

  uint64_t size() const { return n_; }
  // The image of i in [0, n).
  uint64_t operator()(uint64_t i) const;

 private:
  // Four rounds: the count for which Luby and Rackoff (1988) show a Feistel network
  // with random round functions is a strong pseudo-random permutation.
  static constexpr int kRounds = 4;

  uint64_t network(uint64_t x) const;

  uint64_t n_;
  int bits_ = 1;
  uint64_t round_keys_[kRounds] = {};
};

}  // namespace hetrec::data::data

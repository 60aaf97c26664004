#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "data/permutation.h"
#include "data/zipf.h"

using namespace hetrec;

TEST(IndexPermutation, IsABijectionForEveryDomainShape) {
  for (uint64_t n : {1ull, 2ull, 3ull, 5ull, 16ull, 17ull, 1000ull, 65537ull}) {
    for (uint64_t key : {1ull, 99ull}) {
      IndexPermutation perm(n, key);
      std::vector<char> seen(n, 0);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t y = perm(i);
        ASSERT_LT(y, n) << "n=" << n;
        ASSERT_EQ(seen[y], 0) << "n=" << n << " image " << y << " hit twice";
        seen[y] = 1;
      }
    }
  }
}

TEST(IndexPermutation, ScattersAndDependsOnTheKey) {
  const uint64_t n = 100000;
  IndexPermutation a(n, 1), b(n, 2);
  int fixed = 0, same = 0, small_images = 0;
  for (uint64_t i = 0; i < n; ++i) {
    fixed += a(i) == i;
    same += a(i) == b(i);
  }
  // The first 100 ranks (the hot ones) must not stay in the first 100 rows.
  for (uint64_t i = 0; i < 100; ++i) small_images += a(i) < 100;
  EXPECT_LT(fixed, 20);  // a random permutation has about 1 fixed point
  EXPECT_LT(same, 20);
  EXPECT_LT(small_images, 5);
  // Huge domains cost nothing to build and stay in range.
  IndexPermutation huge(40000000, 7);
  for (uint64_t i = 0; i < 1000; ++i) EXPECT_LT(huge(i * 39999), 40000000u);
}

// Exact pmf of ranks 0..n-1 under exponent s, in double.
static std::vector<double> zipf_pmf(int64_t n, double s) {
  std::vector<double> p(static_cast<std::size_t>(n));
  double total = 0.0;
  for (int64_t r = 0; r < n; ++r) total += p[static_cast<std::size_t>(r)] = std::pow(static_cast<double>(r + 1), -s);
  for (double& v : p) v /= total;
  return p;
}

TEST(ZipfSampler, FrequenciesMatchTheExactLaw) {
  constexpr int64_t kRanks = 50;
  constexpr int kDraws = 200000;
  for (double s : {0.0, 0.5, 1.0, 1.05, 2.0, 3.5}) {
    ZipfSampler zipf(kRanks, s);
    Rng rng(12345, static_cast<uint64_t>(s * 100));
    std::vector<int> counts(kRanks, 0);
    for (int k = 0; k < kDraws; ++k) {
      const int64_t r = zipf(rng);
      ASSERT_GE(r, 0);
      ASSERT_LT(r, kRanks);
      ++counts[static_cast<std::size_t>(r)];
    }
    const std::vector<double> p = zipf_pmf(kRanks, s);
    for (int64_t r = 0; r < kRanks; ++r) {
      const double pr = p[static_cast<std::size_t>(r)];
      const double sigma = std::sqrt(pr * (1.0 - pr) / kDraws);
      EXPECT_NEAR(counts[static_cast<std::size_t>(r)] / static_cast<double>(kDraws), pr, 5.0 * sigma + 1e-6)
          << "s=" << s << " rank " << r;
    }
  }
}

TEST(ZipfSampler, LargeTablesKeepTheHead) {
  constexpr int64_t kRanks = 1 << 20;
  constexpr int kDraws = 200000;
  const double s = 1.05;
  ZipfSampler zipf(kRanks, s);
  Rng rng(777);
  std::vector<int> head(4, 0);
  int64_t max_rank = 0;
  for (int k = 0; k < kDraws; ++k) {
    const int64_t r = zipf(rng);
    ASSERT_GE(r, 0);
    ASSERT_LT(r, kRanks);
    if (r < 4) ++head[static_cast<std::size_t>(r)];
    max_rank = std::max(max_rank, r);
  }
  const std::vector<double> p = zipf_pmf(kRanks, s);
  for (int r = 0; r < 4; ++r) {
    const double pr = p[static_cast<std::size_t>(r)];
    EXPECT_NEAR(head[static_cast<std::size_t>(r)] / static_cast<double>(kDraws), pr,
                5.0 * std::sqrt(pr * (1 - pr) / kDraws));
  }
  EXPECT_GT(max_rank, kRanks / 4);  // the tail is reached too
  ZipfSampler degenerate(1, 1.2);
  EXPECT_EQ(degenerate(rng), 0);
}

TEST(ZipfSampler, SameStreamSameDraws) {
  ZipfSampler zipf(40000000, 1.05);
  Rng a(5, 9), b(5, 9);
  for (int k = 0; k < 1000; ++k) ASSERT_EQ(zipf(a), zipf(b));
}

TEST(ZipfSampler, RejectsBadArguments) {
  EXPECT_THROW(ZipfSampler(0, 1.0), ConfigError);
  EXPECT_THROW(ZipfSampler(10, -0.5), ConfigError);
  EXPECT_THROW(ZipfSampler(10, std::nan("")), ConfigError);
}

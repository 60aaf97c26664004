// The duplicates model: id masses, parsing, and the expected distinct rows of a batch
// against an exact double-precision sum over every row and against sampled batches.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "data/zipf.h"
#include "plan/id_distribution.h"

namespace hetrec {
namespace {

// Exact P(row r) in double precision, row by row.
std::vector<double> exact_probabilities(const IdDistribution& d, int64_t rows) {
  std::vector<double> p(static_cast<std::size_t>(rows));
  const double n = static_cast<double>(rows);
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double v = 1.0 / n;
    if (d.law == IdLaw::zipf) v = std::pow(static_cast<double>(r + 1), -d.exponent);
    if (d.law == IdLaw::power) v = std::pow((r + 1) / n, 1.0 / d.exponent) - std::pow(r / n, 1.0 / d.exponent);
    p[static_cast<std::size_t>(r)] = v;
    total += v;
  }
  for (double& v : p) v /= total;
  return p;
}

double exact_unique(const std::vector<double>& p, double draws) {
  double u = 0.0;
  for (double v : p) u += 1.0 - std::pow(1.0 - v, draws);
  return u;
}

TEST(IdDistribution, ParsesAndDescribes) {
  for (const char* text : {"uniform", "zipf:1.05", "power:3", "zipf:0"}) {
    const IdDistribution d = parse_id_distribution(text, "--ids");
    EXPECT_EQ(describe_id_distribution(d), text);
  }
  EXPECT_EQ(parse_id_distribution("power:3", "k").law, IdLaw::power);
  EXPECT_DOUBLE_EQ(parse_id_distribution("zipf:1.2", "k").exponent, 1.2);
  for (const char* bad : {"", "zipf", "zipf:", "zipf:x", "zipf:-1", "power:0", "cauchy:1", "zipf:1.0x"}) {
    try {
      parse_id_distribution(bad, "--ids");
      FAIL() << "accepted '" << bad << "'";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("--ids"), std::string::npos) << e.what();
    }
  }
}

TEST(IdDistribution, MassesMatchTheExactLawAndSumToOne) {
  Rng rng(7);
  for (const IdDistribution d : {IdDistribution{IdLaw::uniform, 0.0}, IdDistribution{IdLaw::zipf, 1.05},
                                 IdDistribution{IdLaw::zipf, 0.6}, IdDistribution{IdLaw::power, 3.0}}) {
    const int64_t rows = 3000 + static_cast<int64_t>(rng.below(20000));
    const std::vector<double> p = exact_probabilities(d, rows);
    EXPECT_NEAR(id_mass(d, rows, 0, rows), 1.0, 1e-12);
    for (int i = 0; i < 20; ++i) {
      const int64_t a = static_cast<int64_t>(rng.below(static_cast<uint64_t>(rows)));
      const int64_t b = a + static_cast<int64_t>(rng.below(static_cast<uint64_t>(rows - a) + 1));
      double ref = 0.0;
      for (int64_t r = a; r < b; ++r) ref += p[static_cast<std::size_t>(r)];
      // zipf beyond the exactly summed rows uses the midpoint integral of k^-s.
      EXPECT_NEAR(id_mass(d, rows, a, b), ref, 1e-7 * std::max(ref, 1e-3))
          << describe_id_distribution(d) << " rows " << rows << " [" << a << ", " << b << ")";
    }
  }
}

TEST(IdDistribution, ExpectedUniqueRowsMatchesTheExactSum) {
  Rng rng(11);
  for (const IdDistribution d : {IdDistribution{IdLaw::uniform, 0.0}, IdDistribution{IdLaw::zipf, 1.05},
                                 IdDistribution{IdLaw::zipf, 0.3}, IdDistribution{IdLaw::power, 3.0},
                                 IdDistribution{IdLaw::power, 1.5}}) {
    for (int i = 0; i < 3; ++i) {
      const int64_t rows = 1 + static_cast<int64_t>(rng.below(400000));
      const double draws = 1.0 + static_cast<double>(rng.below(300000));
      const double ref = exact_unique(exact_probabilities(d, rows), draws);
      const double got = expected_unique_rows(d, rows, draws);
      EXPECT_NEAR(got, ref, 2e-4 * ref) << describe_id_distribution(d) << " rows " << rows << " draws " << draws;
      EXPECT_LE(got, std::min<double>(rows, draws) * (1 + 1e-12));
    }
  }
  EXPECT_EQ(expected_unique_rows(IdDistribution{}, 100, 0.0), 0.0);
  EXPECT_NEAR(expected_unique_rows(IdDistribution{IdLaw::uniform, 0}, 1, 5.0), 1.0, 1e-12);
  EXPECT_THROW(expected_unique_rows(IdDistribution{}, 0, 5.0), ConfigError);
}

// Distinct rows of sampled batches: e2e_bench's power law and the synthetic data's Zipf
// sampler, against the model's expectation (the sampling error of the mean of 4
// batches is well below 1%).
TEST(IdDistribution, ExpectedUniqueRowsMatchesSampledBatches) {
  const int64_t rows = 2000000;
  const int64_t draws = 400000;
  const int batches = 4;
  Rng rng(3);
  ZipfSampler zipf(rows, 1.05);
  for (const IdDistribution d : {IdDistribution{IdLaw::power, 3.0}, IdDistribution{IdLaw::zipf, 1.05}}) {
    double mean = 0.0;
    for (int k = 0; k < batches; ++k) {
      std::vector<bool> seen(static_cast<std::size_t>(rows), false);
      int64_t unique = 0;
      for (int64_t i = 0; i < draws; ++i) {
        int64_t id = 0;
        if (d.law == IdLaw::power) {
          const double u = rng.uniform();
          id = std::min<int64_t>(rows - 1, static_cast<int64_t>(std::floor(static_cast<double>(rows) * u * u * u)));
        } else {
          id = zipf(rng);
        }
        if (!seen[static_cast<std::size_t>(id)]) {
          seen[static_cast<std::size_t>(id)] = true;
          ++unique;
        }
      }
      mean += static_cast<double>(unique) / batches;
    }
    const double expected = expected_unique_rows(d, rows, static_cast<double>(draws));
    EXPECT_NEAR(expected, mean, 0.01 * mean) << describe_id_distribution(d);
  }
}

}  // namespace
}  // namespace hetrec

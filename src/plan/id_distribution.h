#pragma once
// How the ids of one table are distributed over its rows, and the expected number of
// distinct rows a batch touches: the duplicates model of the planner. Skewed ids make the
// backward update far fewer rows than the batch has ids, and decide how much of a table
// placed in host memory crosses the bus.
#include <cstdint>
#include <string>
#include <string_view>

namespace hetrec::inline plan {

enum class IdLaw {
  uniform,  // every row equally likely
  zipf,     // P(rank r) proportional to (r + 1)^-exponent (data/zipf.h, the synthetic data)
  power,    // id = floor(rows * u^exponent), u uniform in [0, 1) (the e2e benchmark's batches)
};

struct IdDistribution {
  IdLaw law = IdLaw::zipf;
  double exponent = 1.05;  // zipf: >= 0; power: > 0; ignored for uniform
};

// "uniform", "zipf:1.05", "power:3". Throws ConfigError naming `key` when malformed.
IdDistribution parse_id_distribution(std::string_view text, std::string_view key);
std::string describe_id_distribution(const IdDistribution& d);

// Probability that one id of a `rows`-row table falls on rows [first, last).
double id_mass(const IdDistribution& d, int64_t rows, int64_t first, int64_t last);

// Expected distinct rows among `draws` independent ids of a `rows`-row table:
//   E[unique] = sum over rows r of 1 - (1 - p_r)^draws.
// The first rows (the hottest under zipf and power laws) are summed one by one, the rest
// in geometric buckets over which p_r is nearly constant; the bucketing error is below
// 1e-4 relative (tests/plan/test_id_distribution.cpp checks it against the exact sum).
double expected_unique_rows(const IdDistribution& d, int64_t rows, double draws);
// The same sum over rows [first, last) only (in the law's row order: row 0 is the hottest
// under zipf and power): the distinct rows of that block among `draws` ids of the table.
double expected_unique_rows_in(const IdDistribution& d, int64_t rows, int64_t first, int64_t last, double draws);

}  // namespace hetrec::plan::plan

#include "plan/id_distribution.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>

#include "core/error.h"

namespace hetrec::inline plan {
namespace {

// Rows summed one by one before the geometric buckets start: under zipf and power laws
// the probability changes fastest among the first rows.
constexpr int64_t kExactRows = 2048;
// Each geometric bucket spans 0.5% more rows than the last starts at: p_r varies by less
// than 0.5 x exponent % across a bucket, which keeps E[unique] within 1e-4 relative.
constexpr double kBucketGrowth = 1.005;

// (b^c - a^c) for 0 < a <= b, without cancellation when b is close to a.
double power_difference(double a, double b, double c) {
  return std::pow(a, c) * std::expm1(c * std::log(b / a));
}

// Sum of k^-s for k in [1, n]: exact up to kExactRows, then the midpoint-rule integral.
double zipf_prefix(double s, int64_t n) {
  double sum = 0.0;
  const int64_t exact = std::min(n, kExactRows);
  for (int64_t k = 1; k <= exact; ++k) sum += std::pow(static_cast<double>(k), -s);
  if (n <= exact) return sum;
  const double a = static_cast<double>(exact) + 0.5, b = static_cast<double>(n) + 0.5;
  return sum + (s == 1.0 ? std::log(b / a) : power_difference(a, b, 1.0 - s) / (1.0 - s));
}

// Sum of k^-s over ranks k = first + 1 .. last (rows [first, last)).
double zipf_weight(double s, int64_t first, int64_t last) {
  if (last <= kExactRows) {
    double sum = 0.0;
    for (int64_t k = first + 1; k <= last; ++k) sum += std::pow(static_cast<double>(k), -s);
    return sum;
  }
  if (first < kExactRows) return zipf_weight(s, first, kExactRows) + zipf_weight(s, kExactRows, last);
  const double a = static_cast<double>(first) + 0.5, b = static_cast<double>(last) + 0.5;
  return s == 1.0 ? std::log(b / a) : power_difference(a, b, 1.0 - s) / (1.0 - s);
}

void validate(const IdDistribution& d, int64_t rows) {
  if (rows < 1) throw ConfigError("id distribution: a table needs at least one row, got " + std::to_string(rows));
  if (d.law == IdLaw::zipf && !(d.exponent >= 0.0))
    throw ConfigError("id distribution zipf: exponent must be >= 0, got " + std::to_string(d.exponent));
  if (d.law == IdLaw::power && !(d.exponent > 0.0))
    throw ConfigError("id distribution power: exponent must be > 0, got " + std::to_string(d.exponent));
}

// 1 - (1 - p)^n for each of `count` rows of probability p = mass / count.
double touched(double mass, double count, double draws) {
  if (mass <= 0.0) return 0.0;
  const double p = std::min(1.0, mass / count);
  if (p >= 1.0) return count;
  return -count * std::expm1(draws * std::log1p(-p));
}

}  // namespace

IdDistribution parse_id_distribution(std::string_view text, std::string_view key) {
  const auto fail = [&](const std::string& why) -> IdDistribution {
    throw ConfigError(std::string(key) + " = '" + std::string(text) + "': " + why +
                      " (expected uniform, zipf:<exponent >= 0> or power:<exponent > 0>)");
  };
  if (text == "uniform") return IdDistribution{IdLaw::uniform, 0.0};
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return fail("unknown distribution");
  const std::string_view law = text.substr(0, colon);
  const std::string number(text.substr(colon + 1));
  double exponent = 0.0;
  try {
    std::size_t used = 0;
    exponent = std::stod(number, &used);
    if (used != number.size()) return fail("the exponent is not a number");
  } catch (const std::exception&) {
    return fail("the exponent is not a number");
  }
  IdDistribution d;
  if (law == "zipf") {
    d.law = IdLaw::zipf;
    if (!(exponent >= 0.0)) return fail("the zipf exponent must be >= 0");
  } else if (law == "power") {
    d.law = IdLaw::power;
    if (!(exponent > 0.0)) return fail("the power exponent must be > 0");
  } else {
    return fail("unknown distribution '" + std::string(law) + "'");
  }
  d.exponent = exponent;
  return d;
}

std::string describe_id_distribution(const IdDistribution& d) {
  char buf[64];
  switch (d.law) {
    case IdLaw::uniform: return "uniform";
    case IdLaw::zipf: std::snprintf(buf, sizeof buf, "zipf:%g", d.exponent); return buf;
    case IdLaw::power: std::snprintf(buf, sizeof buf, "power:%g", d.exponent); return buf;
  }
  return "?";
}

double id_mass(const IdDistribution& d, int64_t rows, int64_t first, int64_t last) {
  validate(d, rows);
  first = std::clamp<int64_t>(first, 0, rows);
  last = std::clamp<int64_t>(last, first, rows);
  if (first == last) return 0.0;
  const double r = static_cast<double>(rows);
  switch (d.law) {
    case IdLaw::uniform: return static_cast<double>(last - first) / r;
    case IdLaw::zipf: return zipf_weight(d.exponent, first, last) / zipf_prefix(d.exponent, rows);
    case IdLaw::power: {
      // P(id < x) = P(rows u^a < x) = (x / rows)^(1/a).
      const double c = 1.0 / d.exponent;
      if (first == 0) return std::pow(static_cast<double>(last) / r, c);
      return power_difference(static_cast<double>(first) / r, static_cast<double>(last) / r, c);
    }
  }
  return 0.0;
}

double expected_unique_rows(const IdDistribution& d, int64_t rows, double draws) {
  return expected_unique_rows_in(d, rows, 0, rows, draws);
}

namespace {

// expected_unique_rows_in is a pure function the sharding search calls with the same
// arguments many times (every candidate sharding recounts every table); the last results
// are kept per thread. Bounded: cleared when full.
struct UniqueRowsKey {
  IdLaw law;
  double exponent;
  int64_t rows, begin, end;
  double draws;
  bool operator==(const UniqueRowsKey&) const = default;
};
struct UniqueRowsKeyHash {
  std::size_t operator()(const UniqueRowsKey& k) const {
    std::size_t h = std::hash<double>()(k.exponent) ^ (static_cast<std::size_t>(k.law) << 1);
    for (const std::size_t v : {std::hash<int64_t>()(k.rows), std::hash<int64_t>()(k.begin), std::hash<int64_t>()(k.end),
                                std::hash<double>()(k.draws)})
      h = h * 1000003u ^ v;
    return h;
  }
};
constexpr std::size_t kUniqueRowsMemo = 1 << 16;

double unique_rows_sum(const IdDistribution& d, int64_t rows, int64_t begin, int64_t end, double draws);

}  // namespace

double expected_unique_rows_in(const IdDistribution& d, int64_t rows, int64_t begin, int64_t end, double draws) {
  validate(d, rows);
  begin = std::clamp<int64_t>(begin, 0, rows);
  end = std::clamp<int64_t>(end, begin, rows);
  if (draws <= 0.0 || begin == end) return 0.0;
  thread_local std::unordered_map<UniqueRowsKey, double, UniqueRowsKeyHash> memo;
  const UniqueRowsKey key{d.law, d.law == IdLaw::uniform ? 0.0 : d.exponent, rows, begin, end, draws};
  if (const auto it = memo.find(key); it != memo.end()) return it->second;
  if (memo.size() >= kUniqueRowsMemo) memo.clear();
  const double unique = unique_rows_sum(d, rows, begin, end, draws);
  memo.emplace(key, unique);
  return unique;
}

namespace {

double unique_rows_sum(const IdDistribution& d, int64_t rows, int64_t begin, int64_t end, double draws) {
  if (d.law == IdLaw::uniform) {
    const double block = static_cast<double>(end - begin);
    return touched(block / static_cast<double>(rows), block, draws);
  }
  const double total = d.law == IdLaw::zipf ? zipf_prefix(d.exponent, rows) : 1.0;
  double unique = 0.0;
  int64_t first = begin;
  while (first < end) {
    int64_t last = first + 1;
    if (first >= kExactRows)
      last = std::max(first + 1, static_cast<int64_t>(std::ceil(static_cast<double>(first) * kBucketGrowth)));
    last = std::min(last, end);
    const double mass = d.law == IdLaw::zipf ? zipf_weight(d.exponent, first, last) / total
                                             : id_mass(d, rows, first, last);
    unique += touched(mass, static_cast<double>(last - first), draws);
    first = last;
  }
  return std::min(unique, std::min(static_cast<double>(end - begin), draws));
}

}  // namespace

}  // namespace hetrec::plan::plan

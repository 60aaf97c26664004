// The portable device primitives behind the embedding backward: exclusive scan and the
// stable radix sort, against host references on fresh random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/rng.h"
#include "kernels/radix_sort.h"
#include "kernels/scan.h"

namespace hetrec {
namespace {

TEST(DeviceScan, MatchesHostPrefixSumsAcrossTileBoundaries) {
  HETREC_REQUIRE_GPU();
  Rng rng(31);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{2047}, int64_t{2048}, int64_t{2049}, int64_t{100000},
                    int64_t{5000001}}) {
    std::vector<uint32_t> in(static_cast<std::size_t>(n));
    for (auto& v : in) v = static_cast<uint32_t>(rng.below(1000));
    gpu::DeviceBuffer d_in = testing::to_device(in);
    gpu::DeviceBuffer d_out = testing::to_device(std::vector<uint32_t>(in.size(), 0xDEADBEEFu));
    gpu::DeviceBuffer d_total = testing::to_device(std::vector<uint32_t>{0xDEADBEEFu});
    const std::size_t ws_bytes = kernels::exclusive_scan_workspace_bytes(n);
    gpu::DeviceBuffer ws(ws_bytes + 1);
    kernels::exclusive_scan(d_in.as<uint32_t>(), d_out.as<uint32_t>(), n, d_total.as<uint32_t>(), ws.get(), ws_bytes,
                            nullptr);
    const auto out = testing::to_host<uint32_t>(d_out, in.size());
    uint32_t running = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(out[i], running) << "n=" << n << " i=" << i;
      running += in[i];
    }
    EXPECT_EQ(testing::to_host<uint32_t>(d_total, 1)[0], running) << "n=" << n;
  }
}

// Fills the alternate buffers before a sort, so that a slot the sort never wrote shows.
constexpr uint32_t kPoison = 0xDEADBEEFu;
// Pairs per tile of the sort (kernels/radix_sort.cu), for sizes around tile boundaries.
constexpr int64_t kTile = 4096;

enum class KeyPattern { uniform, few_distinct, all_equal, skewed, descending };

const char* pattern_name(KeyPattern p) {
  switch (p) {
    case KeyPattern::uniform: return "uniform";
    case KeyPattern::few_distinct: return "few_distinct";
    case KeyPattern::all_equal: return "all_equal";
    case KeyPattern::skewed: return "skewed";
    case KeyPattern::descending: return "descending";
  }
  return "?";
}

// Full 32-bit keys: the bits above key_bits differ between keys that tie on the low bits,
// so a sort that looked at them, or lost a pair's key, shows.
std::vector<uint32_t> make_keys(KeyPattern pattern, int64_t count, Rng& rng) {
  // Distinct values of the few_distinct and skewed patterns.
  constexpr std::size_t kFewValues = 7, kSkewedValues = 32;  // countr_zero below is in [0, 31]
  std::vector<uint32_t> pool(pattern == KeyPattern::skewed ? kSkewedValues : kFewValues);
  for (auto& v : pool) v = rng.next_u32();
  const uint32_t single = rng.next_u32();
  std::vector<uint32_t> keys(static_cast<std::size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    uint32_t& k = keys[static_cast<std::size_t>(i)];
    switch (pattern) {
      case KeyPattern::uniform: k = rng.next_u32(); break;
      case KeyPattern::few_distinct: k = pool[rng.below(pool.size())]; break;
      case KeyPattern::all_equal: k = single; break;
      // Value j with probability 2^-(j+1): half the pairs share one key.
      case KeyPattern::skewed:
        k = pool[static_cast<std::size_t>(std::countr_zero(rng.next_u32() | 0x80000000u))];
        break;
      case KeyPattern::descending: k = 0xFFFFFFFFu - static_cast<uint32_t>(i); break;
    }
  }
  return keys;
}

// Sorts the first n of keys.size() pairs (the capacity) with the count on the device, or
// all of them with the count on the host, and checks against std::stable_sort on the low
// key_bits bits: the flag names the buffer the pass count implies, the first n pairs are
// the stable order, and nothing at or past n in the result buffer was written.
void expect_stable_sort(const std::vector<uint32_t>& keys, int64_t n, int key_bits, bool device_count, Rng& rng,
                        const std::string& label) {
  SCOPED_TRACE(label + " key_bits=" + std::to_string(key_bits) + " n=" + std::to_string(n) +
               " capacity=" + std::to_string(keys.size()) + (device_count ? " (device count)" : " (host count)"));
  const auto capacity = static_cast<int64_t>(keys.size());
  ASSERT_TRUE(device_count || n == capacity);
  const uint32_t salt = rng.next_u32();  // values are unique: the output must be a permutation
  std::vector<uint32_t> values(keys.size());
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<uint32_t>(i) ^ salt;

  gpu::DeviceBuffer k = testing::to_device(keys), v = testing::to_device(values);
  gpu::DeviceBuffer k2 = testing::to_device(std::vector<uint32_t>(keys.size(), kPoison));
  gpu::DeviceBuffer v2 = testing::to_device(std::vector<uint32_t>(keys.size(), kPoison));
  gpu::DeviceBuffer count = testing::to_device(std::vector<int32_t>{static_cast<int32_t>(n)});
  const std::size_t ws_bytes = kernels::radix_sort_workspace_bytes(capacity);
  gpu::DeviceBuffer ws = testing::to_device(std::vector<uint8_t>(ws_bytes, 0xFF));  // stale workspace
  kernels::SortBuffers bufs{k.as<uint32_t>(), v.as<uint32_t>(), k2.as<uint32_t>(), v2.as<uint32_t>()};
  const bool primary = kernels::radix_sort_pairs(bufs, device_count ? count.as<int32_t>() : nullptr, capacity,
                                                 key_bits, ws.get(), ws_bytes, nullptr);
  const int passes = (key_bits + 7) / 8;
  EXPECT_EQ(primary, passes % 2 == 0);
  const auto got_k = testing::to_host<uint32_t>(primary ? k : k2, keys.size());
  const auto got_v = testing::to_host<uint32_t>(primary ? v : v2, keys.size());

  const uint32_t mask = key_bits == 32 ? 0xFFFFFFFFu : ((1u << key_bits) - 1u);
  std::vector<uint32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return (keys[a] & mask) < (keys[b] & mask); });
  for (std::size_t i = 0; i < order.size(); ++i) {
    ASSERT_EQ(got_v[i], values[order[i]]) << "i=" << i;
    ASSERT_EQ(got_k[i], keys[order[i]]) << "i=" << i;
  }
  for (std::size_t i = order.size(); i < keys.size(); ++i) {
    ASSERT_EQ(got_k[i], primary ? keys[i] : kPoison) << "written past the count at i=" << i;
    ASSERT_EQ(got_v[i], primary ? values[i] : kPoison) << "written past the count at i=" << i;
  }
}

TEST(DeviceRadixSort, StableByMaskedKeyWithDeviceCount) {
  HETREC_REQUIRE_GPU();
  Rng rng(32);
  // Widths of one to four passes, a last pass of fewer than 8 bits (1, 5, 13, 17, 27), and
  // none (0: the pairs stay where they are).
  for (int key_bits : {0, 1, 5, 8, 13, 17, 27, 28, 32}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{255}, kTile - 1, kTile, kTile + 1, int64_t{70001}}) {
      const int64_t capacity = n + 1000;  // the count on the device is below the capacity
      expect_stable_sort(make_keys(KeyPattern::uniform, capacity, rng), n, key_bits, true, rng, "uniform");
    }
  }
}

TEST(DeviceRadixSort, StableWithManyTiesAllEqualAndSkewedKeys) {
  HETREC_REQUIRE_GPU();
  Rng rng(33);
  for (KeyPattern pattern :
       {KeyPattern::few_distinct, KeyPattern::all_equal, KeyPattern::skewed, KeyPattern::descending}) {
    for (int key_bits : {8, 13, 27, 32}) {
      for (int64_t n : {int64_t{1}, 3 * kTile + 17, int64_t{200003}}) {
        const int64_t capacity = n + 5000;
        expect_stable_sort(make_keys(pattern, capacity, rng), n, key_bits, true, rng, pattern_name(pattern));
      }
    }
  }
}

TEST(DeviceRadixSort, HostCountSortsTheWholeCapacity) {
  HETREC_REQUIRE_GPU();
  Rng rng(34);
  for (int key_bits : {16, 32}) {
    for (int64_t capacity : {int64_t{1}, kTile, 3 * kTile + 1, int64_t{1000003}}) {
      expect_stable_sort(make_keys(KeyPattern::uniform, capacity, rng), capacity, key_bits, false, rng, "uniform");
    }
  }
}

TEST(DeviceRadixSort, CountFarBelowTheCapacity) {
  HETREC_REQUIRE_GPU();
  Rng rng(35);
  // Most tiles lie past the count: they count nothing and write nothing.
  constexpr int64_t kCapacity = 300000;
  for (int64_t n : {int64_t{1}, kTile + 1}) {
    for (int key_bits : {9, 32}) {
      expect_stable_sort(make_keys(KeyPattern::skewed, kCapacity, rng), n, key_bits, true, rng, "skewed");
    }
  }
}

}  // namespace
}  // namespace hetrec

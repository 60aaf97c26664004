// The portable device primitives behind the embedding backward: exclusive scan and the
// stable radix sort, against host references on fresh random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
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

TEST(DeviceRadixSort, StableByMaskedKeyWithDeviceCount) {
  HETREC_REQUIRE_GPU();
  Rng rng(32);
  for (int key_bits : {1, 5, 8, 17, 28, 32}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{300}, int64_t{2048}, int64_t{70001}, int64_t{1000003}}) {
      const int64_t capacity = n + 1000;  // the count on the device is below the capacity
      std::vector<uint32_t> keys(static_cast<std::size_t>(capacity)), values(static_cast<std::size_t>(capacity));
      for (int64_t i = 0; i < capacity; ++i) {
        // Few distinct keys for small widths: many ties, so stability is exercised.
        keys[static_cast<std::size_t>(i)] = rng.next_u32();
        values[static_cast<std::size_t>(i)] = static_cast<uint32_t>(i);
      }
      gpu::DeviceBuffer k = testing::to_device(keys), v = testing::to_device(values);
      gpu::DeviceBuffer k2 = testing::to_device(std::vector<uint32_t>(keys.size(), 0)),
                        v2 = testing::to_device(std::vector<uint32_t>(keys.size(), 0));
      gpu::DeviceBuffer count = testing::to_device(std::vector<int32_t>{static_cast<int32_t>(n)});
      const std::size_t ws_bytes = kernels::radix_sort_workspace_bytes(capacity);
      gpu::DeviceBuffer ws(ws_bytes);
      kernels::SortBuffers bufs{k.as<uint32_t>(), v.as<uint32_t>(), k2.as<uint32_t>(), v2.as<uint32_t>()};
      const bool primary =
          kernels::radix_sort_pairs(bufs, count.as<int32_t>(), capacity, key_bits, ws.get(), ws_bytes, nullptr);
      const auto got_k = testing::to_host<uint32_t>(primary ? k : k2, static_cast<std::size_t>(n));
      const auto got_v = testing::to_host<uint32_t>(primary ? v : v2, static_cast<std::size_t>(n));

      const uint32_t mask = key_bits == 32 ? 0xFFFFFFFFu : ((1u << key_bits) - 1u);
      std::vector<uint32_t> order(static_cast<std::size_t>(n));
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return (keys[a] & mask) < (keys[b] & mask); });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(got_v[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(i)])
            << "bits=" << key_bits << " n=" << n << " i=" << i;
        ASSERT_EQ(got_k[static_cast<std::size_t>(i)], keys[order[static_cast<std::size_t>(i)]]);
      }
    }
  }
}

}  // namespace
}  // namespace hetrec

// The caching device allocator: size classes (host arithmetic, runs everywhere) and
// reuse without driver calls in a steady loop (device).
#include <gtest/gtest.h>

#include <vector>

#include "core/tensor.h"
#include "device_test_support.h"
#include "gpu/caching_allocator.h"

namespace hetrec {
namespace {

using gpu::CachingDeviceAllocator;

TEST(CachingAllocator, SizeClassesCoverRequestsWithBoundedWaste) {
  std::size_t previous = 0;
  for (std::size_t bytes : {std::size_t{1}, std::size_t{511}, std::size_t{512}, std::size_t{513}, std::size_t{4096},
                            std::size_t{1} << 20, (std::size_t{1} << 20) + 1, std::size_t{3} << 22,
                            (std::size_t{1} << 28) - 7, (std::size_t{1} << 28) + 1, std::size_t{104} << 30}) {
    const std::size_t cls = CachingDeviceAllocator::size_class(bytes);
    EXPECT_GE(cls, bytes);
    EXPECT_GE(cls, previous) << "classes must grow with the request";
    EXPECT_EQ(cls % 512, 0u);
    if (bytes > 4096) {
      EXPECT_LE(static_cast<double>(cls), 1.25 * static_cast<double>(bytes) + 1) << bytes;
    }
    if (bytes > (std::size_t{256} << 20)) {
      EXPECT_LT(cls - bytes, std::size_t{2} << 20) << bytes;
    }
    previous = cls;
  }
  EXPECT_EQ(CachingDeviceAllocator::size_class(0), 512u);
}

TEST(CachingAllocator, SteadyLoopReusesBlocksWithoutTheDriver) {
  HETREC_REQUIRE_GPU();
  CachingDeviceAllocator alloc(0);
  const std::vector<std::vector<int64_t>> shapes = {{1000, 13}, {4096, 128}, {7}, {300000}};
  for (int step = 0; step < 5; ++step) {
    std::vector<Tensor> live;
    for (const auto& s : shapes) live.push_back(Tensor::empty(s, DType::f32, alloc));
    EXPECT_EQ(live[0].device().kind, DeviceKind::gpu);
    if (step == 0) {
      EXPECT_EQ(alloc.stats().driver_allocations, static_cast<int64_t>(shapes.size()));
    }
  }
  const gpu::AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.driver_allocations, static_cast<int64_t>(shapes.size())) << "no driver call after the first step";
  EXPECT_EQ(s.cache_hits, static_cast<int64_t>(4 * shapes.size()));
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_cached, s.bytes_reserved);
  EXPECT_GE(s.peak_bytes_in_use, std::size_t{4096} * 128 * 4);
  alloc.release_cached();
  EXPECT_EQ(alloc.stats().bytes_reserved, 0u);
}

}  // namespace
}  // namespace hetrec

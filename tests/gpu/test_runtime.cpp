// The device shim: discovery, errors, RAII buffers, streams, events, graphs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "device_test_support.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "gpu/event.h"
#include "gpu/graph.h"
#include "gpu/memory.h"
#include "gpu/stream.h"

namespace hetrec {
namespace {

TEST(GpuRuntime, DeviceCountNeverThrows) {
  // On a machine without a GPU (or driver) this is 0, not an exception.
  EXPECT_GE(gpu::device_count(), 0);
}

TEST(GpuRuntime, PropertiesMatchCompiledWarpSize) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties p = gpu::device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_EQ(p.warp_size, gpu::kWarpSize);
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_GT(p.global_memory_bytes, std::size_t{1} << 30);
  EXPECT_EQ(gpu::multiprocessor_count(0), p.multiprocessors);
  const gpu::MemoryInfo m = gpu::memory_info();
  EXPECT_GT(m.free_bytes, 0u);
  EXPECT_LE(m.free_bytes, m.total_bytes);
}

TEST(GpuRuntime, FailedCallNamesCallFileAndLine) {
  HETREC_REQUIRE_GPU();
  try {
    gpu::set_device(1 << 20);
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice"), std::string::npos) << what;
    EXPECT_NE(what.find("device.cpp"), std::string::npos) << what;
  }
  gpu::set_device(0);
}

TEST(GpuRuntime, OutOfMemorySaysRequestedAndFree) {
  HETREC_REQUIRE_GPU();
  const std::size_t absurd = std::size_t{1} << 52;  // 4 PiB: more than any device has
  try {
    gpu::DeviceBuffer b(absurd);
    FAIL() << "expected OutOfMemoryError";
  } catch (const OutOfMemoryError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(std::to_string(absurd)), std::string::npos) << what;
    EXPECT_NE(what.find("free"), std::string::npos) << what;
  }
  // The runtime stays usable after the failure.
  gpu::DeviceBuffer ok(1024);
  EXPECT_NE(ok.get(), nullptr);
}

TEST(GpuRuntime, AsyncCopiesRoundTripThroughPinnedMemory) {
  HETREC_REQUIRE_GPU();
  constexpr std::size_t kCount = 1 << 20;
  Rng rng(11);
  gpu::PinnedBuffer in(kCount * sizeof(float)), out(kCount * sizeof(float));
  for (std::size_t i = 0; i < kCount; ++i) in.as<float>()[i] = static_cast<float>(rng.normal());
  for (std::size_t i = 0; i < kCount; ++i) out.as<float>()[i] = -1.0f;
  gpu::DeviceBuffer a(kCount * sizeof(float)), b(kCount * sizeof(float));
  gpu::Stream s;
  gpu::memcpy_async(a.get(), in.get(), a.bytes(), gpu::CopyKind::host_to_device, s.get());
  gpu::memcpy_async(b.get(), a.get(), a.bytes(), gpu::CopyKind::device_to_device, s.get());
  gpu::memcpy_async(out.get(), b.get(), b.bytes(), gpu::CopyKind::device_to_host, s.get());
  s.synchronize();
  for (std::size_t i = 0; i < kCount; ++i) ASSERT_EQ(out.as<float>()[i], in.as<float>()[i]) << i;
}

TEST(GpuRuntime, EventsOrderStreamsAndTime) {
  HETREC_REQUIRE_GPU();
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  gpu::DeviceBuffer a(kBytes), b(kBytes);
  gpu::Stream producer, consumer;
  gpu::Event start, done;
  start.record(producer.get());
  gpu::memset_async(a.get(), 0x5A, kBytes, producer.get());
  done.record(producer.get());
  consumer.wait(done);
  gpu::memcpy_async(b.get(), a.get(), kBytes, gpu::CopyKind::device_to_device, consumer.get());
  consumer.synchronize();
  std::vector<unsigned char> host(kBytes);
  gpu::memcpy_sync(host.data(), b.get(), kBytes, gpu::CopyKind::device_to_host);
  for (std::size_t i = 0; i < kBytes; i += 4093) ASSERT_EQ(host[i], 0x5A) << i;
  EXPECT_GE(gpu::Event::elapsed_ms(start, done), 0.0f);
}

TEST(GpuRuntime, CapturedGraphReplaysWithCurrentPinnedContents) {
  HETREC_REQUIRE_GPU();
  gpu::Stream s;
  gpu::PinnedBuffer in(sizeof(float) * 4), out(sizeof(float) * 4);
  gpu::DeviceBuffer d(sizeof(float) * 4);
  gpu::GraphExec g;
  g.begin_capture(s.get());
  gpu::memcpy_async(d.get(), in.get(), d.bytes(), gpu::CopyKind::host_to_device, s.get());
  gpu::memcpy_async(out.get(), d.get(), d.bytes(), gpu::CopyKind::device_to_host, s.get());
  g.end_capture(s.get());
  ASSERT_TRUE(g.ready());
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 4; ++i) in.as<float>()[i] = static_cast<float>(round * 10 + i);
    g.launch(s.get());
    s.synchronize();
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out.as<float>()[i], static_cast<float>(round * 10 + i));
  }
}

}  // namespace
}  // namespace hetrec

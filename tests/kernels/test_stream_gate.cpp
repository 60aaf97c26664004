// The stream gate (kernels/stream_gate.h): work enqueued behind a closed gate does not run
// until the host opens it, then runs; a gate the host never opens opens itself after its
// timeout and says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/error.h"
#include "gpu/device_buffer.h"
#include "gpu/memory.h"
#include "gpu/stream.h"
#include "kernels/stream_gate.h"

namespace hetrec {
namespace {

constexpr uint32_t kPoison = 0xDEADBEEFu;

uint32_t read_host(const gpu::PinnedBuffer& b) {
  uint32_t v = 0;
  std::memcpy(&v, b.get(), sizeof(v));
  return v;
}

TEST(StreamGate, WorkBehindAClosedGateWaitsForTheHostThenRuns) {
  HETREC_REQUIRE_GPU();
  const uint32_t value = 0x12345678u;
  gpu::DeviceBuffer src = testing::to_device(std::vector<uint32_t>{value});
  gpu::PinnedBuffer dst(sizeof(uint32_t));
  gpu::Stream stream;
  kernels::StreamGate gate;
  for (int round = 0; round < 3; ++round) {  // a gate closes again once opened
    std::memcpy(dst.get(), &kPoison, sizeof(kPoison));
    gate.close(stream.get());
    gpu::memcpy_async(dst.get(), src.get(), sizeof(uint32_t), gpu::CopyKind::device_to_host, stream.get());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(read_host(dst), kPoison) << "the copy ran before the gate opened (round " << round << ")";
    gate.open();
    stream.synchronize();
    EXPECT_EQ(read_host(dst), value) << "round " << round;
    EXPECT_FALSE(gate.expired()) << "round " << round;
  }
  EXPECT_THROW(
      {
        gate.close(stream.get());
        try {
          gate.close(stream.get());
        } catch (...) {
          gate.open();
          stream.synchronize();
          throw;
        }
      },
      InternalError);
}

TEST(StreamGate, AGateTheHostNeverOpensOpensItselfAndSaysSo) {
  HETREC_REQUIRE_GPU();
  const uint32_t value = 0x0BADF00Du;
  gpu::DeviceBuffer src = testing::to_device(std::vector<uint32_t>{value});
  gpu::PinnedBuffer dst(sizeof(uint32_t));
  std::memcpy(dst.get(), &kPoison, sizeof(kPoison));
  gpu::Stream stream;
  kernels::StreamGate gate(/*timeout_cycles=*/int64_t{2'000'000});  // about 1 ms
  gate.close(stream.get());
  gpu::memcpy_async(dst.get(), src.get(), sizeof(uint32_t), gpu::CopyKind::device_to_host, stream.get());
  stream.synchronize();  // returns: the gate gave up waiting
  EXPECT_EQ(read_host(dst), value);
  EXPECT_TRUE(gate.expired());
  gate.open();
  gate.close(stream.get());  // closing again clears the report
  gate.open();
  stream.synchronize();
  EXPECT_FALSE(gate.expired());
}

}  // namespace
}  // namespace hetrec

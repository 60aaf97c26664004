#include "kernels/stream_gate.h"

#include "core/error.h"
#include "gpu/check.h"

namespace hetrec::kernels {

namespace {

// One thread polls the open flag in mapped host memory (volatile: read again every time).
__global__ void stream_gate_kernel(volatile uint32_t* state, int64_t timeout_cycles) {
  const int64_t start = clock64();
  while (state[0] == 0u) {
    if (clock64() - start > timeout_cycles) {
      state[1] = 1u;
      return;
    }
  }
}

}  // namespace

StreamGate::StreamGate(int64_t timeout_cycles) : state_(2 * sizeof(uint32_t)), timeout_cycles_(timeout_cycles) {
  auto* s = static_cast<volatile uint32_t*>(state_.host());
  s[0] = 1u;
  s[1] = 0u;
}

void StreamGate::close(gpu::stream_t stream) {
  if (closed_) throw InternalError("StreamGate::close: the gate is already closed");
  auto* s = static_cast<volatile uint32_t*>(state_.host());
  s[0] = 0u;
  s[1] = 0u;
  stream_gate_kernel<<<1, 1, 0, stream>>>(static_cast<volatile uint32_t*>(state_.device_alias()),
                                          timeout_cycles_);
  HETREC_GPU_CHECK_LAUNCH("stream_gate_kernel");
  closed_ = true;
}

void StreamGate::open() {
  auto* s = static_cast<volatile uint32_t*>(state_.host());
  s[0] = 1u;
  closed_ = false;
}

bool StreamGate::expired() const { return static_cast<volatile const uint32_t*>(state_.host())[1] != 0u; }

}  // namespace hetrec::kernels

#include "gpu/event.h"

#include <cstdio>
#include <utility>

#include "gpu/check.h"

namespace hetrec::gpu {

Event::Event(bool timing) {
  HETREC_GPU_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
}

Event::~Event() {
  if (event_ && cudaEventDestroy(event_) != cudaSuccess) std::fprintf(stderr, "hetrec: cudaEventDestroy failed\n");
}

Event::Event(Event&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (event_) (void)cudaEventDestroy(event_);
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

void Event::record(stream_t stream) const { HETREC_GPU_CHECK(cudaEventRecord(event_, stream)); }

void Event::synchronize() const { HETREC_GPU_CHECK(cudaEventSynchronize(event_)); }

float Event::elapsed_ms(const Event& start, const Event& stop) {
  float ms = 0.0f;
  HETREC_GPU_CHECK(cudaEventElapsedTime(&ms, start.event_, stop.event_));
  return ms;
}

}  // namespace hetrec::gpu

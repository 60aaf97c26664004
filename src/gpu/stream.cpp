#include "gpu/stream.h"

#include <cstdio>
#include <utility>

#include "gpu/check.h"
#include "gpu/event.h"

namespace hetrec::gpu {

Stream::Stream() { HETREC_GPU_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

Stream::~Stream() {
  if (stream_ && cudaStreamDestroy(stream_) != cudaSuccess) std::fprintf(stderr, "hetrec: cudaStreamDestroy failed\n");
}

Stream::Stream(Stream&& o) noexcept : stream_(std::exchange(o.stream_, nullptr)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (stream_) (void)cudaStreamDestroy(stream_);
    stream_ = std::exchange(o.stream_, nullptr);
  }
  return *this;
}

void Stream::synchronize() const { HETREC_GPU_CHECK(cudaStreamSynchronize(stream_)); }

void synchronize(stream_t stream) { HETREC_GPU_CHECK(cudaStreamSynchronize(stream)); }

void Stream::wait(const Event& event) const { gpu::wait(stream_, event); }

void wait(stream_t stream, const Event& event) { HETREC_GPU_CHECK(cudaStreamWaitEvent(stream, event.get(), 0)); }

bool capturing(stream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  HETREC_GPU_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace hetrec::gpu

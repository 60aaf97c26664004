#pragma once
// A second stream for the GEMMs whose results a backward pass's chain of input gradients
// does not read (the weight gradients), so they run beside that chain: GpuMlp and
// GpuCrossNet enqueue them here (cublaslt::Gemm::Lane::side, its own workspace) and make
// the main stream wait only before it overwrites an operand such a GEMM still reads,
// and at the end of their backward.
#include <array>

#include "core/error.h"
#include "gpu/event.h"
#include "gpu/platform.h"
#include "gpu/stream.h"

namespace hetrec::inline model::gpu_model {

class SideLane {
 public:
  static constexpr int kMarks = 2;

  gpu::stream_t stream() const { return stream_.get(); }
  // Work enqueued on the side stream from now on waits for what `main` holds so far.
  void fork(gpu::stream_t main) {
    forked_.record(main);
    stream_.wait(forked_);
  }
  // Mark k: the end of the side stream's work so far.
  void mark(int k) { marks_.at(static_cast<std::size_t>(k)).record(stream_.get()); }
  // Work on `main` from now on waits for mark k (recorded earlier in the same pass).
  void wait(gpu::stream_t main, int k) const { gpu::wait(main, marks_.at(static_cast<std::size_t>(k))); }
  // Work on `main` from now on waits for everything on the side stream.
  void join(gpu::stream_t main) {
    joined_.record(stream_.get());
    gpu::wait(main, joined_);
  }

 private:
  gpu::Stream stream_;
  gpu::Event forked_{false}, joined_{false};
  std::array<gpu::Event, kMarks> marks_{gpu::Event(false), gpu::Event(false)};
};

}  // namespace hetrec::model::gpu_model

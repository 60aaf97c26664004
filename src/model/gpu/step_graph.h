#pragma once
// Graph capture and replay of the training step. The first step of a batch size runs
// eagerly (it plans the GEMMs and allocates what every path needs); the second, when
// nothing it touches has moved since, is captured as a graph and launched; later steps of
// that size replay it. A buffer that moves (a larger batch, more ids) invalidates it.
#include <cstdint>
#include <functional>

#include "gpu/graph.h"
#include "gpu/stream.h"

namespace hetrec::inline model::gpu_model {

class StepGraph {
 public:
  // Runs the step `enqueue` enqueues on `stream`, for batches of `key` (the size a graph
  // serves): eagerly when `capture` is false or this is the first step of its size,
  // else captured once and replayed. A failed capture is discarded and its error rethrown.
  void run(gpu::stream_t stream, int64_t key, bool capture, const std::function<void()>& enqueue);
  // Forgets the graph and the eager step's size (the step's buffers moved).
  void invalidate();

 private:
  gpu::GraphExec graph_;
  int64_t graph_key_ = -1;  // batch size the captured graph serves
  int64_t eager_key_ = -1;  // batch size of the last eager step
};

}  // namespace hetrec::model::gpu_model

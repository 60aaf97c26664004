#include "model/gpu/step_graph.h"

#include "core/error.h"

namespace hetrec::inline model::gpu_model {

void StepGraph::run(gpu::stream_t stream, int64_t key, bool capture, const std::function<void()>& enqueue) {
  if (!capture) {
    enqueue();
  } else if (graph_.ready() && graph_key_ == key) {
    graph_.launch(stream);
  } else if (eager_key_ == key) {
    // The second step of this size: everything it touches exists, capture and replay.
    graph_.begin_capture(stream);
    try {
      enqueue();
    } catch (...) {
      try {
        graph_.end_capture(stream);
      } catch (const Error&) {
      }
      invalidate();
      throw;
    }
    graph_.end_capture(stream);
    graph_key_ = key;
    graph_.launch(stream);
  } else {
    enqueue();  // first step of this size: eager (plans GEMMs, warms every path)
    eager_key_ = key;
  }
}

void StepGraph::invalidate() {
  graph_.reset();
  graph_key_ = -1;
  eager_key_ = -1;
}

}  // namespace hetrec::model::gpu_model

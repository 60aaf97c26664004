#include "gpu/graph.h"

#include <utility>

#include "core/error.h"
#include "gpu/check.h"

namespace hetrec::gpu {

GraphExec::~GraphExec() { reset(); }

GraphExec::GraphExec(GraphExec&& o) noexcept
    : graph_(std::exchange(o.graph_, nullptr)), exec_(std::exchange(o.exec_, nullptr)) {}

GraphExec& GraphExec::operator=(GraphExec&& o) noexcept {
  if (this != &o) {
    reset();
    graph_ = std::exchange(o.graph_, nullptr);
    exec_ = std::exchange(o.exec_, nullptr);
  }
  return *this;
}

void GraphExec::reset() {
  if (exec_) (void)cudaGraphExecDestroy(exec_);
  if (graph_) (void)cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

void GraphExec::begin_capture(stream_t stream) {
  reset();
  // Thread-local mode: other threads may keep using the runtime (the data pipeline's
  // pinned copies) while this thread captures.
  HETREC_GPU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
}

void GraphExec::end_capture(stream_t stream) {
  HETREC_GPU_CHECK(cudaStreamEndCapture(stream, &graph_));
  if (!graph_) throw DeviceError("GraphExec::end_capture: the capture produced no graph");
  HETREC_GPU_CHECK(cudaGraphInstantiateWithFlags(&exec_, graph_, 0));
}

void GraphExec::launch(stream_t stream) const {
  if (!exec_) throw InternalError("GraphExec::launch before a successful capture");
  HETREC_GPU_CHECK(cudaGraphLaunch(exec_, stream));
}

}  // namespace hetrec::gpu

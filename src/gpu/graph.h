#pragma once
// Captures the work submitted to a stream into an executable graph and replays it with
// one launch (removes per-kernel launch gaps from the training step). Move-only.
//
//   GraphExec g;
//   g.begin_capture(stream); ...enqueue work on stream...; g.end_capture(stream);
//   g.launch(stream);  // as often as wanted; the captured pointers must stay valid
#include "gpu/platform.h"

namespace hetrec::gpu {

class GraphExec {
 public:
  GraphExec() = default;
  ~GraphExec();
  GraphExec(GraphExec&& o) noexcept;
  GraphExec& operator=(GraphExec&& o) noexcept;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;

  void begin_capture(stream_t stream);
  // Ends the capture and instantiates the graph; throws DeviceError if the captured work
  // is not capturable (a synchronous call, an allocation, a sync inside the region).
  void end_capture(stream_t stream);
  void launch(stream_t stream) const;
  bool ready() const { return exec_ != nullptr; }
  void reset();

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace hetrec::gpu

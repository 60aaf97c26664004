#pragma once
// An owned, non-blocking device stream (never synchronises with the legacy default
// stream). Move-only.
#include "gpu/platform.h"

namespace hetrec::gpu {

class Event;

class Stream {
 public:
  Stream();  // creates a new non-blocking stream on the current device
  ~Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  stream_t get() const { return stream_; }
  void synchronize() const;
  // Work submitted to this stream after the call waits until `event` has completed.
  void wait(const Event& event) const;

 private:
  stream_t stream_ = nullptr;
};

// Blocks until all work submitted to `stream` has finished.
void synchronize(stream_t stream);
// Work submitted to `stream` after the call waits until `event` has completed.
void wait(stream_t stream, const Event& event);
// Whether `stream` is being captured into a graph (gpu/graph.h): nothing may wait on the
// device then.
bool capturing(stream_t stream);

}  // namespace hetrec::gpu

#pragma once
// A gate that holds a stream until the host opens it. Work the host enqueues behind a
// closed gate starts only when the gate opens, and then runs back to back on the device:
// the host's cost of enqueueing each launch (several microseconds for a BLAS-Lt call) no
// longer shows between them. Benchmarks time short kernels this way; timed one by one as
// the host enqueues them, a 5 us kernel's time includes whatever part of the next
// enqueue the device waited for.
//
//   StreamGate gate;
//   gate.close(stream);           // the device now waits
//   ...enqueue events and kernels...
//   gate.open();                  // they run
//   stream.synchronize();
//   if (gate.expired()) ...       // the device stopped waiting before the host opened it
//
// Keep what is enqueued behind a closed gate well below the stream's queue depth (about a
// thousand launches): a host blocked in an enqueue cannot open the gate, and the gate then
// opens itself after its timeout (`kStreamGateTimeoutCycles` unless given) and reports it
// through expired().
#include <cstdint>

#include "gpu/device_buffer.h"
#include "gpu/platform.h"

namespace hetrec::kernels {

// The device gives up waiting after this many of its clock cycles: about 2 s at 2 GHz, far
// beyond any enqueue of a few dozen launches.
inline constexpr int64_t kStreamGateTimeoutCycles = int64_t{4'000'000'000};

class StreamGate {
 public:
  explicit StreamGate(int64_t timeout_cycles = kStreamGateTimeoutCycles);
  // Enqueues the waiting kernel on `stream`; the gate must be open (or never closed).
  void close(gpu::stream_t stream);
  // Lets the waiting kernel finish.
  void open();
  // After the stream has synchronised: whether the kernel stopped waiting on its own.
  bool expired() const;

 private:
  gpu::MappedHostBuffer state_;  // uint32_t[2]: [0] open flag (host writes), [1] expired (device writes)
  int64_t timeout_cycles_;
  bool closed_ = false;
};

}  // namespace hetrec::kernels

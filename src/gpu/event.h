#pragma once
// An owned device event: orders work between streams and times device work. Move-only.
#include "gpu/platform.h"

namespace hetrec::gpu {

class Event {
 public:
  // Timing events cost a little more to record; ordering-only events pass false.
  explicit Event(bool timing = true);
  ~Event();
  Event(Event&& o) noexcept;
  Event& operator=(Event&& o) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  event_t get() const { return event_; }
  void record(stream_t stream) const;
  void synchronize() const;
  // Milliseconds between two recorded, completed timing events.
  static float elapsed_ms(const Event& start, const Event& stop);

 private:
  event_t event_ = nullptr;
};

}  // namespace hetrec::gpu

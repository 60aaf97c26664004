#pragma once
// The timing step of every kernel bench: one untimed warm-up launch, then `reps` launches
// each between two events on the bench's stream; the median in microseconds.
#include <algorithm>
#include <vector>

#include "gpu/event.h"
#include "gpu/stream.h"

namespace hetrec::tune {

// launch(i) enqueues launch i on `stream` (i = -1: the warm-up); a bench rotates its
// inputs with i so that no launch finds the previous one's data in L2.
template <class Launch>
double median_launch_us(const gpu::Stream& stream, int reps, Launch&& launch) {
  std::vector<gpu::Event> start(static_cast<std::size_t>(reps)), stop(static_cast<std::size_t>(reps));
  launch(-1);
  for (int i = 0; i < reps; ++i) {
    start[static_cast<std::size_t>(i)].record(stream.get());
    launch(i);
    stop[static_cast<std::size_t>(i)].record(stream.get());
  }
  stream.synchronize();
  std::vector<double> us(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i)
    us[static_cast<std::size_t>(i)] =
        1000.0 * gpu::Event::elapsed_ms(start[static_cast<std::size_t>(i)], stop[static_cast<std::size_t>(i)]);
  std::nth_element(us.begin(), us.begin() + reps / 2, us.end());
  return us[static_cast<std::size_t>(reps / 2)];
}

}  // namespace hetrec::tune

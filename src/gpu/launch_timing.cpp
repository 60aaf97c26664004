#include "gpu/launch_timing.h"

#include <algorithm>
#include <limits>

#include "gpu/event.h"
#include "gpu/stream.h"

namespace hetrec::gpu {

std::optional<std::vector<double>> time_launches(const std::vector<std::function<void()>>& launches,
                                                 stream_t stream) {
  if (launches.empty() || capturing(stream)) return std::nullopt;
  for (const auto& launch : launches) launch();  // untimed: first-launch costs
  std::vector<Event> events;
  events.reserve(static_cast<std::size_t>(2 * kTimingRounds) * launches.size());
  for (int round = 0; round < kTimingRounds; ++round)
    for (const auto& launch : launches) {
      events.emplace_back();
      events.back().record(stream);
      for (int i = 0; i < kTimingLaunches; ++i) launch();
      events.emplace_back();
      events.back().record(stream);
    }
  events.back().synchronize();
  std::vector<double> us(launches.size(), std::numeric_limits<double>::infinity());
  for (int round = 0; round < kTimingRounds; ++round)
    for (std::size_t a = 0; a < launches.size(); ++a) {
      const std::size_t e = 2 * (static_cast<std::size_t>(round) * launches.size() + a);
      us[a] = std::min(us[a], 1000.0 * Event::elapsed_ms(events[e], events[e + 1]) / kTimingLaunches);
    }
  return us;
}

}  // namespace hetrec::gpu

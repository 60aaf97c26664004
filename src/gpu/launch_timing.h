#pragma once
// Times alternative launches of the same work against each other on one stream, apart from
// the step: the engine's one-time choices between runners (the cuBLASLt configurations of
// a timed shortlist, gemm/cublaslt_shortlist_timing.h; a small-GEMM kernel against
// cuBLASLt, model/gpu/small_gemm_choice.h). Waits for the device; never while the stream
// is being captured into a graph.
#include <functional>
#include <optional>
#include <vector>

#include "gpu/platform.h"

namespace hetrec::gpu {

// One untimed launch of each, then kTimingRounds rounds over the alternatives, each timing
// kTimingLaunches back-to-back launches of one; an alternative's time is its best round's
// mean. Rounds interleave the alternatives, so a clock that ramps up during the timing
// does not favour the last.
inline constexpr int kTimingRounds = 3;
inline constexpr int kTimingLaunches = 3;

// Microseconds per launch of each of `launches` (in their order), each enqueuing its work
// on `stream`; nullopt while `stream` is being captured.
std::optional<std::vector<double>> time_launches(const std::vector<std::function<void()>>& launches,
                                                 stream_t stream);

}  // namespace hetrec::gpu

#pragma once
// The phases of the GPU engine's step and their timing: with options.profile_phases the
// step runs eagerly and records an event at the end of each phase on the compute stream;
// phase_ms() reports the time between consecutive ones. Phases that only a data-parallel
// step has (the exchanges and the dense all-reduce) are reported only there.
#include <string>
#include <utility>
#include <vector>

#include "gpu/event.h"
#include "gpu/stream.h"

namespace hetrec::inline model::gpu_model {

// Phase boundaries of a profiled step (events recorded after each).
enum Phase : int {
  kStart,
  kBottomForward,
  kEmbeddingForward,
  kEmbeddingExchange,  // data parallel: pooled vectors to their samples' ranks
  kInteractionForward,
  kTopForward,
  kLoss,
  kTopBackward,
  kInteractionBackward,
  kBottomBackward,
  kDenseAllReduce,     // data parallel: dense gradients summed over ranks
  kGradientExchange,   // data parallel: pooled gradients to the shards, skip flags agreed
  kEmbeddingBackward,
  kDenseOptimizer,
  kPhaseCount
};

class StepPhases {
 public:
  // enabled: options.profile_phases (never while capturing: profiling steps run eagerly).
  explicit StepPhases(bool enabled) : enabled_(enabled) {}

  bool enabled() const { return enabled_; }
  // Records the end of `phase` on `stream` when profiling.
  void mark(Phase phase, gpu::stream_t stream);
  // The host time of the batch's upload, reported as the "upload" phase.
  void set_upload_ms(double ms) { upload_ms_ = ms; }
  // Name and milliseconds of every phase of the last profiled step (empty when not
  // profiling); the data-parallel phases only when `data_parallel`.
  std::vector<std::pair<std::string, double>> ms(bool data_parallel) const;

 private:
  bool enabled_;
  std::vector<gpu::Event> events_ = std::vector<gpu::Event>(kPhaseCount);
  double upload_ms_ = 0.0;
};

}  // namespace hetrec::model::gpu_model

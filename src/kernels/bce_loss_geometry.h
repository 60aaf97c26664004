#pragma once
// The geometry of the fused loss (kernels/bce_loss.cu): the samples of one partial sum
// and the workspace of the partials. Plain C++ (constexpr), for the launcher and for the
// planner (plan/memory_model.cpp, plan/step_model.cpp).
#include <cstddef>
#include <cstdint>

#include "kernels/workspace_geometry.h"

namespace hetrec::kernels {

// Samples per partial sum, the chunk of nn/bce_loss.cpp.
inline constexpr int64_t kBceChunk = 4096;
// Kernels one loss launches: the chunk partials, then their sum.
inline constexpr int kBceLossLaunches = 2;

// Bytes of the partial sums (doubles) of n samples; at least one.
constexpr std::size_t bce_loss_workspace_bytes(int64_t n) {
  return static_cast<std::size_t>(n > 0 ? blocks_of(n, kBceChunk) : 1) * sizeof(double);
}

}  // namespace hetrec::kernels

#pragma once
// What every kernel's scratch layout shares: sub-buffers start on 256-byte boundaries
// (the alignment cudaMalloc guarantees, so every sub-buffer is as aligned as an
// allocation of its own). Plain C++ with constexpr functions, included by the kernels'
// launchers and by the planner (plan/memory_model.cpp, plan/step_model.cpp), which
// counts the workspaces without a device.
#include <cstddef>
#include <cstdint>

namespace hetrec::kernels {

inline constexpr std::size_t kWorkspaceAlign = 256;

constexpr std::size_t workspace_aligned(std::size_t bytes) {
  return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign;
}

// ceil(n / per_block) for n >= 0: the blocks (tiles, chunks) n items need. kernels/
// launch.h's ceil_div is the device-callable template the launchers use.
constexpr int64_t blocks_of(int64_t n, int64_t per_block) { return (n + per_block - 1) / per_block; }

}  // namespace hetrec::kernels

#pragma once
// Warp-level intrinsics for device code, sized by kWarpSize. CUDA's *_sync forms take a
// member mask; HIP's wavefront forms take none (every lane of the wavefront takes part).
// All wrappers assume every lane of the warp calls them (no divergent early exits).
#include "gpu/platform.h"

#if defined(__CUDACC__) || defined(__HIPCC__)

namespace hetrec::gpu {

#if defined(HETREC_GPU_HIP)
__device__ inline lane_mask_t warp_ballot(bool pred) { return __ballot(pred); }
template <class T>
__device__ inline T shfl_xor(T v, int lane_mask, int width = kWarpSize) { return __shfl_xor(v, lane_mask, width); }
template <class T>
__device__ inline T shfl(T v, int src_lane, int width = kWarpSize) { return __shfl(v, src_lane, width); }
template <class T>
__device__ inline T shfl_up(T v, unsigned delta, int width = kWarpSize) { return __shfl_up(v, delta, width); }
__device__ inline int popc(lane_mask_t m) { return __popcll(m); }
__device__ inline int lowest_lane(lane_mask_t m) { return __ffsll(static_cast<long long>(m)) - 1; }
// Orders the shared-memory accesses of the wavefront's lanes before the call ahead of
// those after it (what CUDA's __syncwarp guarantees; HIP 5 has no __syncwarp).
__device__ inline void warp_sync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else
inline constexpr unsigned kFullMask = 0xFFFFFFFFu;
__device__ inline lane_mask_t warp_ballot(bool pred) { return __ballot_sync(kFullMask, pred); }
template <class T>
__device__ inline T shfl_xor(T v, int lane_mask, int width = kWarpSize) { return __shfl_xor_sync(kFullMask, v, lane_mask, width); }
template <class T>
__device__ inline T shfl(T v, int src_lane, int width = kWarpSize) { return __shfl_sync(kFullMask, v, src_lane, width); }
template <class T>
__device__ inline T shfl_up(T v, unsigned delta, int width = kWarpSize) { return __shfl_up_sync(kFullMask, v, delta, width); }
__device__ inline int popc(lane_mask_t m) { return __popc(m); }
__device__ inline int lowest_lane(lane_mask_t m) { return __ffs(static_cast<int>(m)) - 1; }
// Orders the shared-memory accesses of the warp's lanes before the call ahead of those
// after it.
__device__ inline void warp_sync() { __syncwarp(kFullMask); }
#endif

__device__ inline int lane_id() { return static_cast<int>(threadIdx.x) % kWarpSize; }
__device__ inline int warp_id() { return static_cast<int>(threadIdx.x) / kWarpSize; }
// Bits of the lanes below this one.
__device__ inline lane_mask_t lanes_below() { return (lane_mask_t{1} << lane_id()) - 1; }

// Sum over groups of `width` consecutive lanes (a power of two dividing kWarpSize) by a
// butterfly: every lane of a group ends with the same sum, in the same order each run.
template <class T>
__device__ inline T group_sum(T v, int width) {
  for (int offset = width / 2; offset > 0; offset /= 2) v += shfl_xor(v, offset, width);
  return v;
}

// Inclusive prefix sum over the whole warp (Hillis-Steele).
template <class T>
__device__ inline T warp_inclusive_scan(T v) {
  const int lane = lane_id();
  for (int offset = 1; offset < kWarpSize; offset *= 2) {
    const T up = shfl_up(v, static_cast<unsigned>(offset));
    if (lane >= offset) v += up;
  }
  return v;
}

}  // namespace hetrec::gpu

#endif

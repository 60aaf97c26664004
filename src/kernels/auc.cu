#include "kernels/auc.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "kernels/launch.h"
#include "kernels/radix_sort.h"
#include "kernels/scan.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;
constexpr std::size_t kAlign = 256;  // scratch sub-buffers start on 256-byte boundaries

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// An unsigned key whose order is the float order: flip every bit of a negative, the sign
// bit of a non-negative. -0 is taken as +0 so that the two compare equal, as floats do.
__device__ inline uint32_t order_key(float x) {
  uint32_t u = __float_as_uint(x == 0.0f ? 0.0f : x);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

struct Counters {
  unsigned long long twice_u;    // 2 U: sum over positives of neg_before[s] + neg_before[e]
  unsigned long long positives;
  uint32_t negatives;            // from the scan
};

__global__ void __launch_bounds__(kThreads)
    prepare_kernel(const float* __restrict__ scores, const float* __restrict__ labels, int64_t n,
                   uint32_t* __restrict__ keys, uint32_t* __restrict__ values, Counters* counters) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i == 0) {
    counters->twice_u = 0;
    counters->positives = 0;
  }
  if (i >= n) return;
  keys[i] = order_key(scores[i]);
  values[i] = labels[i] > 0.5f ? 1u : 0u;
}

__global__ void __launch_bounds__(kThreads)
    negatives_kernel(const uint32_t* __restrict__ positive, int64_t n, uint32_t* __restrict__ negative) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i < n) negative[i] = 1u - positive[i];
}

// First index in [0, n) whose key is >= key (lower) or > key (upper).
__device__ inline int64_t bound(const uint32_t* keys, int64_t n, uint32_t key, bool upper) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (upper ? keys[mid] <= key : keys[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

__global__ void __launch_bounds__(kThreads)
    positives_kernel(const uint32_t* __restrict__ keys, const uint32_t* __restrict__ positive,
                     const uint32_t* __restrict__ neg_before, int64_t n, Counters* counters) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n || !positive[i]) return;
  const uint32_t key = keys[i];
  const int64_t s = bound(keys, n, key, false);
  const int64_t e = bound(keys, n, key, true);
  const uint32_t total_negatives = counters->negatives;
  const unsigned long long before_end = e < n ? neg_before[e] : total_negatives;
  atomicAdd(&counters->twice_u, static_cast<unsigned long long>(neg_before[s]) + before_end);
  atomicAdd(&counters->positives, 1ull);
}

__global__ void finish_kernel(const Counters* counters, int64_t n, double* auc) {
  const double pos = static_cast<double>(counters->positives);
  const double neg = static_cast<double>(n) - pos;
  *auc = pos == 0.0 || neg == 0.0 ? __longlong_as_double(0x7FF8000000000000LL)  // NaN
                                  : 0.5 * static_cast<double>(counters->twice_u) / (pos * neg);
}

struct Workspace {
  SortBuffers sort;
  uint32_t* negatives;
  Counters* counters;
  void* scratch;
  std::size_t scratch_bytes;
};

std::size_t scratch_bytes_for(int64_t n) {
  const std::size_t sort = radix_sort_workspace_bytes(n);
  const std::size_t scan = exclusive_scan_workspace_bytes(n);
  return sort > scan ? sort : scan;
}

Workspace carve(void* base, int64_t n) {
  char* p = static_cast<char*>(base);
  const std::size_t array = aligned(static_cast<std::size_t>(n) * sizeof(uint32_t));
  Workspace w{};
  w.sort.keys = reinterpret_cast<uint32_t*>(p);
  w.sort.values = reinterpret_cast<uint32_t*>(p + array);
  w.sort.keys_alt = reinterpret_cast<uint32_t*>(p + 2 * array);
  w.sort.values_alt = reinterpret_cast<uint32_t*>(p + 3 * array);
  w.negatives = reinterpret_cast<uint32_t*>(p + 4 * array);
  p += 5 * array;
  w.counters = reinterpret_cast<Counters*>(p);
  p += aligned(sizeof(Counters));
  w.scratch = p;
  w.scratch_bytes = scratch_bytes_for(n);
  return w;
}

}  // namespace

std::size_t roc_auc_workspace_bytes(int64_t n) {
  const int64_t m = n > 0 ? n : 1;
  return 5 * aligned(static_cast<std::size_t>(m) * sizeof(uint32_t)) + aligned(sizeof(Counters)) + scratch_bytes_for(m);
}

void roc_auc(const float* scores, const float* labels, int64_t n, double* auc, void* workspace,
             std::size_t workspace_bytes, gpu::stream_t stream) {
  if (n <= 0) throw InternalError("roc_auc over " + std::to_string(n) + " samples");
  if (n >= (int64_t{1} << 31)) throw InternalError("roc_auc: " + std::to_string(n) + " samples exceed 2^31 - 1");
  if (workspace_bytes < roc_auc_workspace_bytes(n)) throw InternalError("roc_auc: workspace too small");
  const Workspace w = carve(workspace, n);
  const unsigned grid = grid_for(n, kThreads);
  prepare_kernel<<<grid, kThreads, 0, stream>>>(scores, labels, n, w.sort.keys, w.sort.values, w.counters);
  HETREC_GPU_CHECK_LAUNCH("auc prepare_kernel");
  const bool in_place = radix_sort_pairs(w.sort, nullptr, n, 32, w.scratch, w.scratch_bytes, stream);
  const uint32_t* keys = in_place ? w.sort.keys : w.sort.keys_alt;
  const uint32_t* positive = in_place ? w.sort.values : w.sort.values_alt;
  negatives_kernel<<<grid, kThreads, 0, stream>>>(positive, n, w.negatives);
  HETREC_GPU_CHECK_LAUNCH("auc negatives_kernel");
  exclusive_scan(w.negatives, w.negatives, n, &w.counters->negatives, w.scratch, w.scratch_bytes, stream);
  positives_kernel<<<grid, kThreads, 0, stream>>>(keys, positive, w.negatives, n, w.counters);
  HETREC_GPU_CHECK_LAUNCH("auc positives_kernel");
  finish_kernel<<<1, 1, 0, stream>>>(w.counters, n, auc);
  HETREC_GPU_CHECK_LAUNCH("auc finish_kernel");
}

}  // namespace hetrec::kernels

#include "kernels/row_gather.h"

#include "gpu/check.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

constexpr int kThreads = 256;

// One thread per word of a selected row; `to_compact` picks the direction.
template <class Word>
__global__ void __launch_bounds__(kThreads)
    copy_rows_kernel(const Word* __restrict__ src, Word* __restrict__ dst, const int64_t* __restrict__ index,
                     int64_t n, int64_t words_per_row, bool to_compact) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= n * words_per_row) return;
  const int64_t r = i / words_per_row, w = i - r * words_per_row;
  const int64_t compact = r * words_per_row + w, full = index[r] * words_per_row + w;
  if (to_compact) dst[compact] = src[full];
  else dst[full] = src[compact];
}

void copy_rows(const void* src, void* dst, std::size_t row_bytes, const int64_t* index, int64_t n, bool to_compact,
               gpu::stream_t stream) {
  if (n <= 0 || row_bytes == 0) return;
  // 4-byte words when every row starts on one, else single bytes.
  if (row_bytes % sizeof(uint32_t) == 0) {
    const auto words = static_cast<int64_t>(row_bytes / sizeof(uint32_t));
    copy_rows_kernel<uint32_t><<<grid_for(n * words, kThreads), kThreads, 0, stream>>>(
        static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), index, n, words, to_compact);
  } else {
    const auto words = static_cast<int64_t>(row_bytes);
    copy_rows_kernel<uint8_t><<<grid_for(n * words, kThreads), kThreads, 0, stream>>>(
        static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), index, n, words, to_compact);
  }
  HETREC_GPU_CHECK_LAUNCH("copy_rows_kernel");
}

}  // namespace

void gather_rows(const void* rows, std::size_t row_bytes, const int64_t* index, int64_t n, void* compact,
                 gpu::stream_t stream) {
  copy_rows(rows, compact, row_bytes, index, n, true, stream);
}

void scatter_rows(const void* compact, std::size_t row_bytes, const int64_t* index, int64_t n, void* rows,
                  gpu::stream_t stream) {
  copy_rows(compact, rows, row_bytes, index, n, false, stream);
}

}  // namespace hetrec::kernels

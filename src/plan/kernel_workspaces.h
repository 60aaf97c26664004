#pragma once
// The device kernels' scratch sizes and launch counts, as the planner counts them without
// a device: each function restates the rule of the kernel file it names (the kernels
// library exists only in GPU builds). A GPU test compares them with the kernels' own
// functions.
#include <cstddef>
#include <cstdint>

namespace hetrec::plan_kernels {

// kernels/scan.cu: blocks of 256 threads x 8 items.
inline constexpr int64_t kScanTile = 2048;
// kernels/radix_sort.cu: 8-bit digits, tiles of 256 threads x 16 items.
inline constexpr int kSortDigitBits = 8;
inline constexpr int64_t kSortDigits = 256;
inline constexpr int64_t kSortTile = 4096;
// kernels/embedding_bag_backward.cu: occurrences per chunk of a long row.
inline constexpr int64_t kLongSegment = 64;
// kernels/column_sum.cu: rows per partial-sum chunk.
inline constexpr int64_t kColumnSumRowsPerChunk = 256;
// kernels/bce_loss.cu: samples per partial sum.
inline constexpr int64_t kBceChunk = 4096;
// Sub-buffers of the kernels' workspaces start on 256-byte boundaries.
inline constexpr std::size_t kWorkspaceAlign = 256;

std::size_t exclusive_scan_workspace_bytes(int64_t n);       // kernels/scan.cu
int exclusive_scan_launches(int64_t n);                       // kernels launched by one scan
std::size_t radix_sort_workspace_bytes(int64_t capacity);    // kernels/radix_sort.cu
int radix_sort_passes(int key_bits);                          // 8-bit digit passes
int radix_sort_launches(int64_t capacity, int key_bits);      // histogram, scan, scatter per pass
// kernels/embedding_bag_backward.cu: workspace for `max_ids` ids of `dim`-wide rows, and
// the kernels one backward launches (key build, sort, segment and chunk bookkeeping with
// their scans, the chunk partial sums and the fused update).
std::size_t embedding_backward_workspace_bytes(int64_t max_ids, int dim);
int embedding_backward_launches(int64_t max_ids, int64_t total_rows);
int embedding_sort_key_bits(int64_t total_rows);              // std::bit_width(total_rows)
std::size_t column_sum_workspace_bytes(int64_t rows, int64_t cols);  // kernels/column_sum.cu
std::size_t bce_loss_workspace_bytes(int64_t n);                     // kernels/bce_loss.cu

}  // namespace hetrec::plan_kernels

#include "plan/kernel_workspaces.h"

#include <algorithm>
#include <bit>

namespace hetrec::plan_kernels {
namespace {

std::size_t aligned(std::size_t bytes) { return (bytes + kWorkspaceAlign - 1) / kWorkspaceAlign * kWorkspaceAlign; }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Kernels the update launches after the bookkeeping: the chunk partial sums and the
// fused row update (embedding_bag_backward.cu, launch_update).
constexpr int kUpdateLaunches = 2;

}  // namespace

std::size_t exclusive_scan_workspace_bytes(int64_t n) {
  if (n <= kScanTile) return 0;
  const int64_t tiles = ceil_div(n, kScanTile);
  return aligned(static_cast<std::size_t>(tiles) * sizeof(uint32_t)) + exclusive_scan_workspace_bytes(tiles);
}

int exclusive_scan_launches(int64_t n) {
  if (n <= kScanTile) return 1;  // one tile_scan_kernel
  return 2 + exclusive_scan_launches(ceil_div(n, kScanTile));  // tile sums, scan of the sums, tile scan
}

std::size_t radix_sort_workspace_bytes(int64_t capacity) {
  const int64_t tiles = ceil_div(capacity > 0 ? capacity : 1, kSortTile);
  const int64_t counts = tiles * kSortDigits;
  return aligned(static_cast<std::size_t>(counts) * sizeof(uint32_t)) + exclusive_scan_workspace_bytes(counts);
}

int radix_sort_passes(int key_bits) { return static_cast<int>(ceil_div(key_bits, kSortDigitBits)); }

int radix_sort_launches(int64_t capacity, int key_bits) {
  const int64_t counts = ceil_div(capacity > 0 ? capacity : 1, kSortTile) * kSortDigits;
  return radix_sort_passes(key_bits) * (2 + exclusive_scan_launches(counts));
}

int embedding_sort_key_bits(int64_t total_rows) {
  return static_cast<int>(std::bit_width(static_cast<uint64_t>(std::max<int64_t>(total_rows, 0))));
}

std::size_t embedding_backward_workspace_bytes(int64_t max_ids, int dim) {
  const int64_t capacity = max_ids > 0 ? max_ids : 1;
  const std::size_t array = aligned(static_cast<std::size_t>(capacity) * sizeof(uint32_t));
  const auto chunks = static_cast<std::size_t>(2 * ceil_div(capacity, kLongSegment) + 1);
  const std::size_t scratch = std::max(radix_sort_workspace_bytes(capacity), exclusive_scan_workspace_bytes(capacity));
  return 4 * array + aligned(static_cast<std::size_t>(capacity + 1) * sizeof(uint32_t)) + kWorkspaceAlign +
         aligned(chunks * sizeof(uint32_t)) + aligned(chunks * static_cast<std::size_t>(dim) * sizeof(float)) + scratch;
}

int embedding_backward_launches(int64_t max_ids, int64_t total_rows) {
  const int64_t capacity = max_ids > 0 ? max_ids : 1;
  // build keys; sort; mark heads; scan; segment starts; count chunks; scan; chunk owners;
  // then the update.
  return 1 + radix_sort_launches(capacity, embedding_sort_key_bits(total_rows)) + 1 +
         exclusive_scan_launches(capacity) + 1 + 1 + exclusive_scan_launches(capacity) + 1 + kUpdateLaunches;
}

std::size_t column_sum_workspace_bytes(int64_t rows, int64_t cols) {
  const int64_t chunks = rows > 0 ? ceil_div(rows, kColumnSumRowsPerChunk) : 0;
  return static_cast<std::size_t>(chunks * cols) * sizeof(float);
}

std::size_t bce_loss_workspace_bytes(int64_t n) {
  return static_cast<std::size_t>(n > 0 ? ceil_div(n, kBceChunk) : 1) * sizeof(double);
}

}  // namespace hetrec::plan_kernels

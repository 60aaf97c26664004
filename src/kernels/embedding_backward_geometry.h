#pragma once
// The geometry of the embedding backward (kernels/embedding_bag_backward.cu): how its
// workspace is laid out for a batch of at most `max_ids` ids of `dim`-wide rows, and the
// kernels one backward launches. Plain C++ (constexpr): the launcher carves the
// workspace with it and the planner (plan/memory_model.cpp, plan/step_model.cpp) counts
// it without a device.
#include <bit>
#include <cstddef>
#include <cstdint>

#include "kernels/long_rows.h"
#include "kernels/radix_sort_geometry.h"
#include "kernels/scan_geometry.h"
#include "kernels/workspace_geometry.h"

namespace hetrec::kernels {

// Byte offsets of the workspace's parts, in order, each on a kWorkspaceAlign boundary.
struct EmbeddingBackwardLayout {
  int64_t capacity = 0;    // ids the workspace holds (max_ids, at least one)
  int64_t max_chunks = 0;  // chunks of long rows it has room for
  std::size_t sort_array = 0;  // bytes of each of the sort's four arrays (keys, values, their twins), from 0
  std::size_t segment_start = 0;  // capacity + 1 segment starts
  std::size_t counters = 0;       // the unique-row count and the chunk count
  std::size_t owner = 0;          // the row of every chunk
  std::size_t partial = 0;        // every chunk's partial sum (dim floats)
  std::size_t scratch = 0;        // the sort's and the scans' scratch
  std::size_t scratch_bytes = 0;
  std::size_t bytes = 0;  // the whole workspace
};

// Chunks of long rows: each holds at least kLongSegment occurrences but its row's last,
// and only rows longer than kLongSegment have chunks, so there are fewer than
// 2 n / kLongSegment.
constexpr int64_t embedding_backward_max_chunks(int64_t capacity) {
  return 2 * blocks_of(capacity, kLongSegment) + 1;
}

constexpr EmbeddingBackwardLayout embedding_backward_layout(int64_t max_ids, int dim) {
  EmbeddingBackwardLayout l;
  l.capacity = max_ids > 0 ? max_ids : 1;
  l.max_chunks = embedding_backward_max_chunks(l.capacity);
  l.sort_array = workspace_aligned(static_cast<std::size_t>(l.capacity) * sizeof(uint32_t));
  l.segment_start = 4 * l.sort_array;
  l.counters = l.segment_start + workspace_aligned(static_cast<std::size_t>(l.capacity + 1) * sizeof(uint32_t));
  l.owner = l.counters + kWorkspaceAlign;
  l.partial = l.owner + workspace_aligned(static_cast<std::size_t>(l.max_chunks) * sizeof(uint32_t));
  l.scratch = l.partial + workspace_aligned(static_cast<std::size_t>(l.max_chunks) * static_cast<std::size_t>(dim) *
                                            sizeof(float));
  const std::size_t sort = sort_workspace_bytes(l.capacity);  // either sort (kernels/sort_pairs.h)
  const std::size_t scan = exclusive_scan_workspace_bytes(l.capacity);
  l.scratch_bytes = sort > scan ? sort : scan;
  l.bytes = l.scratch + l.scratch_bytes;
  return l;
}

// Bytes of bookkeeping per id of the capacity that one backward moves besides the sort:
// the segment heads written and read by their scan, the segment starts, the chunk counts,
// their scan and the chunk owners, each a uint32 (kernels/embedding_bag_backward.cu).
inline constexpr std::size_t kEmbeddingBackwardBookkeepingBytesPerId = 15 * sizeof(uint32_t);

// Scratch bytes for a batch of at most `max_ids` ids and rows of `dim` elements.
constexpr std::size_t embedding_backward_workspace_bytes(int64_t max_ids, int dim) {
  return embedding_backward_layout(max_ids, dim).bytes;
}

// Bits of the sort keys (global rows) of tables of `total_rows` rows in all.
constexpr int embedding_sort_key_bits(int64_t total_rows) {
  return static_cast<int>(std::bit_width(static_cast<uint64_t>(total_rows > 0 ? total_rows : 0)));
}

// Kernels one backward of a batch of at most `max_ids` ids launches
// (embedding_backward_prepare, then embedding_backward_apply): the sort keys, the sort,
// the segment heads, their scan, the segment starts, the chunk counts, their scan, the
// chunk owners, the chunk partial sums and the fused row update.
constexpr int embedding_backward_launches(int64_t max_ids, int64_t total_rows) {
  const int64_t capacity = max_ids > 0 ? max_ids : 1;
  return 1 + radix_sort_launches(capacity, embedding_sort_key_bits(total_rows)) + 1 +
         exclusive_scan_launches(capacity) + 1 + 1 + exclusive_scan_launches(capacity) + 1 + 1 + 1;
}

}  // namespace hetrec::kernels

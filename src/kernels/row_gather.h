#pragma once
// Copies of selected rows between a large row-major buffer and a compact one, on the
// device: what a check of a few rows of a table too large to copy back needs (the tuner
// snapshots, restores and reads back the rows a sparse update touches).
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"

namespace hetrec::kernels {

// compact[i] = rows[index[i]] for i < n, rows of `row_bytes` bytes; `index` on the device.
void gather_rows(const void* rows, std::size_t row_bytes, const int64_t* index, int64_t n, void* compact,
                 gpu::stream_t stream);
// rows[index[i]] = compact[i] for i < n (the indices distinct).
void scatter_rows(const void* compact, std::size_t row_bytes, const int64_t* index, int64_t n, void* rows,
                  gpu::stream_t stream);

}  // namespace hetrec::kernels

#pragma once
// The sort the embedding backward runs: the engine's radix sort or the vendor library's,
// by model.sort (kernels/sort_choice.h). Same interface as either.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/radix_sort.h"  // SortBuffers
#include "kernels/sort_choice.h"

namespace hetrec::kernels {

// The sort `choice` names on this build: automatic resolves to the faster one measured
// (bench/sort_bench.cpp): the library on CUDA; the engine's on HIP, where the library's
// is compiled but not yet measured.
SortImpl resolved_sort(SortImpl choice);

// radix_sort_pairs or library_sort_pairs, by resolved_sort(choice). `workspace_bytes`
// must hold sort_workspace_bytes(capacity) (kernels/radix_sort_geometry.h) for either.
bool sort_pairs(SortImpl choice, const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                void* workspace, std::size_t workspace_bytes, gpu::stream_t stream);

}  // namespace hetrec::kernels

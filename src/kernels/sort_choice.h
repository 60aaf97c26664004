#pragma once
// Which device sort orders the embedding backward's occurrences (model.sort). Plain C++,
// for the structs the launchers read (kernels/embedding_types.h) and the config.
namespace hetrec::kernels {

// engine: the engine's own radix sort (kernels/radix_sort.h). library: the vendor
// library's (CUB's onesweep on CUDA, rocPRIM's on HIP; kernels/library_sort.h).
// automatic: the faster one measured on the build's platform (kernels/sort_pairs.h).
// Both are stable LSD radix sorts over the same key bits, so they give the same pairs in
// the same order and the choice never changes a result.
enum class SortImpl { automatic, engine, library };

}  // namespace hetrec::kernels

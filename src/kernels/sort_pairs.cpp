#include "kernels/sort_pairs.h"

#include "core/error.h"
#include "kernels/library_sort.h"

namespace hetrec::kernels {

SortImpl resolved_sort(SortImpl choice) {
  if (choice != SortImpl::automatic) return choice;
#if defined(HETREC_GPU_HIP)
  return SortImpl::engine;
#else
  return SortImpl::library;
#endif
}

bool sort_pairs(SortImpl choice, const SortBuffers& buffers, const int32_t* num_items, int64_t capacity, int key_bits,
                void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  switch (resolved_sort(choice)) {
    case SortImpl::engine:
      return radix_sort_pairs(buffers, num_items, capacity, key_bits, workspace, workspace_bytes, stream);
    case SortImpl::library:
      return library_sort_pairs(buffers, num_items, capacity, key_bits, workspace, workspace_bytes, stream);
    case SortImpl::automatic: break;
  }
  throw InternalError("sort_pairs: unknown sort");
}

}  // namespace hetrec::kernels

#pragma once
// Parallel loops over several arrays of very different lengths (one table can hold half
// of a batch's ids): the work is cut into ranges of at most a fixed number of elements,
// so no thread is left with a whole long array.
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

namespace hetrec::inline data {

// Below this many elements a range is not worth a thread of its own (4 MB of int32 ids).
constexpr int64_t kChunkElements = int64_t{1} << 20;

struct ChunkRange {
  std::size_t array = 0;  // which array
  int64_t begin = 0, end = 0;
};

// The ranges covering [0, sizes[a]) of every array a, each at most `chunk` long, in
// array order and then element order (empty arrays give no range).
inline std::vector<ChunkRange> chunk_ranges(const std::vector<int64_t>& sizes, int64_t chunk = kChunkElements) {
  std::vector<ChunkRange> out;
  for (std::size_t a = 0; a < sizes.size(); ++a)
    for (int64_t b = 0; b < sizes[a]; b += chunk) out.push_back({a, b, b + chunk < sizes[a] ? b + chunk : sizes[a]});
  return out;
}

// An allocator whose value-less construct() leaves trivially constructible elements
// uninitialised, so resizing a staging buffer that is about to be overwritten in
// parallel does not first zero it on one thread.
template <class T>
struct UninitialisedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitialisedAllocator<U>;
  };
  UninitialisedAllocator() = default;
  template <class U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using StagingVector = std::vector<T, UninitialisedAllocator<T>>;

}  // namespace hetrec::data::data

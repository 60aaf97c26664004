#pragma once
// A contiguous range of a batch's samples as a batch of its own (a rank's share of a
// data-parallel global batch).
#include <cstdint>
#include <vector>

#include "data/batch.h"

namespace hetrec::inline data {

// Samples [begin, begin + count) of `batch` (count may be 0); first_sample shifts with them.
Batch slice_batch(const Batch& batch, int64_t begin, int64_t count);

// The samples of `batch` at the given indices, in that order (indices may repeat).
Batch select_samples(const Batch& batch, const std::vector<int64_t>& samples);

// The first sample of rank r's share of a global batch of `size` samples over `ranks`:
// rank r computes samples [share_begin(size, r, ranks), share_begin(size, r + 1, ranks)).
inline int64_t share_begin(int64_t size, int rank, int ranks) { return size * rank / ranks; }

}  // namespace hetrec::data::data

#pragma once
// Checks that a Batch delivered by a data source keeps the layout every backend relies on
// (data/batch.h); a violation is a finding.
#include <cstdint>
#include <vector>

#include "data/batch.h"

namespace hetrec::fuzz {

// `rows` per table; `max_size` the batch size asked for; `first_sample` where the batch
// must start in its source.
void check_batch(const Batch& batch, int num_dense, const std::vector<int64_t>& rows, int64_t max_size,
                 int64_t first_sample);

}  // namespace hetrec::fuzz

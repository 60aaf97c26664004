#pragma once
// A cheap identity of a batch's contents: its sizes and the CRC-32C (core/checksum.h) of
// up to 64 evenly spaced values of each array. Lets a backend that staged a batch ahead of time (Model::
// prepare_next) check that the batch it is then given is the one it staged.
#include <cstdint>

#include "data/batch.h"

namespace hetrec::inline data {

struct BatchFingerprint {
  int64_t size = -1, first_sample = 0, ids = 0, dense = 0;
  int num_tables = 0;
  uint32_t hash = 0;
  bool operator==(const BatchFingerprint&) const = default;
};

BatchFingerprint batch_fingerprint(const Batch& batch);

}  // namespace hetrec::data::data

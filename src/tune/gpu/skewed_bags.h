#pragma once
// The id batches of the tuning workloads: a config's tables at a batch size, each bag the
// table's hotness long (or drawn in [1, 2h-1] for variable bags), ids skewed toward low
// rows like the end-to-end benchmark's (rows * u^3), on the host and on the device.
#include <cstdint>
#include <vector>

#include "data/feature_spec.h"
#include "gpu/device_buffer.h"

namespace hetrec::tune {

struct SkewedBags {
  std::vector<int32_t> host_offsets;  // tables x batch + 1, table-major (Batch's layout)
  std::vector<int32_t> host_ids;
  int64_t bad_ids = 0;                // ids made invalid
  gpu::DeviceBuffer offsets, ids;     // the same on the device
};

// Draws from stream `stream` of `seed`. With bad_every > 0, every bad_every-th id is made
// invalid (alternately -1 and its table's row count), so the kernels' range checks run.
SkewedBags make_skewed_bags(const std::vector<TableConfig>& tables, int64_t batch, uint64_t seed, uint64_t stream,
                            int64_t bad_every);

}  // namespace hetrec::tune

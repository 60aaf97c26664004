#include "tune/gpu/skewed_bags.h"

#include <algorithm>

#include "core/rng.h"
#include "gpu/memory.h"

namespace hetrec::tune {

SkewedBags make_skewed_bags(const std::vector<TableConfig>& tables, int64_t batch, uint64_t seed, uint64_t stream,
                            int64_t bad_every) {
  const int T = static_cast<int>(tables.size());
  Rng rng(seed, stream);
  SkewedBags b;
  b.host_offsets.assign(static_cast<std::size_t>(T) * batch + 1, 0);
  for (int t = 0; t < T; ++t)
    for (int64_t s = 0; s < batch; ++s) {
      const int h = tables[t].variable_bags ? 1 + static_cast<int>(rng.uniform() * (2 * tables[t].hotness - 1))
                                            : tables[t].hotness;
      for (int k = 0; k < h; ++k) {
        const double u = rng.uniform();
        int32_t id = static_cast<int32_t>(std::min<double>(tables[t].rows - 1, tables[t].rows * u * u * u));
        if (bad_every > 0 && static_cast<int64_t>(b.host_ids.size() + 1) % bad_every == 0) {
          id = static_cast<int64_t>(b.host_ids.size()) / bad_every % 2 ? -1 : static_cast<int32_t>(tables[t].rows);
          ++b.bad_ids;
        }
        b.host_ids.push_back(id);
      }
      b.host_offsets[static_cast<std::size_t>(t) * batch + s + 1] = static_cast<int32_t>(b.host_ids.size());
    }
  b.offsets = gpu::DeviceBuffer(b.host_offsets.size() * sizeof(int32_t));
  b.ids = gpu::DeviceBuffer(std::max<std::size_t>(1, b.host_ids.size()) * sizeof(int32_t));
  gpu::memcpy_sync(b.offsets.get(), b.host_offsets.data(), b.host_offsets.size() * sizeof(int32_t),
                   gpu::CopyKind::host_to_device);
  gpu::memcpy_sync(b.ids.get(), b.host_ids.data(), b.host_ids.size() * sizeof(int32_t), gpu::CopyKind::host_to_device);
  return b;
}

}  // namespace hetrec::tune

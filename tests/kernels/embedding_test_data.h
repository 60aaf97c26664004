#pragma once
// Shared by the embedding kernel tests: a model of a few tables of different sizes (one
// mean-pooled), and random batches with empty bags and duplicate ids, plus the device
// copies of both.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/rng.h"
#include "data/batch.h"
#include "gpu/device_buffer.h"
#include "kernels/embedding_init.h"
#include "kernels/embedding_types.h"
#include "model/model_config.h"
#include "../gpu/device_test_support.h"

namespace hetrec::testing {

inline ModelConfig embedding_model(int dim, DType row_dtype, uint64_t seed) {
  ModelConfig m;
  m.embedding_dim = dim;
  m.row_dtype = row_dtype;
  m.init_seed = seed;
  const int64_t rows[] = {1000, 37, 5000, 1};
  for (int t = 0; t < 4; ++t) {
    TableConfig c;
    c.name = "t" + std::to_string(t);
    c.rows = rows[t];
    c.hotness = 3;
    c.pooling = t == 2 ? Pooling::mean : Pooling::sum;
    m.tables.push_back(c);
  }
  return m;
}

// Bags of 0..6 ids; table 0 draws from a few hot rows so duplicates are common, within
// and across bags.
inline Batch random_batch(const ModelConfig& m, int64_t batch, uint64_t seed) {
  Batch b;
  b.reset(batch, 0, m.num_tables());
  Rng rng(seed);
  for (int t = 0; t < m.num_tables(); ++t)
    for (int64_t s = 0; s < batch; ++s) {
      const int64_t len = static_cast<int64_t>(rng.below(7));
      for (int64_t k = 0; k < len; ++k) {
        const int64_t rows = m.tables[static_cast<std::size_t>(t)].rows;
        const int64_t id = t == 0 ? static_cast<int64_t>(rng.below(8)) : static_cast<int64_t>(rng.below(static_cast<uint64_t>(rows)));
        b.ids.push_back(static_cast<int32_t>(id));
      }
      b.offsets[static_cast<std::size_t>(t * batch + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  return b;
}

// All tables of `m` back to back on the device, initialised like the CPU collection.
struct DeviceTables {
  gpu::DeviceBuffer weights, row_offsets, mean_pooling;
  std::vector<int64_t> offsets_host;
  kernels::EmbeddingTables view;

  explicit DeviceTables(const ModelConfig& m) {
    offsets_host.assign(1, 0);
    std::vector<uint8_t> mean;
    for (const TableConfig& c : m.tables) {
      offsets_host.push_back(offsets_host.back() + c.rows);
      mean.push_back(c.pooling == Pooling::mean);
    }
    const std::size_t esize = dtype_size(m.row_dtype);
    weights = gpu::DeviceBuffer(static_cast<std::size_t>(offsets_host.back()) * m.embedding_dim * esize);
    for (int t = 0; t < m.num_tables(); ++t)
      kernels::embedding_init_uniform(weights.as<char>() + offsets_host[static_cast<std::size_t>(t)] * m.embedding_dim * static_cast<int64_t>(esize),
                                      m.tables[static_cast<std::size_t>(t)].rows, m.embedding_dim, m.row_dtype,
                                      kernels::embedding_table_init_key(m.init_seed, t), nullptr);
    row_offsets = to_device(offsets_host);
    mean_pooling = to_device(mean);
    view.weights = weights.get();
    view.row_offsets = row_offsets.as<int64_t>();
    view.mean_pooling = mean_pooling.as<uint8_t>();
    view.num_tables = m.num_tables();
    view.dim = m.embedding_dim;
    view.total_rows = offsets_host.back();
    view.row_dtype = m.row_dtype;
  }
};

struct DeviceBatchCopy {
  gpu::DeviceBuffer offsets, ids;
  kernels::DeviceBags bags;
  DeviceBatchCopy(const Batch& b, int64_t extra_capacity = 0) {
    offsets = to_device(b.offsets);
    std::vector<int32_t> ids_padded = b.ids;
    ids_padded.resize(b.ids.size() + static_cast<std::size_t>(extra_capacity), -7);  // junk past the count
    ids = to_device(ids_padded);
    bags.offsets = offsets.as<int32_t>();
    bags.ids = ids.as<int32_t>();
    bags.batch = b.size;
    bags.max_ids = static_cast<int64_t>(ids_padded.size());
  }
};

// Row r of the tables as floats (host copy of the device weights).
inline std::vector<float> rows_as_float(const std::vector<unsigned char>& raw, DType dtype) {
  const std::size_t n = raw.size() / dtype_size(dtype);
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = load_as_f32(raw.data(), i, dtype);
  return out;
}

}  // namespace hetrec::testing

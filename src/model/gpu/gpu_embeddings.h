#pragma once
// All embedding tables of a model on one device, back to back in one weights buffer,
// with the sparse optimizer state beside them; initialised on the device with the CPU
// collection's values, looked up and updated by the table-batched kernels.
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "gpu/platform.h"
#include "kernels/embedding_types.h"
#include "model/gpu/device_mirror.h"
#include "model/model_config.h"

namespace hetrec::gpu_model {

class GpuEmbeddings {
 public:
  // Throws ConfigError for a row dtype, optimizer or table size the kernels cannot serve.
  GpuEmbeddings(const ModelConfig& model, const OptimConfig& optim, Allocator& device, gpu::stream_t stream);

  const kernels::EmbeddingTables& tables() const { return tables_; }
  const kernels::SparseOptimizerParams& optimizer(const kernels::StepScalars* scalars);
  int64_t rows(int table) const { return row_offsets_host_[static_cast<std::size_t>(table) + 1] - row_offsets_host_[static_cast<std::size_t>(table)]; }

  // Throws DataError unless `batch` has one bag per table and sample and its offsets
  // start at 0, never decrease and end at the id count (what kernels read through).
  void check_offsets(const Batch& batch) const;
  // check_offsets, and a DataError naming the table, the sample and the id when an id
  // is outside its table (run on the host only after the device reported a bad id).
  void validate(const Batch& batch) const;

  // "embedding.<name>.weight" (rows x dim, row dtype) and "embedding.<name>.accumulator"
  // per table, as the CPU collection names them. Host tensors are created on first use.
  const std::vector<DeviceMirror>& mirrors();

 private:
  ModelConfig model_;
  OptimConfig optim_;
  std::vector<int64_t> row_offsets_host_;
  Tensor weights_, accumulators_, row_offsets_, mean_pooling_;
  kernels::EmbeddingTables tables_;
  kernels::SparseOptimizerParams optimizer_;
  std::vector<DeviceMirror> mirrors_;
};

}  // namespace hetrec::gpu_model

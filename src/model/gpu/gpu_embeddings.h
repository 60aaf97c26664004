#pragma once
// All embedding tables of a model on one device, back to back in one weights buffer,
// with the sparse optimizer state beside them; initialised on the device with the CPU
// collection's values, looked up and updated by the table-batched kernels.
//
// Tables named in model.host_tables live instead, rows and optimizer state, back to back
// in one page-locked host buffer mapped into the device's address space: the same
// kernels read and update them in place over the host link, through per-table pointers
// (EmbeddingTables::table_weights). The arithmetic is the same wherever a table lives.
//
// In distributed training the tables are this rank's shards: model.tables[t] describes
// the shard (its rows, the full table's name, its pooling), model.embedding_dim the
// shards' common width, and origins[t] which block of which full table it is. A shard
// starts with, and rounds its 16-bit updates like, its block of the full table, as the
// CPU EmbeddingCollection built with the same origins.
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "gpu/device_buffer.h"
#include "data/batch.h"
#include "gpu/platform.h"
#include "kernels/embedding_types.h"
#include "model/gpu/device_mirror.h"
#include "model/model_config.h"
#include "nn/embedding_collection.h"

namespace hetrec::inline model::gpu_model {

// The device update rule of a config's sparse optimizer (optim.sparse).
kernels::SparseOptimizerKind sparse_optimizer_kind(OptimizerKind kind);


class GpuEmbeddings {
 public:
  // Throws ConfigError for a row dtype, optimizer or table size the kernels cannot serve,
  // or origins that do not fit the tables. origins empty: table t is model table t, whole.
  GpuEmbeddings(const ModelConfig& model, const OptimConfig& optim, Allocator& device, gpu::stream_t stream,
                std::vector<TableOrigin> origins = {});

  const kernels::EmbeddingTables& tables() const { return tables_; }
  const kernels::SparseOptimizerParams& optimizer(const kernels::StepScalars* scalars);
  const std::vector<TableOrigin>& origins() const { return origins_; }
  int64_t rows(int table) const { return row_offsets_host_[static_cast<std::size_t>(table) + 1] - row_offsets_host_[static_cast<std::size_t>(table)]; }

  // DataError for unsound offsets (data/batch_checks.h) or naming the table, the sample
  // and the id when an id is outside its table (run on the host only after the device
  // reported a bad id).
  void validate(const Batch& batch) const;

  // "embedding.<name>.weight" (rows x dim, row dtype) and "embedding.<name>.accumulator"
  // per table, as the CPU collection names them. Host tensors are created on first use.
  const std::vector<DeviceMirror>& mirrors();

  bool on_host(int table) const { return on_host_[static_cast<std::size_t>(table)] != 0; }
  int host_table_count() const;
  std::size_t host_bytes() const { return host_weights_.bytes() + host_accumulators_.bytes(); }

 private:
  // Table t's first row (element 0) and first accumulator, as the kernels address them.
  void* table_rows(int t) const;
  float* table_state(int t) const;

  std::vector<uint8_t> on_host_;
  std::vector<int64_t> local_offset_;  // first row of table t within its buffer (HBM or host)
  gpu::MappedHostBuffer host_weights_, host_accumulators_;
  Tensor table_pointers_, state_pointers_;  // device arrays of num_tables pointers
  ModelConfig model_;
  OptimConfig optim_;
  std::vector<TableOrigin> origins_;
  Tensor shard_origins_;  // device, kernels::ShardOrigin per table (shards only)
  std::vector<int64_t> row_offsets_host_;
  Tensor weights_, accumulators_, row_offsets_, mean_pooling_;
  kernels::EmbeddingTables tables_;
  kernels::SparseOptimizerParams optimizer_;
  std::vector<DeviceMirror> mirrors_;
};

}  // namespace hetrec::model::gpu_model

#pragma once
// This rank's shards of the embedding tables of a data-parallel job on GPUs, and the
// exchanges that connect them to the samples (dist/sharding.h names the placements):
//
// The all-to-alls carry fp32 or, with plan.exchange_dtype = bf16, bf16 (half the bytes;
// the lookups write bf16 pooled vectors, the scatter rounds the gradients, and the update
// reads them as they arrived, widening each as it loads). Replicated tables' vectors and
// gradients stay fp32.
//
//   forward   every rank reads the same global batch, so each rank cuts the bags of its
//             own shards from it on the host (no id exchange) and looks them up for all
//             B samples; one all-to-all per group (whole-width, column) sends each rank
//             the rows of its samples; gather_pooled_pieces places them in the slots of
//             X (row_wise partial sums added in rank order, column slices side by side).
//             Replicated tables are looked up locally for the rank's own samples.
//   backward  the gradients of X's slots travel the reverse way (scatter_pooled_grads,
//             then all-to-all; replicated: all-gather), so every shard holds its
//             gradient for the whole global batch, and the fused sparse optimizer runs
//             once per row over the global batch in sample order, as on one device.
//
// Every device call is enqueued on the caller's stream (graph-capturable: no allocation,
// no synchronisation). Shards start with the values of the same block of the full table
// (GpuEmbeddings with TableOrigin), so N ranks start where one device does.
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "data/batch.h"
#include "dist/shard_bags.h"
#include "dist/sharding.h"
#include "gpu/collectives.h"
#include "gpu/event.h"
#include "gpu/stream.h"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "kernels/pooled_pieces.h"
#include "kernels/step_scalars.h"
#include "model/gpu/batch_staging.h"
#include "model/gpu/device_mirror.h"
#include "model/gpu/gpu_embeddings.h"
#include "model/model_config.h"
#include "nn/sharded_embedding_collection.h"

namespace hetrec::inline model::gpu_model {

class ShardedGpuEmbeddings {
 public:
  // Throws ConfigError for what the GPU shards do not support: a row_wise table with mean
  // pooling (a block's bag length is not the bag's), column_wise with row-wise Adagrad
  // (its accumulator needs every column's gradient).
  ShardedGpuEmbeddings(const ModelConfig& model, const OptimConfig& optim, const dist::ShardingPlan& plan, int rank,
                       gpu::Communicator& comm, Allocator& device, gpu::stream_t stream);

  // Host, before a step or prediction: cuts this rank's shard bags from the global batch
  // straight into the staging memory (pack; the model may do it for the next batch while
  // the device runs the current step), then copies them on `copy` (recording `ready`).
  // This rank's samples are [local_begin, local_begin + local_count). copy_packed returns
  // true when a device buffer moved or the exchange layout changed (a captured graph is
  // then stale). The batch's offsets must be sound.
  void pack(const Batch& global, int64_t local_begin, int64_t local_count, bool training);
  bool copy_packed(gpu::Stream& copy, gpu::Event& ready, gpu::stream_t compute);
  // The packed bags to the device now, ahead of the step (BatchStaging::copy_ahead).
  void copy_ahead(gpu::Stream& copy);

  // Forward, in two parts (timed apart): this rank's lookups (raising *bad_ids for an id
  // outside its shard), then the exchange that places the pooled vectors of the local
  // samples in X: slot t (model table t) of sample b at slots[b * stride + t * dim].
  void lookup(int32_t* bad_ids, gpu::stream_t stream, const kernels::TunedEmbeddingForward* tuned);
  void exchange_pooled(float* slots, int64_t stride, gpu::stream_t stream);
  // Sends the local samples' slot gradients to the shards (same layout as forward's X).
  void exchange_gradients(const float* grad_slots, int64_t stride, gpu::stream_t stream);
  // The fused sparse optimizer on every shard of this rank, over the global batch.
  // `tuned` runs the update of every group whose rows and optimizer it was compiled for.
  void update(const kernels::StepScalars* scalars, gpu::stream_t stream, const kernels::TunedSparseUpdate* tuned);

  // Host: throws DataError naming the table, sample and id for the first id of the global
  // batch outside its table (called after the device reported one).
  void validate(const Batch& global) const;

  // Every shard's weights and optimizer state as device mirrors, and the same host
  // tensors as ShardTensors (table, first row and column of the block; replicas are
  // primary on rank 0 only).
  const std::vector<DeviceMirror>& mirrors();
  std::vector<ShardTensor> shard_tensors();

  int64_t host_bytes() const;
  int host_table_count() const;
  // "tables t0:table_wise@1, ..." for describe().
  std::string describe() const;

 private:
  // The shards of one kind on this rank: one GpuEmbeddings (one row width).
  struct Group {
    std::vector<dist::ShardLookup> lookups;  // one per shard, in slot order
    std::vector<TableOrigin> origins;
    int width = 0;
    std::unique_ptr<GpuEmbeddings> tables;
    std::unique_ptr<BatchStaging> staging;  // the shards' bags over the global batch
    Tensor workspace;  // the fused backward's scratch
    int64_t id_capacity = 0;
  };
  // Which shards rank h holds in each routed group, in slot order (model table order).
  struct RankLayout {
    std::vector<int> whole;   // table_wise (owner h) and row_wise (block of h) tables
    std::vector<int> column;  // column_wise tables
    int column_width = 0;
  };

  void make_group(Group& g, const ModelConfig& model, const OptimConfig& optim, Allocator& device,
                  gpu::stream_t stream);
  bool reserve(int64_t global, int64_t local);
  void build_pieces(int64_t global, gpu::stream_t compute);

  ModelConfig model_;
  OptimConfig optim_;
  dist::ShardingPlan plan_;
  int rank_ = 0;
  int ranks_ = 1;
  DType exchange_ = DType::f32;  // the element type of the all-to-alls (plan.exchange_dtype)
  gpu::Communicator& comm_;
  Allocator& device_;
  std::vector<RankLayout> layout_;  // per rank
  std::vector<int> replicated_;     // replicated tables, in slot order
  Group whole_, column_, replica_;
  std::unique_ptr<BatchStaging> replica_local_staging_;  // replicated bags of the local samples
  bool packed_training_ = false;                          // the packed batch includes the update's bags

  int64_t global_ = 0, local_ = 0;  // samples of the packed global batch and of this rank's share
  std::vector<int64_t> share_;                       // samples of each rank
  int64_t global_capacity_ = 0, local_capacity_ = 0;
  // Exchange buffers (of exchange_'s type). whole/column: pooled_ [B x S_r w] (this rank's
  // shards for every sample, also the forward send buffer), received_ [B_local x sum_h
  // S_h w] (rank-major), grad_send_ (layout of received_), grad_ [B x S_r w] (arrived
  // gradients, which the update reads).
  Tensor whole_pooled_, whole_received_, whole_grad_send_, whole_grad_;
  Tensor column_pooled_, column_received_, column_grad_send_, column_grad_;
  // replicated: pooled_ [B_local x R D], grad_send_ [B_local x R D], grad_ [B x R D].
  Tensor replica_pooled_, replica_grad_send_, replica_grad_;
  // Byte counts of the exchanges (per rank).
  std::vector<int64_t> whole_send_bytes_, whole_recv_bytes_, column_send_bytes_, column_recv_bytes_;
  std::vector<int64_t> replica_recv_bytes_;
  // Piece lists on the device (and their host copies, alive while the copies run).
  std::vector<kernels::PooledPiece> pieces_host_;
  std::vector<int> slot_begin_host_;
  std::vector<kernels::PooledGradPiece> grad_pieces_host_;
  Tensor pieces_, slot_begin_, grad_pieces_;
  int64_t pieces_for_global_ = -1;
  std::vector<DeviceMirror> mirrors_;
};

}  // namespace hetrec::model::gpu_model

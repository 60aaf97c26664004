#pragma once
// Table-batched embedding backward fused with the sparse optimizer. No dense gradient of
// a table ever exists: the (table, id) pairs of the batch are sorted (stable radix sort
// on the global row), each unique row's gradient is summed over its occurrences in
// input order (deterministic; a row occurring more than 64 times is summed in chunks of
// 64 occurrences, then the chunk sums in order), and the optimizer updates that row
// once, in place.
#include <cstddef>
#include <cstdint>

#include "gpu/platform.h"
#include "kernels/embedding_backward_geometry.h"  // embedding_backward_workspace_bytes
#include "kernels/embedding_types.h"

namespace hetrec::kernels {

class TunedSparseUpdate;  // tunable/sparse_update/sparse_update_tuned.h

// grad_pooled(b, t, d) = grad_pooled[b * grad_row_stride + t * dim + d] (fp32), the
// gradient of the forward's pooled output. For each row r touched by the batch:
//   g = sum over occurrences (t, b) of r of grad_pooled(b, t, :) (divided by the bag's
//       length for mean-pooled tables)
//   sgd:             w -= lr * g
//   adagrad:         a += g^2 (element-wise);   w -= lr * g / (sqrt(a) + eps)
//   rowwise_adagrad: a += mean_d(g^2) (one per row); w -= lr * g / (sqrt(a) + eps)
// 16-bit rows are updated in fp32 and stored with stochastic rounding
// (kernels/sparse_rounding.h; a shard draws as its block of the full table, from
// optimizer.shard_origins). Ids outside their table are skipped. Nothing is written
// when optimizer.scalars->skip_update is set. A non-null `tuned` (compiled for these
// tables' shape and optimizer) runs the update in place of the built-in variant.
void embedding_bag_backward_update(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                                   int64_t grad_row_stride, const SparseOptimizerParams& optimizer, void* workspace,
                                   std::size_t workspace_bytes, gpu::stream_t stream,
                                   const TunedSparseUpdate* tuned = nullptr);
// The same from fp32 or bf16 gradients (a bf16 embedding exchange's): each bf16 value is
// widened exactly as it is read, so the result equals the fp32 call's on the widened
// gradients bit for bit. `tuned` must be compiled for the gradients' type.
void embedding_bag_backward_update(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                                   const SparseOptimizerParams& optimizer, void* workspace,
                                   std::size_t workspace_bytes, gpu::stream_t stream,
                                   const TunedSparseUpdate* tuned = nullptr);

// The same in two parts, so that the update alone can be timed and swapped (the tuner):
// the preparation sorts the occurrences into the workspace, finds each unique row's
// segment and sums the chunks of long rows; the update applies the optimizer to every
// unique row. The plan points into `workspace`, valid until it is reused; the update
// may run again on the same plan (on rows and state restored in between).
SparseUpdatePlan embedding_backward_prepare(const EmbeddingTables& tables, const DeviceBags& bags,
                                            const float* grad_pooled, int64_t grad_row_stride,
                                            const SparseOptimizerParams& optimizer, void* workspace,
                                            std::size_t workspace_bytes, gpu::stream_t stream);
void embedding_backward_apply(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                              int64_t grad_row_stride, const SparseOptimizerParams& optimizer,
                              const SparseUpdatePlan& plan, gpu::stream_t stream,
                              const TunedSparseUpdate* tuned = nullptr);
SparseUpdatePlan embedding_backward_prepare(const EmbeddingTables& tables, const DeviceBags& bags,
                                            const PooledGradView& grad, const SparseOptimizerParams& optimizer,
                                            void* workspace, std::size_t workspace_bytes, gpu::stream_t stream);

// The preparation in its two parts, so that the part that needs no gradient can run
// early, beside the dense work (model/gpu: on its own stream from the step's start):
// the sort, the unique rows' segments and the long rows' chunk layout from the ids alone;
// then, once the gradients exist, the long rows' chunk sums into plan.partial.
// prepare = sort + chunk sums, in the same kernels and order (bit-identical results).
SparseUpdatePlan embedding_backward_sort(const EmbeddingTables& tables, const DeviceBags& bags,
                                         const SparseOptimizerParams& optimizer, void* workspace,
                                         std::size_t workspace_bytes, gpu::stream_t stream);
void embedding_backward_chunk_sums(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                                   const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan,
                                   void* workspace, gpu::stream_t stream);
void embedding_backward_apply(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                              const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan,
                              gpu::stream_t stream, const TunedSparseUpdate* tuned = nullptr);

}  // namespace hetrec::kernels

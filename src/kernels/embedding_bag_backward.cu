#include "kernels/embedding_bag_backward.h"

#include <algorithm>
#include <bit>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/kernel_attributes.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"
#include "kernels/long_rows.h"
#include "kernels/radix_sort.h"
#include "kernels/sort_pairs.h"
#include "kernels/row_vector.cuh"
#include "kernels/scan.h"
#include "tunable/sparse_update/sparse_update_kernel.cuh"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "tunable/sparse_update/sparse_update_variant.h"

namespace hetrec::kernels {

namespace {

// Threads per block of the preparation kernels (sort keys, segments, chunks, chunk sums).
constexpr int kBlockThreads = 256;
static_assert(kBlockThreads % gpu::kWarpSize == 0, "the chunk sums' groups need whole warps");
// Marks ids that failed validation: sorts after every real row and is skipped.
constexpr uint32_t kInvalidKey = kSparseUpdateInvalidKey;
// The built-in update (kDefaultSparseUpdateVariant); the chunk sums request as many
// occurrence gradients at once as it does.
constexpr int kGradsInFlight = kDefaultSparseUpdateVariant.grads_in_flight;
constexpr int kUpdateBlockThreads = kDefaultSparseUpdateVariant.block_threads;
constexpr int kUpdateMinBlocksPerSm = kDefaultSparseUpdateVariant.min_blocks_per_sm;

// Global row of every id (the sort key) and its bag t * B + b (the value). A block takes
// kBlockThreads consecutive bags, whose ids form one contiguous range: its threads walk
// that range id by id (coalesced reads and writes, whatever the bag lengths) and find
// each id's bag by a binary search over the block's bag ends in shared memory.
__global__ void __launch_bounds__(kBlockThreads)
    build_sort_keys_kernel(const int32_t* __restrict__ offsets, const int32_t* __restrict__ ids,
                           const int64_t* __restrict__ row_offsets, int64_t batch, int num_tables,
                           uint32_t* __restrict__ keys, uint32_t* __restrict__ bag_of) {
  __shared__ int32_t bag_end[kBlockThreads];
  __shared__ int64_t bag_first_row[kBlockThreads];
  __shared__ int64_t bag_rows[kBlockThreads];
  const int64_t num_bags = batch * num_tables;
  const int64_t first_bag = static_cast<int64_t>(blockIdx.x) * kBlockThreads;
  const int count = static_cast<int>(num_bags - first_bag < kBlockThreads ? num_bags - first_bag : kBlockThreads);
  if (static_cast<int>(threadIdx.x) < count) {
    const int64_t bag = first_bag + threadIdx.x;
    const int t = static_cast<int>(bag / batch);
    bag_end[threadIdx.x] = offsets[bag + 1];
    bag_first_row[threadIdx.x] = row_offsets[t];
    bag_rows[threadIdx.x] = row_offsets[t + 1] - row_offsets[t];
  }
  __syncthreads();
  const int32_t end = bag_end[count - 1];
  for (int32_t p = offsets[first_bag] + static_cast<int32_t>(threadIdx.x); p < end; p += kBlockThreads) {
    int lo = 0, hi = count - 1;  // the first bag of the block that ends after p
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (bag_end[mid] > p) hi = mid;
      else lo = mid + 1;
    }
    const int32_t id = ids[p];
    keys[p] = id >= 0 && id < bag_rows[lo] ? static_cast<uint32_t>(bag_first_row[lo] + id) : kInvalidKey;
    bag_of[p] = static_cast<uint32_t>(first_bag + lo);
  }
}

__global__ void __launch_bounds__(kBlockThreads)
    mark_segment_heads_kernel(const uint32_t* __restrict__ keys, const int32_t* num_items, int64_t capacity,
                              uint32_t* __restrict__ heads) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (i >= capacity) return;
  const int64_t n = *num_items;
  heads[i] = i < n && (i == 0 || keys[i] != keys[i - 1]) ? 1u : 0u;
}

// segment_start[u] = first sorted position of unique row u; segment_start[U] = n.
__global__ void __launch_bounds__(kBlockThreads)
    segment_starts_kernel(const uint32_t* __restrict__ heads, const uint32_t* __restrict__ unique_index,
                          const int32_t* num_items, const uint32_t* num_unique, int64_t capacity,
                          uint32_t* __restrict__ segment_start) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (i >= capacity) return;
  if (heads[i]) segment_start[unique_index[i]] = static_cast<uint32_t>(i);
  if (i == 0) segment_start[*num_unique] = static_cast<uint32_t>(*num_items);
}

// Rows occurring more than kLongSegment times are split into chunks of chunk_length
// occurrences: chunks[u] is their count (0 for a short row). The segment of invalid ids
// (key kInvalidKey, last) gets none: its occurrences come from several tables, so a
// chunk sum would read gradients of one table at another's offsets, and the update
// skips it anyway.
__global__ void __launch_bounds__(kBlockThreads)
    count_chunks_kernel(const uint32_t* __restrict__ segment_start, const uint32_t* __restrict__ sorted_keys,
                        const uint32_t* __restrict__ num_unique, int64_t total_rows, int64_t capacity,
                        uint32_t* __restrict__ chunks) {
  const int64_t u = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (u >= capacity) return;
  uint32_t c = 0;
  if (u < *num_unique && sorted_keys[segment_start[u]] < total_rows) {
    const uint32_t len = segment_start[u + 1] - segment_start[u];
    c = long_row_chunks(len);
  }
  chunks[u] = c;
}

// owner[chunk_start[u] + j] = u for every chunk j of a long row u.
__global__ void __launch_bounds__(kBlockThreads)
    chunk_owner_kernel(const uint32_t* __restrict__ chunks, const uint32_t* __restrict__ chunk_start,
                       const uint32_t* __restrict__ num_unique, int64_t capacity, uint32_t* __restrict__ owner) {
  const int64_t u = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (u >= capacity || u >= *num_unique) return;
  for (uint32_t j = 0; j < chunks[u]; ++j) owner[chunk_start[u] + j] = static_cast<uint32_t>(u);
}

// partial[c] = the gradient sum of chunk c's occurrences, one group of lanes per chunk,
// persistent over the chunks (their count lives on the device).
template <int VEC, int UNITS, class Grad>
__global__ void __launch_bounds__(kBlockThreads)
    chunk_partial_kernel(const uint32_t* __restrict__ owner, const uint32_t* __restrict__ chunk_start,
                         const uint32_t* __restrict__ num_chunks, const uint32_t* __restrict__ segment_start,
                         const uint32_t* __restrict__ sorted_bags, const int32_t* __restrict__ offsets,
                         const uint8_t* __restrict__ mean_pooling, const Grad* __restrict__ grad, int64_t grad_stride,
                         int64_t batch, int dim, int lanes, const StepScalars* __restrict__ scalars,
                         float* __restrict__ partial) {
  if (scalars->skip_update) return;
  const int lane = static_cast<int>(threadIdx.x) % lanes;
  const int64_t groups = static_cast<int64_t>(gridDim.x) * kBlockThreads / lanes;
  const int64_t count = *num_chunks;
  // No warp collectives here: a group may leave the loop on its own.
  for (int64_t c = (static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / lanes; c < count; c += groups) {
    const uint32_t u = owner[c];
    const uint32_t j = static_cast<uint32_t>(c) - chunk_start[u];
    const uint32_t row_end = segment_start[u + 1];
    const uint32_t length = long_row_chunk_length(row_end - segment_start[u]);
    const uint32_t begin = segment_start[u] + j * length;
    const uint32_t end = begin + length < row_end ? begin + length : row_end;
    uint32_t bags[kGradsInFlight];
    sparse_load_bags(bags, begin, end, sorted_bags);
    const int table = sparse_table_of_bag(bags[0], batch);
    float g[UNITS][VEC];
    sparse_zero(g);
    sparse_add_occurrences<kGradsInFlight>(g, bags, begin, end, lane, lanes, sorted_bags, offsets, table,
                                           mean_pooling[table] != 0, grad, grad_stride, batch, dim);
    float* dst = partial + c * dim;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e < dim) store_vec<VEC>(dst + e, g[k]);
    }
  }
}

// Blocks of a persistent grid over `items` work items of `lanes` threads each, for a
// kernel of which `resident_per_sm` blocks fit on one multiprocessor: as many as the
// device holds at once, so every block runs from the start (a grid larger than one wave
// leaves a partial last wave idling part of the device).
unsigned persistent_grid(int resident_per_sm, int block_threads, int64_t items, int lanes) {
  const int64_t cap = static_cast<int64_t>(gpu::multiprocessor_count(gpu::current_device())) * resident_per_sm;
  const int64_t wanted = ceil_div<int64_t>(items > 0 ? items : 1, block_threads / lanes);
  return static_cast<unsigned>(wanted < cap ? wanted : cap > 0 ? cap : 1);
}

unsigned persistent_blocks(const void* kernel, int block_threads, int64_t items, int lanes,
                           std::size_t shared_bytes = 0) {
  return persistent_grid(gpu::resident_blocks_per_multiprocessor(kernel, block_threads, shared_bytes), block_threads,
                         items, lanes);
}

// Whether rows, gradients, chunk sums and (Adagrad) accumulators allow `vec`-element
// vectors.
bool vectors_fit(const EmbeddingTables& tables, const PooledGradView& grad, const float* partial,
                 const SparseOptimizerParams& opt, int vec) {
  const int dim = tables.dim;
  const std::size_t row_bytes = dtype_size(tables.row_dtype);
  return vector_path_ok(dim, vec, tables.weights, row_bytes) &&
         vector_path_ok(dim, vec, grad.data, dtype_size(grad.dtype)) && grad.row_stride % vec == 0 &&
         vector_path_ok(dim, vec, partial, sizeof(float)) &&
         (opt.kind != SparseOptimizerKind::adagrad || vector_path_ok(dim, vec, opt.accumulators, sizeof(float)));
}

// ---- the chunk sums of long rows (preparation) ----

struct ChunkArgs {
  const uint32_t* owner;
  const uint32_t* chunk_start;
  const uint32_t* num_chunks;
  const uint32_t* segment_start;
  const uint32_t* sorted_bags;
  int64_t max_chunks;
  float* partial;
};

template <int VEC, int UNITS, class Grad>
void launch_chunk_partials(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                           const SparseOptimizerParams& opt, const ChunkArgs& c, int lanes, gpu::stream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(&chunk_partial_kernel<VEC, UNITS, Grad>);
  chunk_partial_kernel<VEC, UNITS, Grad>
      <<<persistent_blocks(kernel, kBlockThreads, c.max_chunks, lanes), kBlockThreads, 0, stream>>>(
          c.owner, c.chunk_start, c.num_chunks, c.segment_start, c.sorted_bags, bags.offsets, tables.mean_pooling,
          static_cast<const Grad*>(grad.data), grad.row_stride, bags.batch, tables.dim, lanes, opt.scalars, c.partial);
  HETREC_GPU_CHECK_LAUNCH("chunk_partial_kernel");
}

template <int VEC, class Grad>
void dispatch_chunk_units(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                          const SparseOptimizerParams& opt, const ChunkArgs& c, gpu::stream_t stream) {
  const LaneLayout l = lane_layout(tables.dim, VEC);
  switch (l.units) {
    case 1: return launch_chunk_partials<VEC, 1, Grad>(tables, bags, grad, opt, c, l.lanes, stream);
    case 2: return launch_chunk_partials<VEC, 2, Grad>(tables, bags, grad, opt, c, l.lanes, stream);
    case 4: return launch_chunk_partials<VEC, 4, Grad>(tables, bags, grad, opt, c, l.lanes, stream);
    case 8: return launch_chunk_partials<VEC, 8, Grad>(tables, bags, grad, opt, c, l.lanes, stream);
    default: throw InternalError("embedding_bag_backward_update: unsupported units per lane");
  }
}

template <class Grad>
void dispatch_chunk_vec(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                        const SparseOptimizerParams& opt, const ChunkArgs& c, gpu::stream_t stream) {
  const int wide_vec = 16 / static_cast<int>(dtype_size(tables.row_dtype));
  const bool wide = vectors_fit(tables, grad, c.partial, opt, wide_vec);
  if (!wide) return dispatch_chunk_units<1, Grad>(tables, bags, grad, opt, c, stream);
  switch (wide_vec) {
    case 4: return dispatch_chunk_units<4, Grad>(tables, bags, grad, opt, c, stream);
    case 8: return dispatch_chunk_units<8, Grad>(tables, bags, grad, opt, c, stream);
    default: throw InternalError("embedding_bag_backward_update: rows must be fp32, fp16 or bf16");
  }
}

// The chunk sums use the built-in update's vectors: 16 bytes of the row type.
void chunk_partials(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                    const SparseOptimizerParams& opt, const ChunkArgs& c, gpu::stream_t stream) {
  if (grad.dtype == DType::bf16) return dispatch_chunk_vec<Bf16Bits>(tables, bags, grad, opt, c, stream);
  return dispatch_chunk_vec<float>(tables, bags, grad, opt, c, stream);
}

// ---- the built-in update ----

struct UpdateArgs {
  const EmbeddingTables* tables;
  const DeviceBags* bags;
  PooledGradView grad;
  const SparseOptimizerParams* opt;
  const SparseUpdatePlan* plan;
  gpu::stream_t stream;
};

template <class Row, class Grad, int VEC, int UNITS, SparseOptimizerKind OPT>
void launch_update(const UpdateArgs& a, int lanes) {
  const SparseUpdatePlan& p = *a.plan;
  constexpr auto kernel =
      &sparse_update_kernel<Row, VEC, UNITS, OPT, kGradsInFlight, kUpdateBlockThreads, kUpdateMinBlocksPerSm, Grad>;
  const int cached_keys = sparse_update_cached_table_keys(a.tables->row_dtype, a.tables->num_tables);
  const std::size_t keys_bytes = static_cast<std::size_t>(cached_keys) * sizeof(uint64_t);
  kernel<<<persistent_blocks(reinterpret_cast<const void*>(kernel), kUpdateBlockThreads, p.max_rows, lanes,
                             keys_bytes),
           kUpdateBlockThreads, keys_bytes, a.stream>>>(
      static_cast<Row*>(a.tables->weights), a.opt->accumulators, a.tables->table_weights, a.opt->table_accumulators,
      p.sorted_keys, p.sorted_bags, p.segment_start, p.num_unique, p.chunks, p.chunk_start, p.partial,
      a.bags->offsets, a.tables->row_offsets, a.tables->mean_pooling, static_cast<const Grad*>(a.grad.data),
      a.grad.row_stride, a.bags->batch,
      a.tables->dim, lanes, a.tables->total_rows, a.opt->scalars, a.opt->eps, a.opt->seed, a.opt->shard_origins,
      cached_keys);
  HETREC_GPU_CHECK_LAUNCH("sparse_update_kernel");
}

template <class Row, class Grad, int VEC, int UNITS>
void dispatch_optimizer(const UpdateArgs& a, int lanes) {
  switch (a.opt->kind) {
    case SparseOptimizerKind::sgd: return launch_update<Row, Grad, VEC, UNITS, SparseOptimizerKind::sgd>(a, lanes);
    case SparseOptimizerKind::adagrad:
      return launch_update<Row, Grad, VEC, UNITS, SparseOptimizerKind::adagrad>(a, lanes);
    case SparseOptimizerKind::rowwise_adagrad:
      return launch_update<Row, Grad, VEC, UNITS, SparseOptimizerKind::rowwise_adagrad>(a, lanes);
  }
}

template <class Row, class Grad, int VEC>
void dispatch_units(const UpdateArgs& a, const LaneLayout& layout) {
  switch (layout.units) {
    case 1: return dispatch_optimizer<Row, Grad, VEC, 1>(a, layout.lanes);
    case 2: return dispatch_optimizer<Row, Grad, VEC, 2>(a, layout.lanes);
    case 4: return dispatch_optimizer<Row, Grad, VEC, 4>(a, layout.lanes);
    case 8: return dispatch_optimizer<Row, Grad, VEC, 8>(a, layout.lanes);
    default: throw InternalError("embedding_bag_backward_update: unsupported units per lane");
  }
}

template <class Row, class Grad>
void dispatch_vec(const UpdateArgs& a) {
  constexpr int kWideVec = kDefaultSparseUpdateVariant.vec_bytes / sizeof(Row);
  const int dim = a.tables->dim;
  if (vectors_fit(*a.tables, a.grad, a.plan->partial, *a.opt, kWideVec))
    return dispatch_units<Row, Grad, kWideVec>(a, lane_layout(dim, kWideVec));
  return dispatch_units<Row, Grad, 1>(a, lane_layout(dim, 1));
}

template <class Row>
void dispatch_grad(const UpdateArgs& a) {
  if (a.grad.dtype == DType::bf16) return dispatch_vec<Row, Bf16Bits>(a);
  return dispatch_vec<Row, float>(a);
}

struct Workspace {
  SortBuffers sort;
  uint32_t* segment_start;
  uint32_t* num_unique;
  uint32_t* num_chunks;
  uint32_t* owner;
  float* partial;
  int64_t max_chunks;
  void* scratch;
  std::size_t scratch_bytes;
};

// The workspace's parts (kernels/embedding_backward_geometry.h).
Workspace carve(void* base, int64_t capacity, int dim) {
  const EmbeddingBackwardLayout l = embedding_backward_layout(capacity, dim);
  char* p = static_cast<char*>(base);
  Workspace w{};
  w.sort.keys = reinterpret_cast<uint32_t*>(p);
  w.sort.values = reinterpret_cast<uint32_t*>(p + l.sort_array);
  w.sort.keys_alt = reinterpret_cast<uint32_t*>(p + 2 * l.sort_array);
  w.sort.values_alt = reinterpret_cast<uint32_t*>(p + 3 * l.sort_array);
  w.segment_start = reinterpret_cast<uint32_t*>(p + l.segment_start);
  w.num_unique = reinterpret_cast<uint32_t*>(p + l.counters);
  w.num_chunks = w.num_unique + 1;
  w.max_chunks = l.max_chunks;
  w.owner = reinterpret_cast<uint32_t*>(p + l.owner);
  w.partial = reinterpret_cast<float*>(p + l.partial);
  w.scratch = p + l.scratch;
  w.scratch_bytes = l.scratch_bytes;
  return w;
}

}  // namespace

SparseUpdatePlan embedding_backward_sort(const EmbeddingTables& tables, const DeviceBags& bags,
                                         const SparseOptimizerParams& optimizer, void* workspace,
                                         std::size_t workspace_bytes, gpu::stream_t stream) {
  check_tables(tables, "embedding_bag_backward_update");
  SparseUpdatePlan plan;
  if (bags.batch == 0 || tables.num_tables == 0 || bags.max_ids == 0) return plan;
  if (tables.total_rows >= static_cast<int64_t>(kInvalidKey))
    throw ConfigError("embedding tables of " + std::to_string(tables.total_rows) +
                      " rows in all exceed the GPU backward's 32-bit row keys (at most 4294967294 rows per device)");
  if (bags.max_ids > (int64_t{1} << 31) - 1)
    throw ConfigError("a batch of " + std::to_string(bags.max_ids) + " ids exceeds the 32-bit Batch offsets");
  if (!optimizer.scalars) throw InternalError("embedding_bag_backward_update: no step scalars");
  if (optimizer.kind != SparseOptimizerKind::sgd && !optimizer.accumulators && !optimizer.table_accumulators)
    throw InternalError("embedding_bag_backward_update: Adagrad needs accumulators");
  const std::size_t needed = embedding_backward_workspace_bytes(bags.max_ids, tables.dim);
  if (workspace_bytes < needed)
    throw InternalError("embedding_bag_backward_update: workspace of " + std::to_string(workspace_bytes) +
                        " bytes, need " + std::to_string(needed));

  const int64_t capacity = bags.max_ids;
  const int64_t num_bags = bags.batch * tables.num_tables;
  const int32_t* num_items = bags.offsets + num_bags;  // offsets[T * B]: the id count
  Workspace w = carve(workspace, capacity, tables.dim);

  build_sort_keys_kernel<<<grid_for(num_bags, kBlockThreads), kBlockThreads, 0, stream>>>(
      bags.offsets, bags.ids, tables.row_offsets, bags.batch, tables.num_tables, w.sort.keys, w.sort.values);
  HETREC_GPU_CHECK_LAUNCH("build_sort_keys_kernel");

  const int key_bits = embedding_sort_key_bits(tables.total_rows);
  const bool in_primary =
      sort_pairs(optimizer.sort, w.sort, num_items, capacity, key_bits, w.scratch, w.scratch_bytes, stream);
  const uint32_t* sorted_keys = in_primary ? w.sort.keys : w.sort.keys_alt;
  const uint32_t* sorted_bags = in_primary ? w.sort.values : w.sort.values_alt;
  // The ping-pong partner is free now: it holds the segment heads and their scan.
  uint32_t* heads = in_primary ? w.sort.keys_alt : w.sort.keys;
  uint32_t* unique_index = in_primary ? w.sort.values_alt : w.sort.values;

  mark_segment_heads_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(sorted_keys, num_items,
                                                                                            capacity, heads);
  HETREC_GPU_CHECK_LAUNCH("mark_segment_heads_kernel");
  exclusive_scan(heads, unique_index, capacity, w.num_unique, w.scratch, w.scratch_bytes, stream);
  segment_starts_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(
      heads, unique_index, num_items, w.num_unique, capacity, w.segment_start);
  HETREC_GPU_CHECK_LAUNCH("segment_starts_kernel");

  // Long rows are split into chunks; the heads and their scan are free again and hold
  // each row's chunk count and first chunk.
  uint32_t* chunks = heads;
  uint32_t* chunk_start = unique_index;
  count_chunks_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(
      w.segment_start, sorted_keys, w.num_unique, tables.total_rows, capacity, chunks);
  HETREC_GPU_CHECK_LAUNCH("count_chunks_kernel");
  exclusive_scan(chunks, chunk_start, capacity, w.num_chunks, w.scratch, w.scratch_bytes, stream);
  chunk_owner_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(chunks, chunk_start, w.num_unique,
                                                                                     capacity, w.owner);
  HETREC_GPU_CHECK_LAUNCH("chunk_owner_kernel");

  plan.sorted_keys = sorted_keys;
  plan.sorted_bags = sorted_bags;
  plan.segment_start = w.segment_start;
  plan.num_unique = w.num_unique;
  plan.chunks = chunks;
  plan.chunk_start = chunk_start;
  plan.partial = w.partial;
  plan.max_rows = capacity;
  return plan;
}

void embedding_backward_chunk_sums(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                                   const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan,
                                   void* workspace, gpu::stream_t stream) {
  if (grad.dtype != DType::f32 && grad.dtype != DType::bf16)
    throw InternalError("embedding_bag_backward_update: pooled gradients must be fp32 or bf16, got " +
                        std::string(dtype_name(grad.dtype)));
  if (plan.max_rows == 0) return;  // nothing sorted: an empty batch
  const Workspace w = carve(workspace, plan.max_rows, tables.dim);
  chunk_partials(tables, bags, grad, optimizer,
                 {w.owner, plan.chunk_start, w.num_chunks, plan.segment_start, plan.sorted_bags, w.max_chunks,
                  w.partial},
                 stream);
}

SparseUpdatePlan embedding_backward_prepare(const EmbeddingTables& tables, const DeviceBags& bags,
                                            const PooledGradView& grad, const SparseOptimizerParams& optimizer,
                                            void* workspace, std::size_t workspace_bytes, gpu::stream_t stream) {
  if (grad.dtype != DType::f32 && grad.dtype != DType::bf16)
    throw InternalError("embedding_bag_backward_update: pooled gradients must be fp32 or bf16, got " +
                        std::string(dtype_name(grad.dtype)));
  const SparseUpdatePlan plan = embedding_backward_sort(tables, bags, optimizer, workspace, workspace_bytes, stream);
  embedding_backward_chunk_sums(tables, bags, grad, optimizer, plan, workspace, stream);
  return plan;
}

void embedding_backward_apply(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                              const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan,
                              gpu::stream_t stream, const TunedSparseUpdate* tuned) {
  if (plan.max_rows == 0) return;  // nothing prepared: an empty batch
  if (tuned) return tuned->launch(tables, bags, grad, optimizer, plan, stream);
  const UpdateArgs args{&tables, &bags, grad, &optimizer, &plan, stream};
  switch (tables.row_dtype) {
    case DType::f32: return dispatch_grad<float>(args);
    case DType::f16: return dispatch_grad<F16Bits>(args);
    case DType::bf16: return dispatch_grad<Bf16Bits>(args);
    default: break;
  }
  throw InternalError("embedding_bag_backward_update: rows must be fp32, fp16 or bf16");
}

void embedding_bag_backward_update(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad,
                                   const SparseOptimizerParams& optimizer, void* workspace,
                                   std::size_t workspace_bytes, gpu::stream_t stream, const TunedSparseUpdate* tuned) {
  const SparseUpdatePlan plan =
      embedding_backward_prepare(tables, bags, grad, optimizer, workspace, workspace_bytes, stream);
  embedding_backward_apply(tables, bags, grad, optimizer, plan, stream, tuned);
}

SparseUpdatePlan embedding_backward_prepare(const EmbeddingTables& tables, const DeviceBags& bags,
                                            const float* grad_pooled, int64_t grad_row_stride,
                                            const SparseOptimizerParams& optimizer, void* workspace,
                                            std::size_t workspace_bytes, gpu::stream_t stream) {
  return embedding_backward_prepare(tables, bags, PooledGradView{grad_pooled, grad_row_stride, DType::f32}, optimizer,
                                    workspace, workspace_bytes, stream);
}

void embedding_backward_apply(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                              int64_t grad_row_stride, const SparseOptimizerParams& optimizer,
                              const SparseUpdatePlan& plan, gpu::stream_t stream, const TunedSparseUpdate* tuned) {
  embedding_backward_apply(tables, bags, PooledGradView{grad_pooled, grad_row_stride, DType::f32}, optimizer, plan,
                           stream, tuned);
}

void embedding_bag_backward_update(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                                   int64_t grad_row_stride, const SparseOptimizerParams& optimizer, void* workspace,
                                   std::size_t workspace_bytes, gpu::stream_t stream, const TunedSparseUpdate* tuned) {
  embedding_bag_backward_update(tables, bags, PooledGradView{grad_pooled, grad_row_stride, DType::f32}, optimizer,
                                workspace, workspace_bytes, stream, tuned);
}

}  // namespace hetrec::kernels

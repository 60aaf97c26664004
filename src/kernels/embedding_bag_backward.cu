#include "kernels/embedding_bag_backward.h"

#include <bit>
#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device.h"
#include "gpu/fp_ops.h"
#include "gpu/warp.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"
#include "kernels/radix_sort.h"
#include "kernels/row_vector.cuh"
#include "kernels/scan.h"
#include "kernels/sparse_rounding.h"

namespace hetrec::kernels {

namespace {

constexpr int kBlockThreads = 256;
static_assert(kBlockThreads % gpu::kWarpSize == 0, "the update's group reductions need whole warps");
// Marks ids that failed validation: sorts after every real row and is skipped.
constexpr uint32_t kInvalidKey = 0xFFFFFFFFu;
// Persistent update grid: blocks per multiprocessor (enough warps to hide latency).
constexpr int kUpdateBlocksPerSm = 8;
// Occurrence gradients requested together before the first is added.
constexpr int kGradsInFlight = 4;
// Occurrences one group sums for one row before the row is split into chunks summed in
// parallel: in a skewed batch a hot row occurs 10^4 times, which one group would sum for
// milliseconds while the rest of the device idles.
constexpr uint32_t kLongSegment = 64;
constexpr std::size_t kAlign = 256;

std::size_t aligned(std::size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// Global row of every id (the sort key) and its bag t * B + b (the value).
__global__ void __launch_bounds__(kBlockThreads)
    build_sort_keys_kernel(const int32_t* __restrict__ offsets, const int32_t* __restrict__ ids,
                           const int64_t* __restrict__ row_offsets, int64_t batch, int num_tables,
                           uint32_t* __restrict__ keys, uint32_t* __restrict__ bag_of) {
  const int64_t bag = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (bag >= batch * num_tables) return;
  const int t = static_cast<int>(bag / batch);
  const int64_t first_row = row_offsets[t];
  const int64_t rows = row_offsets[t + 1] - first_row;
  for (int32_t p = offsets[bag]; p < offsets[bag + 1]; ++p) {
    const int32_t id = ids[p];
    keys[p] = id >= 0 && id < rows ? static_cast<uint32_t>(first_row + id) : kInvalidKey;
    bag_of[p] = static_cast<uint32_t>(bag);
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

// a * b rounded once, never fused into a following add: keeps the update rules' rounding
// identical to a plain host evaluation of the same expressions.
__device__ inline float mul(float a, float b) { return gpu::mul_rn(a, b); }

template <int VEC, int UNITS>
__device__ inline void zero(float (&g)[UNITS][VEC]) {
#pragma unroll
  for (int k = 0; k < UNITS; ++k)
#pragma unroll
    for (int i = 0; i < VEC; ++i) g[k][i] = 0.0f;
}

// Adds to g this lane's share of the pooled gradients of sorted occurrences
// [begin, end), in order (divided by the bag length for mean-pooled tables).
template <int VEC, int UNITS>
__device__ inline void add_occurrences(float (&g)[UNITS][VEC], uint32_t begin, uint32_t end, int lane, int lanes,
                                       const uint32_t* __restrict__ sorted_bags, const int32_t* __restrict__ offsets,
                                       const uint8_t* __restrict__ mean_pooling, const float* __restrict__ grad,
                                       int64_t grad_stride, int64_t batch, int dim) {
  for (uint32_t p = begin; p < end; p += kGradsInFlight) {
    float v[kGradsInFlight][UNITS][VEC];
    float inv_len[kGradsInFlight];  // mean pooling: 1 / bag length, as the forward scaled
#pragma unroll
    for (int q = 0; q < kGradsInFlight; ++q) {
      inv_len[q] = 1.0f;
      const bool have = p + q < end;
      const int64_t bag = have ? static_cast<int64_t>(sorted_bags[p + q]) : 0;
      const int t = static_cast<int>(bag / batch);
      const int64_t b = bag - static_cast<int64_t>(t) * batch;
      if (have && mean_pooling[t]) inv_len[q] = 1.0f / static_cast<float>(offsets[bag + 1] - offsets[bag]);
      const float* src = grad + b * grad_stride + static_cast<int64_t>(t) * dim;
#pragma unroll
      for (int k = 0; k < UNITS; ++k) {
        const int e = (lane + k * lanes) * VEC;
        if (have && e < dim) {
          load_vec<VEC>(src + e, v[q][k]);
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i) v[q][k][i] = 0.0f;
        }
      }
    }
#pragma unroll
    for (int q = 0; q < kGradsInFlight; ++q)
#pragma unroll
      for (int k = 0; k < UNITS; ++k)
#pragma unroll
        for (int i = 0; i < VEC; ++i) g[k][i] += mul(v[q][k][i], inv_len[q]);
  }
}

// Rows occurring more than kLongSegment times are split into chunks of kLongSegment
// occurrences: chunks[u] is their count (0 for a short row).
__global__ void __launch_bounds__(kBlockThreads)
    count_chunks_kernel(const uint32_t* __restrict__ segment_start, const uint32_t* __restrict__ num_unique,
                        int64_t capacity, uint32_t* __restrict__ chunks) {
  const int64_t u = static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x;
  if (u >= capacity) return;
  uint32_t c = 0;
  if (u < *num_unique) {
    const uint32_t len = segment_start[u + 1] - segment_start[u];
    if (len > kLongSegment) c = (len + kLongSegment - 1) / kLongSegment;
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
template <int VEC, int UNITS>
__global__ void __launch_bounds__(kBlockThreads)
    chunk_partial_kernel(const uint32_t* __restrict__ owner, const uint32_t* __restrict__ chunk_start,
                         const uint32_t* __restrict__ num_chunks, const uint32_t* __restrict__ segment_start,
                         const uint32_t* __restrict__ sorted_bags, const int32_t* __restrict__ offsets,
                         const uint8_t* __restrict__ mean_pooling, const float* __restrict__ grad, int64_t grad_stride,
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
    const uint32_t begin = segment_start[u] + j * kLongSegment;
    const uint32_t end = begin + kLongSegment < segment_start[u + 1] ? begin + kLongSegment : segment_start[u + 1];
    float g[UNITS][VEC];
    zero(g);
    add_occurrences(g, begin, end, lane, lanes, sorted_bags, offsets, mean_pooling, grad, grad_stride, batch, dim);
    float* dst = partial + c * dim;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e < dim) store_vec<VEC>(dst + e, g[k]);
    }
  }
}

// One group of `lanes` threads per unique row, persistent over the rows (the row count
// lives on the device). All lanes of a warp run the same number of iterations, so the
// group reductions below see every lane.
template <class Row, int VEC, int UNITS, SparseOptimizerKind OPT>
__global__ void __launch_bounds__(kBlockThreads)
    sparse_update_kernel(Row* __restrict__ weights, float* __restrict__ accumulators, void* const* table_weights,
                         float* const* table_accumulators,
                         const uint32_t* __restrict__ sorted_keys, const uint32_t* __restrict__ sorted_bags,
                         const uint32_t* __restrict__ segment_start, const uint32_t* __restrict__ num_unique,
                         const uint32_t* __restrict__ chunks, const uint32_t* __restrict__ chunk_start,
                         const float* __restrict__ partial, const int32_t* __restrict__ offsets,
                         const int64_t* __restrict__ row_offsets, const uint8_t* __restrict__ mean_pooling,
                         const float* __restrict__ grad, int64_t grad_stride, int64_t batch, int dim, int lanes,
                         int64_t total_rows, const StepScalars* __restrict__ scalars, float eps, uint64_t seed,
                         const ShardOrigin* __restrict__ shard_origins) {
  if (scalars->skip_update) return;  // uniform over the grid
  const float lr = scalars->sparse_lr;
  const int64_t step = scalars->step;
  const int groups_per_warp = gpu::kWarpSize / lanes;
  const int lane = gpu::lane_id() % lanes;
  const int group = gpu::lane_id() / lanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / gpu::kWarpSize;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kBlockThreads / gpu::kWarpSize;
  const int64_t unique = *num_unique;

  for (int64_t first = warp * groups_per_warp; first < unique; first += warps * groups_per_warp) {
    const int64_t u = first + group;
    bool active = u < unique;
    uint32_t key = kInvalidKey;
    if (active) key = sorted_keys[segment_start[u]];
    if (key >= total_rows) active = false;

    float g[UNITS][VEC];
    zero(g);
    int table = 0;
    if (active) {
      const uint32_t begin = segment_start[u];
      table = static_cast<int>(sorted_bags[begin] / batch);
      const uint32_t n_chunks = chunks[u];
      if (n_chunks == 0) {
        add_occurrences(g, begin, segment_start[u + 1], lane, lanes, sorted_bags, offsets, mean_pooling, grad,
                        grad_stride, batch, dim);
      } else {
        // A long row: its chunk sums, in chunk order.
        const float* src = partial + static_cast<int64_t>(chunk_start[u]) * dim;
        for (uint32_t c = 0; c < n_chunks; ++c) {
#pragma unroll
          for (int k = 0; k < UNITS; ++k) {
            const int e = (lane + k * lanes) * VEC;
            if (e < dim) {
              float v[VEC];
              load_vec<VEC>(src + static_cast<int64_t>(c) * dim + e, v);
#pragma unroll
              for (int i = 0; i < VEC; ++i) g[k][i] += v[i];
            }
          }
        }
      }
    }

    // Row-wise Adagrad's accumulator grows by the mean of g^2 over the row.
    float row_multiplier = 0.0f;
    if constexpr (OPT == SparseOptimizerKind::rowwise_adagrad) {
      float sq = 0.0f;
#pragma unroll
      for (int k = 0; k < UNITS; ++k)
#pragma unroll
        for (int i = 0; i < VEC; ++i) sq += mul(g[k][i], g[k][i]);
      sq = gpu::group_sum(sq, lanes);  // every lane of the warp takes part
      // Lane 0 alone reads and writes the accumulator; the others get its value by
      // shuffle (lanes of a group are not guaranteed to run in lock step).
      float* acc = nullptr;
      if (active)
        acc = table_accumulators ? table_accumulators[table] + (static_cast<int64_t>(key) - row_offsets[table])
                                 : accumulators + key;
      float old = active && lane == 0 ? *acc : 0.0f;
      old = gpu::shfl(old, 0, lanes);
      if (active) {
        const float a = old + sq / static_cast<float>(dim);
        row_multiplier = lr / (sqrtf(a) + eps);
        if (lane == 0) *acc = a;
      }
    }
    if (!active) continue;

    const int64_t local_row = static_cast<int64_t>(key) - row_offsets[table];
    uint64_t rounding_key = 0;
    if constexpr (sizeof(Row) != sizeof(float)) {
      if (shard_origins) {
        // A shard draws as its block of the full table does (nn/embedding_collection.cpp).
        const ShardOrigin origin = shard_origins[table];
        rounding_key = sparse_rounding_row_key(seed, step, origin.table, local_row + origin.row_offset) +
                       static_cast<uint64_t>(origin.col_offset / 2);
      } else {
        rounding_key = sparse_rounding_row_key(seed, step, table, local_row);
      }
    }
    Row* w_row = table_weights ? static_cast<Row*>(table_weights[table]) + local_row * dim
                               : weights + static_cast<int64_t>(key) * dim;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e >= dim) continue;
      float w[VEC];
      load_vec<VEC>(w_row + e, w);
      if constexpr (OPT == SparseOptimizerKind::sgd) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = w[i] - mul(lr, g[k][i]);
      } else if constexpr (OPT == SparseOptimizerKind::adagrad) {
        float a[VEC];
        float* a_ptr = (table_accumulators ? table_accumulators[table] + local_row * dim
                                           : accumulators + static_cast<int64_t>(key) * dim) + e;
        load_vec<VEC>(a_ptr, a);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          a[i] = a[i] + mul(g[k][i], g[k][i]);
          w[i] = w[i] - mul(lr, g[k][i]) / (sqrtf(a[i]) + eps);
        }
        store_vec<VEC>(a_ptr, a);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = w[i] - mul(row_multiplier, g[k][i]);
      }
      if constexpr (sizeof(Row) == sizeof(float)) {
        store_vec<VEC>(w_row + e, w);
      } else {
        Row out[VEC];
#pragma unroll
        for (int i = 0; i < VEC; ++i)
          out[i] = from_float_sr<Row>(w[i], sparse_rounding_bits(rounding_key, e + i));
        store_raw_vec<VEC>(w_row + e, out);
      }
    }
  }
}

struct UpdateArgs {
  const EmbeddingTables* tables;
  const DeviceBags* bags;
  const float* grad;
  int64_t grad_stride;
  const SparseOptimizerParams* opt;
  const uint32_t* sorted_keys;
  const uint32_t* sorted_bags;
  const uint32_t* segment_start;
  const uint32_t* num_unique;
  const uint32_t* chunks;       // per unique row: chunk count (0: short row)
  const uint32_t* chunk_start;  // per unique row: first chunk
  const uint32_t* num_chunks;
  const uint32_t* owner;        // per chunk: its unique row
  float* partial;               // per chunk: dim floats
  int64_t max_chunks;
  gpu::stream_t stream;
};

// Blocks of a persistent grid over `items` work items of `lanes` threads each.
unsigned persistent_blocks(int64_t items, int lanes) {
  const int64_t cap = static_cast<int64_t>(gpu::multiprocessor_count(gpu::current_device())) * kUpdateBlocksPerSm;
  const int64_t wanted = ceil_div<int64_t>(items > 0 ? items : 1, kBlockThreads / lanes);
  return static_cast<unsigned>(wanted < cap ? wanted : cap);
}

template <class Row, int VEC, int UNITS, SparseOptimizerKind OPT>
void launch_update(const UpdateArgs& a, int lanes) {
  const int dim = a.tables->dim;
  chunk_partial_kernel<VEC, UNITS><<<persistent_blocks(a.max_chunks, lanes), kBlockThreads, 0, a.stream>>>(
      a.owner, a.chunk_start, a.num_chunks, a.segment_start, a.sorted_bags, a.bags->offsets, a.tables->mean_pooling,
      a.grad, a.grad_stride, a.bags->batch, dim, lanes, a.opt->scalars, a.partial);
  HETREC_GPU_CHECK_LAUNCH("chunk_partial_kernel");
  sparse_update_kernel<Row, VEC, UNITS, OPT><<<persistent_blocks(a.bags->max_ids, lanes), kBlockThreads, 0, a.stream>>>(
      static_cast<Row*>(a.tables->weights), a.opt->accumulators, a.tables->table_weights, a.opt->table_accumulators,
      a.sorted_keys, a.sorted_bags, a.segment_start,
      a.num_unique, a.chunks, a.chunk_start, a.partial, a.bags->offsets, a.tables->row_offsets, a.tables->mean_pooling,
      a.grad, a.grad_stride, a.bags->batch, dim, lanes, a.tables->total_rows, a.opt->scalars, a.opt->eps, a.opt->seed,
      a.opt->shard_origins);
  HETREC_GPU_CHECK_LAUNCH("sparse_update_kernel");
}

template <class Row, int VEC, int UNITS>
void dispatch_optimizer(const UpdateArgs& a, int lanes) {
  switch (a.opt->kind) {
    case SparseOptimizerKind::sgd: return launch_update<Row, VEC, UNITS, SparseOptimizerKind::sgd>(a, lanes);
    case SparseOptimizerKind::adagrad: return launch_update<Row, VEC, UNITS, SparseOptimizerKind::adagrad>(a, lanes);
    case SparseOptimizerKind::rowwise_adagrad:
      return launch_update<Row, VEC, UNITS, SparseOptimizerKind::rowwise_adagrad>(a, lanes);
  }
}

template <class Row, int VEC>
void dispatch_units(const UpdateArgs& a, const LaneLayout& layout) {
  switch (layout.units) {
    case 1: return dispatch_optimizer<Row, VEC, 1>(a, layout.lanes);
    case 2: return dispatch_optimizer<Row, VEC, 2>(a, layout.lanes);
    case 4: return dispatch_optimizer<Row, VEC, 4>(a, layout.lanes);
    case 8: return dispatch_optimizer<Row, VEC, 8>(a, layout.lanes);
    default: throw InternalError("embedding_bag_backward_update: unsupported units per lane");
  }
}

template <class Row>
void dispatch_vec(const UpdateArgs& a) {
  constexpr int kWideVec = 16 / sizeof(Row);
  const int dim = a.tables->dim;
  const bool wide = vector_path_ok(dim, kWideVec, a.tables->weights, sizeof(Row)) &&
                    vector_path_ok(dim, kWideVec, a.grad, sizeof(float)) && a.grad_stride % kWideVec == 0 &&
                    vector_path_ok(dim, kWideVec, a.partial, sizeof(float)) &&
                    (a.opt->kind != SparseOptimizerKind::adagrad ||
                     vector_path_ok(dim, kWideVec, a.opt->accumulators, sizeof(float)));
  if (wide) return dispatch_units<Row, kWideVec>(a, lane_layout(dim, kWideVec));
  return dispatch_units<Row, 1>(a, lane_layout(dim, 1));
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

// Chunks of long rows: each holds kLongSegment occurrences but its row's last, and only
// rows longer than kLongSegment have chunks, so there are fewer than 2 n / kLongSegment.
int64_t max_chunks_for(int64_t capacity) { return 2 * ceil_div<int64_t>(capacity, kLongSegment) + 1; }

std::size_t scratch_bytes_for(int64_t capacity) {
  const std::size_t sort = radix_sort_workspace_bytes(capacity);
  const std::size_t scan = exclusive_scan_workspace_bytes(capacity);
  return sort > scan ? sort : scan;
}

Workspace carve(void* base, int64_t capacity, int dim) {
  char* p = static_cast<char*>(base);
  const std::size_t array = aligned(static_cast<std::size_t>(capacity) * sizeof(uint32_t));
  Workspace w{};
  w.sort.keys = reinterpret_cast<uint32_t*>(p);
  w.sort.values = reinterpret_cast<uint32_t*>(p + array);
  w.sort.keys_alt = reinterpret_cast<uint32_t*>(p + 2 * array);
  w.sort.values_alt = reinterpret_cast<uint32_t*>(p + 3 * array);
  p += 4 * array;
  w.segment_start = reinterpret_cast<uint32_t*>(p);
  p += aligned(static_cast<std::size_t>(capacity + 1) * sizeof(uint32_t));
  w.num_unique = reinterpret_cast<uint32_t*>(p);
  w.num_chunks = w.num_unique + 1;
  p += kAlign;
  w.max_chunks = max_chunks_for(capacity);
  w.owner = reinterpret_cast<uint32_t*>(p);
  p += aligned(static_cast<std::size_t>(w.max_chunks) * sizeof(uint32_t));
  w.partial = reinterpret_cast<float*>(p);
  p += aligned(static_cast<std::size_t>(w.max_chunks) * static_cast<std::size_t>(dim) * sizeof(float));
  w.scratch = p;
  w.scratch_bytes = scratch_bytes_for(capacity);
  return w;
}

}  // namespace

std::size_t embedding_backward_workspace_bytes(int64_t max_ids, int dim) {
  const int64_t capacity = max_ids > 0 ? max_ids : 1;
  const std::size_t array = aligned(static_cast<std::size_t>(capacity) * sizeof(uint32_t));
  const auto chunks = static_cast<std::size_t>(max_chunks_for(capacity));
  return 4 * array + aligned(static_cast<std::size_t>(capacity + 1) * sizeof(uint32_t)) + kAlign +
         aligned(chunks * sizeof(uint32_t)) + aligned(chunks * static_cast<std::size_t>(dim) * sizeof(float)) +
         scratch_bytes_for(capacity);
}

void embedding_bag_backward_update(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                                   int64_t grad_row_stride, const SparseOptimizerParams& optimizer, void* workspace,
                                   std::size_t workspace_bytes, gpu::stream_t stream) {
  check_tables(tables, "embedding_bag_backward_update");
  if (bags.batch == 0 || tables.num_tables == 0 || bags.max_ids == 0) return;
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

  const int key_bits = std::bit_width(static_cast<uint64_t>(tables.total_rows));
  const bool in_primary = radix_sort_pairs(w.sort, num_items, capacity, key_bits, w.scratch, w.scratch_bytes, stream);
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
  count_chunks_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(w.segment_start, w.num_unique,
                                                                                      capacity, chunks);
  HETREC_GPU_CHECK_LAUNCH("count_chunks_kernel");
  exclusive_scan(chunks, chunk_start, capacity, w.num_chunks, w.scratch, w.scratch_bytes, stream);
  chunk_owner_kernel<<<grid_for(capacity, kBlockThreads), kBlockThreads, 0, stream>>>(chunks, chunk_start, w.num_unique,
                                                                                     capacity, w.owner);
  HETREC_GPU_CHECK_LAUNCH("chunk_owner_kernel");

  const UpdateArgs args{&tables,       &bags,           grad_pooled, grad_row_stride, &optimizer,
                        sorted_keys,   sorted_bags,     w.segment_start, w.num_unique, chunks,
                        chunk_start,   w.num_chunks,    w.owner,     w.partial,       w.max_chunks,
                        stream};
  switch (tables.row_dtype) {
    case DType::f32: return dispatch_vec<float>(args);
    case DType::f16: return dispatch_vec<F16Bits>(args);
    case DType::bf16: return dispatch_vec<Bf16Bits>(args);
    default: break;
  }
  throw InternalError("embedding_bag_backward_update: rows must be fp32, fp16 or bf16");
}

}  // namespace hetrec::kernels

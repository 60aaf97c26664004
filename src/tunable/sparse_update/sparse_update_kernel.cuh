#pragma once
// The embedding backward's fused sparse update (one group of lanes sums a unique row's
// gradient over its occurrences and applies the optimizer to that row once), on its own
// so that one source serves two compilers: nvcc builds the default instantiation into
// the engine (kernels/embedding_bag_backward.cu), and NVRTC compiles any other at run
// time (tunable/sparse_update/sparse_update_tuned.h: the tuner's candidates and the tuned winner the
// engine loads). Every tunable knob is a template argument:
//   Row                row element type (float, F16Bits, Bf16Bits)
//   VEC                elements per vector access of a row
//   UNITS              vectors per lane (1, 2, 4, 8); lanes x UNITS x VEC covers the row
//   OPT                the sparse optimizer
//   GRADS_IN_FLIGHT    occurrence gradients requested before the first is added
//   BLOCK_THREADS      threads per block (also the launch bound)
//   MIN_BLOCKS_PER_SM  resident blocks per multiprocessor the compiler must allow (the
//                      register cap: 65536 / (BLOCK_THREADS x MIN_BLOCKS_PER_SM))
//   Grad               element type of the pooled gradient (float; Bf16Bits: a bf16
//                      embedding exchange's arrived gradients, widened as they load)
// The lane count per row (a power of two up to the warp width) is an argument.
#include <cstdint>

#include "gpu/fp_ops.h"
#include "gpu/warp.h"
#include "kernels/row_vector.cuh"
#include "kernels/sparse_rounding.h"
#include "tunable/sparse_update/sparse_update_types.h"
#include "kernels/step_scalars.h"

namespace hetrec::kernels {

// Marks ids that failed validation: sorts after every real row and is skipped.
inline constexpr uint32_t kSparseUpdateInvalidKey = 0xFFFFFFFFu;

// The table of bag t * B + b (bags are numbered below 2^32, so a 32-bit division).
__device__ inline int sparse_table_of_bag(uint32_t bag, int64_t batch) {
  return static_cast<int>(bag / static_cast<uint32_t>(batch));
}

// a * b rounded once, never fused into a following add: keeps the update rules' rounding
// identical to a plain host evaluation of the same expressions.
__device__ inline float sparse_mul(float a, float b) { return gpu::mul_rn(a, b); }

template <int VEC, int UNITS>
__device__ inline void sparse_zero(float (&g)[UNITS][VEC]) {
#pragma unroll
  for (int k = 0; k < UNITS; ++k)
#pragma unroll
    for (int i = 0; i < VEC; ++i) g[k][i] = 0.0f;
}

// The bag indices of the N occurrences from p on (those at or past end read as 0): one
// batch of independent loads.
template <int N>
__device__ inline void sparse_load_bags(uint32_t (&bags)[N], uint32_t p, uint32_t end,
                                        const uint32_t* __restrict__ sorted_bags) {
#pragma unroll
  for (int q = 0; q < N; ++q) bags[q] = p + q < end ? sorted_bags[p + q] : 0u;
}

// Adds to g this lane's share of the gradients of the first `count` (at most N) of the
// occurrences whose bags are `bags`, loading them all before adding any (N loads in
// flight), in order; mean-pooled tables scale each by 1 / its bag length, as the forward
// did.
template <int N, int VEC, int UNITS, class Grad>
__device__ inline void sparse_add_batch(float (&g)[UNITS][VEC], const uint32_t (&bags)[N], uint32_t count, int lane,
                                        int lanes, const int32_t* __restrict__ offsets, int64_t first_bag, bool mean,
                                        const Grad* __restrict__ table_grad, int64_t grad_stride, int dim) {
  float v[N][UNITS][VEC];
  float inv_len[N];
#pragma unroll
  for (int q = 0; q < N; ++q) {
    const bool valid = static_cast<uint32_t>(q) < count;
    const int64_t bag = static_cast<int64_t>(bags[q]);
    inv_len[q] = valid && mean ? 1.0f / static_cast<float>(offsets[bag + 1] - offsets[bag]) : 1.0f;
    const Grad* src = table_grad + (bag - first_bag) * grad_stride;
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (valid && e < dim) {
        load_vec<VEC>(src + e, v[q][k]);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) v[q][k][i] = 0.0f;
      }
    }
  }
#pragma unroll
  for (int q = 0; q < N; ++q) {
    if (static_cast<uint32_t>(q) < count) {
#pragma unroll
      for (int k = 0; k < UNITS; ++k)
#pragma unroll
        for (int i = 0; i < VEC; ++i) g[k][i] += mean ? sparse_mul(v[q][k][i], inv_len[q]) : v[q][k][i];
    }
  }
}

// Adds to g this lane's share of the pooled gradients of sorted occurrences
// [begin, end), in order, GRADS_IN_FLIGHT at a time; `bags` holds the first batch's bag
// indices (sparse_load_bags, requested with the row's key), so a row of at most
// GRADS_IN_FLIGHT occurrences (most rows of a skewed batch) costs one round trip to memory
// here. Every occurrence of one row lies in the same table, so the table (and its pooling)
// is worked out once per row by the caller, and an occurrence's sample is its bag less the
// table's first bag: no division per occurrence.
template <int GRADS_IN_FLIGHT, int VEC, int UNITS, class Grad>
__device__ inline void sparse_add_occurrences(float (&g)[UNITS][VEC], uint32_t (&bags)[GRADS_IN_FLIGHT],
                                              uint32_t begin, uint32_t end, int lane, int lanes,
                                              const uint32_t* __restrict__ sorted_bags,
                                              const int32_t* __restrict__ offsets, int table, bool mean,
                                              const Grad* __restrict__ grad, int64_t grad_stride, int64_t batch,
                                              int dim) {
  const int64_t first_bag = static_cast<int64_t>(table) * batch;
  const Grad* table_grad = grad + static_cast<int64_t>(table) * dim;
  for (uint32_t p = begin; p < end; p += GRADS_IN_FLIGHT) {
    if (p != begin) sparse_load_bags(bags, p, end, sorted_bags);
    const uint32_t count = end - p < GRADS_IN_FLIGHT ? end - p : GRADS_IN_FLIGHT;
    sparse_add_batch<GRADS_IN_FLIGHT>(g, bags, count, lane, lanes, offsets, first_bag, mean, table_grad, grad_stride,
                                      dim);
  }
}

// One group of `lanes` threads per unique row, persistent over the rows (the row count
// lives on the device). All lanes of a warp run the same number of iterations, so the
// group reductions below see every lane. Long rows (chunks[u] > 0) add their chunk sums
// (partial), computed before in chunk order.
template <class Row, int VEC, int UNITS, SparseOptimizerKind OPT, int GRADS_IN_FLIGHT, int BLOCK_THREADS,
          int MIN_BLOCKS_PER_SM, class Grad = float>
__global__ void __launch_bounds__(BLOCK_THREADS, MIN_BLOCKS_PER_SM)
    sparse_update_kernel(Row* __restrict__ weights, float* __restrict__ accumulators, void* const* table_weights,
                         float* const* table_accumulators,
                         const uint32_t* __restrict__ sorted_keys, const uint32_t* __restrict__ sorted_bags,
                         const uint32_t* __restrict__ segment_start, const uint32_t* __restrict__ num_unique,
                         const uint32_t* __restrict__ chunks, const uint32_t* __restrict__ chunk_start,
                         const float* __restrict__ partial, const int32_t* __restrict__ offsets,
                         const int64_t* __restrict__ row_offsets, const uint8_t* __restrict__ mean_pooling,
                         const Grad* __restrict__ grad, int64_t grad_stride, int64_t batch, int dim, int lanes,
                         int64_t total_rows, const StepScalars* __restrict__ scalars, float eps, uint64_t seed,
                         const ShardOrigin* __restrict__ shard_origins, int cached_table_keys) {
  if (scalars->skip_update) return;  // uniform over the grid
  const float lr = scalars->sparse_lr;
  const int64_t step = scalars->step;
  // 16-bit rows: the stochastic rounding keys of the first cached_table_keys tables, made
  // once per block rather than once per row (the rest are made per row).
  extern __shared__ uint64_t table_keys[];
  if constexpr (sizeof(Row) != sizeof(float)) {
    for (int t = static_cast<int>(threadIdx.x); t < cached_table_keys; t += BLOCK_THREADS)
      table_keys[t] = sparse_rounding_table_key(seed, step, shard_origins ? shard_origins[t].table : t);
    __syncthreads();
  }
  const int groups_per_warp = gpu::kWarpSize / lanes;
  const int lane = gpu::lane_id() % lanes;
  const int group = gpu::lane_id() / lanes;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * BLOCK_THREADS + threadIdx.x) / gpu::kWarpSize;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * BLOCK_THREADS / gpu::kWarpSize;
  const int64_t unique = *num_unique;

  // The loads of one row wait on each other only where they must: its segment bounds come
  // one iteration ahead; the key, the long-row counts and the first batch's bag indices
  // need only the bounds; the row's weights and optimizer state, and its gradients, need
  // only those, so they all go out together, and the stores follow.
  const int64_t stride = warps * groups_per_warp;
  int64_t u = warp * groups_per_warp + group;
  uint32_t begin = 0, end = 0;
  if (u < unique) {
    begin = segment_start[u];
    end = segment_start[u + 1];
  }
  for (int64_t first = warp * groups_per_warp; first < unique; first += stride, u += stride) {
    bool active = u < unique;
    const uint32_t row_begin = begin, row_end = end;
    if (u + stride < unique) {
      begin = segment_start[u + stride];
      end = segment_start[u + stride + 1];
    }
    uint32_t key = kSparseUpdateInvalidKey;
    uint32_t n_chunks = 0;
    uint32_t bags[GRADS_IN_FLIGHT];
    if (active) {
      key = sorted_keys[row_begin];
      n_chunks = chunks[u];
      sparse_load_bags(bags, row_begin, row_end, sorted_bags);
    }
    if (key >= total_rows) active = false;

    const int table = active ? sparse_table_of_bag(bags[0], batch) : 0;
    const int64_t local_row = active ? static_cast<int64_t>(key) - row_offsets[table] : 0;
    float* acc = nullptr;  // row-wise Adagrad's accumulator
    float old = 0.0f;
    Row* w_row = nullptr;
    Row w_raw[UNITS][VEC];  // as stored: half the registers for 16-bit rows
    if (active) {
      if constexpr (OPT == SparseOptimizerKind::rowwise_adagrad) {
        acc = table_accumulators ? table_accumulators[table] + local_row : accumulators + key;
        if (lane == 0) old = *acc;  // lane 0 alone reads and writes it
      }
      w_row = table_weights ? static_cast<Row*>(table_weights[table]) + local_row * dim
                            : weights + static_cast<int64_t>(key) * dim;
#pragma unroll
      for (int k = 0; k < UNITS; ++k) {
        const int e = (lane + k * lanes) * VEC;
        if (e < dim) load_raw_vec<VEC>(w_row + e, w_raw[k]);
      }
    }

    float g[UNITS][VEC];
    sparse_zero(g);
    if (active) {
      if (n_chunks == 0) {
        sparse_add_occurrences<GRADS_IN_FLIGHT>(g, bags, row_begin, row_end, lane, lanes, sorted_bags, offsets, table,
                                                mean_pooling[table] != 0, grad, grad_stride, batch, dim);
      } else {
        // A long row: its chunk sums, in chunk order.
        const float* src = partial + static_cast<int64_t>(chunk_start[u]) * dim;
#pragma unroll 4
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
        for (int i = 0; i < VEC; ++i) sq += sparse_mul(g[k][i], g[k][i]);
      sq = gpu::group_sum(sq, lanes);  // every lane of the warp takes part
      // The others get lane 0's value by shuffle (lanes of a group are not guaranteed to
      // run in lock step).
      old = gpu::shfl(old, 0, lanes);
      if (active) {
        const float a = old + sq / static_cast<float>(dim);
        row_multiplier = lr / (sqrtf(a) + eps);
        if (lane == 0) *acc = a;
      }
    }
    if (!active) continue;

    uint64_t rounding_key = 0;
    if constexpr (sizeof(Row) != sizeof(float)) {
      const uint64_t table_key =
          table < cached_table_keys
              ? table_keys[table]
              : sparse_rounding_table_key(seed, step, shard_origins ? shard_origins[table].table : table);
      if (shard_origins) {
        // A shard draws as its block of the full table does (nn/embedding_collection.cpp).
        const ShardOrigin origin = shard_origins[table];
        rounding_key = sparse_rounding_row_key_of(table_key, local_row + origin.row_offset) +
                       static_cast<uint64_t>(origin.col_offset / 2);
      } else {
        rounding_key = sparse_rounding_row_key_of(table_key, local_row);
      }
    }
#pragma unroll
    for (int k = 0; k < UNITS; ++k) {
      const int e = (lane + k * lanes) * VEC;
      if (e >= dim) continue;
      float w[VEC];
#pragma unroll
      for (int i = 0; i < VEC; ++i) w[i] = to_float(w_raw[k][i]);
      if constexpr (OPT == SparseOptimizerKind::sgd) {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = w[i] - sparse_mul(lr, g[k][i]);
      } else if constexpr (OPT == SparseOptimizerKind::adagrad) {
        float a[VEC];
        float* a_ptr = (table_accumulators ? table_accumulators[table] + local_row * dim
                                           : accumulators + static_cast<int64_t>(key) * dim) + e;
        load_vec<VEC>(a_ptr, a);
#pragma unroll
        for (int i = 0; i < VEC; ++i) {
          a[i] = a[i] + sparse_mul(g[k][i], g[k][i]);
          w[i] = w[i] - sparse_mul(lr, g[k][i]) / (sqrtf(a[i]) + eps);
        }
        store_vec<VEC>(a_ptr, a);
      } else {
#pragma unroll
        for (int i = 0; i < VEC; ++i) w[i] = w[i] - sparse_mul(row_multiplier, g[k][i]);
      }
      if constexpr (sizeof(Row) == sizeof(float)) {
        store_vec<VEC>(w_row + e, w);
      } else {
        Row out[VEC];
        if constexpr (VEC % 2 == 0) {
          // e is even: elements e + i and e + i + 1 share one draw.
#pragma unroll
          for (int i = 0; i < VEC; i += 2) {
            const uint64_t draw = sparse_rounding_pair_draw(rounding_key, (e + i) / 2);
            out[i] = from_float_sr<Row>(w[i], static_cast<uint32_t>(draw >> 32));
            out[i + 1] = from_float_sr<Row>(w[i + 1], static_cast<uint32_t>(draw));
          }
        } else {
#pragma unroll
          for (int i = 0; i < VEC; ++i)
            out[i] = from_float_sr<Row>(w[i], sparse_rounding_bits(rounding_key, e + i));
        }
        store_raw_vec<VEC>(w_row + e, out);
      }
    }
  }
}

}  // namespace hetrec::kernels

#include "tunable/embedding_forward/embedding_bag_forward.h"

#include <string>

#include "core/error.h"
#include "gpu/check.h"
#include "tunable/embedding_forward/embedding_bag_forward_kernel.cuh"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"

namespace hetrec::kernels {

namespace {

// The built-in variant (kDefaultForwardVariant): 256 threads per block, four ids in
// flight per lane (four independent 16-byte loads hide most of the HBM latency).
constexpr int kBlockThreads = kDefaultForwardVariant.block_threads;
constexpr int kIdsInFlight = kDefaultForwardVariant.ids_in_flight;

template <class Row, class Out, int VEC, int UNITS>
void launch_forward(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int lanes,
                    int32_t* bad_ids, gpu::stream_t stream) {
  const int64_t threads = bags.batch * tables.num_tables * lanes;
  const unsigned grid = grid_for(threads, kBlockThreads);
  embedding_bag_forward_kernel<Row, Out, VEC, UNITS, kIdsInFlight, kBlockThreads><<<grid, kBlockThreads, 0, stream>>>(
      static_cast<const Row*>(tables.weights), tables.table_weights, tables.row_offsets, tables.mean_pooling, bags.offsets, bags.ids,
      bags.batch, tables.num_tables, tables.dim, lanes, static_cast<Out*>(out.data), out.row_stride, bad_ids);
  HETREC_GPU_CHECK_LAUNCH("embedding_bag_forward_kernel");
}

template <class Row, class Out, int VEC>
void dispatch_units(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out,
                    const LaneLayout& layout, int32_t* bad_ids, gpu::stream_t stream) {
  switch (layout.units) {
    case 1: return launch_forward<Row, Out, VEC, 1>(tables, bags, out, layout.lanes, bad_ids, stream);
    case 2: return launch_forward<Row, Out, VEC, 2>(tables, bags, out, layout.lanes, bad_ids, stream);
    case 4: return launch_forward<Row, Out, VEC, 4>(tables, bags, out, layout.lanes, bad_ids, stream);
    case 8: return launch_forward<Row, Out, VEC, 8>(tables, bags, out, layout.lanes, bad_ids, stream);
    default: throw InternalError("embedding_bag_forward: unsupported units per lane " + std::to_string(layout.units));
  }
}

template <class Row, class Out>
void dispatch_vec(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int32_t* bad_ids,
                  gpu::stream_t stream) {
  constexpr int kWideVec = 16 / sizeof(Row);  // elements per 16-byte load
  const bool wide = vector_path_ok(tables.dim, kWideVec, tables.weights, sizeof(Row)) &&
                    vector_path_ok(tables.dim, kWideVec, out.data, sizeof(Out)) &&
                    out.row_stride % kWideVec == 0;
  if (wide) return dispatch_units<Row, Out, kWideVec>(tables, bags, out, lane_layout(tables.dim, kWideVec), bad_ids, stream);
  return dispatch_units<Row, Out, 1>(tables, bags, out, lane_layout(tables.dim, 1), bad_ids, stream);
}

template <class Row>
void dispatch_out(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out, int32_t* bad_ids,
                  gpu::stream_t stream) {
  switch (out.dtype) {
    case DType::f32: return dispatch_vec<Row, float>(tables, bags, out, bad_ids, stream);
    case DType::bf16: return dispatch_vec<Row, Bf16Bits>(tables, bags, out, bad_ids, stream);
    default:
      throw InternalError("embedding_bag_forward: pooled output must be fp32 or bf16, got " +
                          std::string(dtype_name(out.dtype)));
  }
}

}  // namespace

void embedding_bag_forward(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out,
                           int32_t* bad_ids, gpu::stream_t stream, const TunedEmbeddingForward* tuned) {
  if (tuned) return tuned->launch(tables, bags, out, bad_ids, stream);
  check_tables(tables, "embedding_bag_forward");
  if (bags.batch == 0 || tables.num_tables == 0) return;
  switch (tables.row_dtype) {
    case DType::f32: return dispatch_out<float>(tables, bags, out, bad_ids, stream);
    case DType::f16: return dispatch_out<F16Bits>(tables, bags, out, bad_ids, stream);
    case DType::bf16: return dispatch_out<Bf16Bits>(tables, bags, out, bad_ids, stream);
    default: break;
  }
  throw InternalError("embedding_bag_forward: rows must be fp32, fp16 or bf16");
}

}  // namespace hetrec::kernels

#include "tunable/sparse_update/sparse_update_tuned.h"

#include "core/error.h"
#include "gpu/device.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"
#include "kernels/rtc_sources.h"

namespace hetrec::kernels {

namespace {

const char* optimizer_enumerator(SparseOptimizerKind k) {
  switch (k) {
    case SparseOptimizerKind::sgd: return "hetrec::kernels::SparseOptimizerKind::sgd";
    case SparseOptimizerKind::adagrad: return "hetrec::kernels::SparseOptimizerKind::adagrad";
    case SparseOptimizerKind::rowwise_adagrad: return "hetrec::kernels::SparseOptimizerKind::rowwise_adagrad";
  }
  return nullptr;
}

gpu::RtcBinary compile_or_throw(const SparseUpdateShape& s, const SparseUpdateVariant& v, int major, int minor,
                                const std::string& kernel_header) {
  gpu::RtcBinary b = gpu::rtc_compile(sparse_update_program(s, v, kernel_header), major, minor);
  if (!b.ok) throw DeviceError("sparse update variant for " + s.key() + " does not compile:\n" + b.log);
  return b;
}

}  // namespace

gpu::RtcProgram sparse_update_program(const SparseUpdateShape& s, const SparseUpdateVariant& v,
                                      const std::string& kernel_header) {
  const SparseUpdateLayout l = sparse_update_layout(s, v, gpu::kWarpSize);
  gpu::RtcProgram p;
  p.name = "sparse_update_tuned.cu";
  p.source = "#include \"tunable/sparse_update/sparse_update_kernel.cuh\"\n";
  p.name_expression = "hetrec::kernels::sparse_update_kernel<" + std::string(rtc_element_type(s.row_dtype)) + ", " +
                      std::to_string(l.vec) + ", " + std::to_string(l.units) + ", " + optimizer_enumerator(s.optimizer) +
                      ", " + std::to_string(v.grads_in_flight) + ", " + std::to_string(v.block_threads) + ", " +
                      std::to_string(v.min_blocks_per_sm) +
                      // The kernel's Grad defaults to float: named only when it is not,
                      // so that rewritten headers of fp32 winners keep compiling.
                      (s.grad_dtype == DType::f32 ? std::string() : ", " + std::string(rtc_element_type(s.grad_dtype))) +
                      ">";
  p.headers = rtc_source_files();
  if (!kernel_header.empty())
    for (gpu::RtcHeader& h : p.headers)
      if (h.name == "tunable/sparse_update/sparse_update_kernel.cuh") h.text = kernel_header;
  return p;
}

TunedSparseUpdate::TunedSparseUpdate(const SparseUpdateShape& shape, const SparseUpdateVariant& variant,
                                     int compute_major, int compute_minor, const std::string& kernel_header)
    : TunedSparseUpdate(shape, variant, compile_or_throw(shape, variant, compute_major, compute_minor, kernel_header)) {}

TunedSparseUpdate::TunedSparseUpdate(const SparseUpdateShape& shape, const SparseUpdateVariant& variant,
                                     const gpu::RtcBinary& binary)
    : shape_(shape), variant_(variant), layout_(sparse_update_layout(shape, variant, gpu::kWarpSize)), kernel_(binary) {}

std::size_t TunedSparseUpdate::dynamic_shared_bytes(int num_tables) const {
  return static_cast<std::size_t>(sparse_update_cached_table_keys(shape_.row_dtype, num_tables)) * sizeof(uint64_t);
}

void TunedSparseUpdate::launch(const EmbeddingTables& tables, const DeviceBags& bags, const float* grad_pooled,
                               int64_t grad_row_stride, const SparseOptimizerParams& optimizer,
                               const SparseUpdatePlan& plan, gpu::stream_t stream) const {
  launch(tables, bags, PooledGradView{grad_pooled, grad_row_stride, DType::f32}, optimizer, plan, stream);
}

void TunedSparseUpdate::launch(const EmbeddingTables& tables, const DeviceBags& bags, const PooledGradView& grad_view,
                               const SparseOptimizerParams& optimizer, const SparseUpdatePlan& plan,
                               gpu::stream_t stream) const {
  check_tables(tables, "tuned sparse update");
  if (tables.row_dtype != shape_.row_dtype || tables.dim != shape_.dim || optimizer.kind != shape_.optimizer ||
      grad_view.dtype != shape_.grad_dtype)
    throw InternalError("tuned sparse update compiled for " + shape_.key() + ", called with rows=" +
                        std::string(dtype_name(tables.row_dtype)) + " dim=" + std::to_string(tables.dim) +
                        " opt=" + sparse_optimizer_name(optimizer.kind) +
                        " grad=" + std::string(dtype_name(grad_view.dtype)));
  const int vec = layout_.vec;
  if (!vector_path_ok(tables.dim, vec, tables.weights, dtype_size(tables.row_dtype)) ||
      !vector_path_ok(tables.dim, vec, grad_view.data, dtype_size(grad_view.dtype)) ||
      grad_view.row_stride % vec != 0 ||
      !vector_path_ok(tables.dim, vec, plan.partial, sizeof(float)) ||
      (optimizer.kind == SparseOptimizerKind::adagrad &&
       !vector_path_ok(tables.dim, vec, optimizer.accumulators, sizeof(float))))
    throw InternalError("tuned sparse update: rows, gradients or state not aligned for " + std::to_string(vec) +
                        "-element vectors");
  if (plan.max_rows == 0) return;
  void* weights = tables.weights;
  float* accumulators = optimizer.accumulators;
  void* const* table_weights = tables.table_weights;
  float* const* table_accumulators = optimizer.table_accumulators;
  const uint32_t* sorted_keys = plan.sorted_keys;
  const uint32_t* sorted_bags = plan.sorted_bags;
  const uint32_t* segment_start = plan.segment_start;
  const uint32_t* num_unique = plan.num_unique;
  const uint32_t* chunks = plan.chunks;
  const uint32_t* chunk_start = plan.chunk_start;
  const float* partial = plan.partial;
  const int32_t* offsets = bags.offsets;
  const int64_t* row_offsets = tables.row_offsets;
  const uint8_t* mean_pooling = tables.mean_pooling;
  const void* grad = grad_view.data;
  int64_t grad_stride = grad_view.row_stride;
  int64_t batch = bags.batch;
  int dim = tables.dim;
  int lanes = layout_.lanes;
  int64_t total_rows = tables.total_rows;
  const StepScalars* scalars = optimizer.scalars;
  float eps = optimizer.eps;
  uint64_t seed = optimizer.seed;
  const ShardOrigin* shard_origins = optimizer.shard_origins;
  int cached_keys = sparse_update_cached_table_keys(tables.row_dtype, tables.num_tables);
  void* args[] = {&weights,   &accumulators, &table_weights, &table_accumulators, &sorted_keys, &sorted_bags,
                  &segment_start, &num_unique, &chunks,     &chunk_start,        &partial,     &offsets,
                  &row_offsets, &mean_pooling, &grad,        &grad_stride,        &batch,       &dim,
                  &lanes,      &total_rows,   &scalars,      &eps,                &seed,        &shard_origins,
                  &cached_keys};
  // A persistent grid, as the built-in update launches (kernels/embedding_bag_backward.cu).
  const std::size_t shared_bytes = dynamic_shared_bytes(tables.num_tables);
  const int64_t cap = static_cast<int64_t>(gpu::multiprocessor_count(gpu::current_device())) *
                      kernel_.resident_blocks(variant_.block_threads, shared_bytes);
  const int64_t wanted = ceil_div<int64_t>(plan.max_rows, variant_.block_threads / lanes);
  const unsigned grid = static_cast<unsigned>(wanted < cap ? wanted : cap > 0 ? cap : 1);
  kernel_.launch(grid, static_cast<unsigned>(variant_.block_threads), shared_bytes, stream, args);
}

}  // namespace hetrec::kernels

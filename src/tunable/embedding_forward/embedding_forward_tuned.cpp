#include "tunable/embedding_forward/embedding_forward_tuned.h"

#include "core/error.h"
#include "kernels/embedding_lanes.h"
#include "kernels/launch.h"
#include "kernels/rtc_sources.h"

namespace hetrec::kernels {

gpu::RtcProgram embedding_forward_program(const EmbeddingForwardShape& s, const EmbeddingForwardVariant& v,
                                          const std::string& kernel_header) {
  const ForwardLaunchLayout l = forward_launch_layout(s, v, gpu::kWarpSize);
  gpu::RtcProgram p;
  p.name = "embedding_bag_forward_tuned.cu";
  p.source = "#include \"tunable/embedding_forward/embedding_bag_forward_kernel.cuh\"\n";
  p.name_expression = "hetrec::kernels::embedding_bag_forward_kernel<" + std::string(rtc_element_type(s.row_dtype)) + ", " +
                      rtc_element_type(s.out_dtype) + ", " + std::to_string(l.vec) + ", " + std::to_string(l.units) + ", " +
                      std::to_string(v.ids_in_flight) + ", " + std::to_string(v.block_threads) + ">";
  p.headers = rtc_source_files();
  if (!kernel_header.empty())
    for (gpu::RtcHeader& h : p.headers)
      if (h.name == "tunable/embedding_forward/embedding_bag_forward_kernel.cuh") h.text = kernel_header;
  return p;
}

namespace {
gpu::RtcBinary compile_or_throw(const EmbeddingForwardShape& s, const EmbeddingForwardVariant& v, int major, int minor,
                                const std::string& kernel_header) {
  gpu::RtcBinary b = gpu::rtc_compile(embedding_forward_program(s, v, kernel_header), major, minor);
  if (!b.ok) throw DeviceError("embedding forward variant for " + s.key() + " does not compile:\n" + b.log);
  return b;
}
}  // namespace

TunedEmbeddingForward::TunedEmbeddingForward(const EmbeddingForwardShape& shape, const EmbeddingForwardVariant& variant,
                                             int compute_major, int compute_minor, const std::string& kernel_header)
    : TunedEmbeddingForward(shape, variant, compile_or_throw(shape, variant, compute_major, compute_minor, kernel_header)) {}

TunedEmbeddingForward::TunedEmbeddingForward(const EmbeddingForwardShape& shape, const EmbeddingForwardVariant& variant,
                                             const gpu::RtcBinary& binary)
    : shape_(shape), variant_(variant), layout_(forward_launch_layout(shape, variant, gpu::kWarpSize)), kernel_(binary) {}

void TunedEmbeddingForward::launch(const EmbeddingTables& tables, const DeviceBags& bags, const PooledView& out,
                                   int32_t* bad_ids, gpu::stream_t stream) const {
  check_tables(tables, "tuned embedding_bag_forward");
  if (tables.row_dtype != shape_.row_dtype || out.dtype != shape_.out_dtype || tables.dim != shape_.dim)
    throw InternalError("tuned embedding_bag_forward compiled for " + shape_.key() + ", called with rows=" +
                        std::string(dtype_name(tables.row_dtype)) + " out=" + std::string(dtype_name(out.dtype)) +
                        " dim=" + std::to_string(tables.dim));
  if (!vector_path_ok(tables.dim, layout_.vec, tables.weights, dtype_size(tables.row_dtype)) ||
      !vector_path_ok(tables.dim, layout_.vec, out.data, dtype_size(out.dtype)) || out.row_stride % layout_.vec != 0)
    throw InternalError("tuned embedding_bag_forward: rows or output not aligned for " +
                        std::to_string(layout_.vec) + "-element vectors");
  if (bags.batch == 0 || tables.num_tables == 0) return;
  const void* weights = tables.weights;
  void* const* table_weights = tables.table_weights;
  const int64_t* row_offsets = tables.row_offsets;
  const uint8_t* mean_pooling = tables.mean_pooling;
  const int32_t* offsets = bags.offsets;
  const int32_t* ids = bags.ids;
  int64_t batch = bags.batch;
  int num_tables = tables.num_tables;
  int dim = tables.dim;
  int lanes = layout_.lanes;
  void* out_data = out.data;
  int64_t out_stride = out.row_stride;
  int32_t* bad = bad_ids;
  void* args[] = {&weights, &table_weights, &row_offsets, &mean_pooling, &offsets, &ids,        &batch,
                  &num_tables, &dim,    &lanes,        &out_data, &out_stride, &bad};
  const int64_t threads = batch * num_tables * lanes;
  kernel_.launch(grid_for(threads, variant_.block_threads), static_cast<unsigned>(variant_.block_threads), 0, stream,
                 args);
}

}  // namespace hetrec::kernels

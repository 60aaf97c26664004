#include "tunable/dot_interaction/dot_interaction_backward_tuned.h"

#include "core/error.h"
#include "kernels/launch.h"
#include "kernels/rtc_sources.h"

namespace hetrec::kernels {

namespace {
// Above the default 48 KB of dynamic shared memory a kernel must opt in.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;
constexpr const char* kHeader = "tunable/dot_interaction/dot_interaction_backward_kernel.cuh";

gpu::RtcBinary compile_or_throw(const DotForwardShape& s, const DotBackwardVariant& v, int major, int minor,
                                const std::string& kernel_header) {
  gpu::RtcBinary b = gpu::rtc_compile(dot_backward_program(v, kernel_header), major, minor);
  if (!b.ok) throw DeviceError("dot interaction backward variant for " + s.key() + " does not compile:\n" + b.log);
  return b;
}
}  // namespace

gpu::RtcProgram dot_backward_program(const DotBackwardVariant& v, const std::string& kernel_header) {
  gpu::RtcProgram p;
  p.name = "dot_interaction_backward_tuned.cu";
  p.source = std::string("#include \"") + kHeader + "\"\n";
  p.name_expression = "hetrec::kernels::dot_backward_kernel<" + std::to_string(v.block_threads) + ", " +
                      std::to_string(v.samples_per_block) + ", " + std::to_string(v.row_pad) + ", " +
                      std::to_string(v.rows_per_thread) + ">";
  p.headers = rtc_source_files();
  if (!kernel_header.empty())
    for (gpu::RtcHeader& h : p.headers)
      if (h.name == kHeader) h.text = kernel_header;
  return p;
}

TunedDotBackward::TunedDotBackward(const DotForwardShape& shape, const DotBackwardVariant& variant, int compute_major,
                                   int compute_minor, const std::string& kernel_header)
    : TunedDotBackward(shape, variant, compile_or_throw(shape, variant, compute_major, compute_minor, kernel_header)) {}

TunedDotBackward::TunedDotBackward(const DotForwardShape& shape, const DotBackwardVariant& variant,
                                   const gpu::RtcBinary& binary)
    : shape_(shape), variant_(variant), kernel_(binary) {
  const std::size_t bytes = dot_backward_shared_bytes(shape.num_features, shape.dim, variant);
  if (bytes > kDefaultSharedLimit) kernel_.allow_dynamic_shared_memory(bytes);
}

void TunedDotBackward::launch(const DotInteractionShape& s, const float* features, int64_t feature_stride,
                              const float* dout, int64_t dout_stride, float* dfeatures, int64_t dfeature_stride,
                              gpu::stream_t stream) const {
  if (s.num_features != shape_.num_features || s.dim != shape_.dim || s.self != shape_.self)
    throw InternalError("tuned dot interaction backward compiled for " + shape_.key() + ", called with features=" +
                        std::to_string(s.num_features) + " dim=" + std::to_string(s.dim));
  if (s.batch == 0) return;
  int64_t batch = s.batch;
  int num_features = s.num_features, dim = s.dim;
  bool self = s.self;
  void* args[] = {&features, &feature_stride, &dout,         &dout_stride, &dfeatures,
                  &dfeature_stride, &batch,   &num_features, &dim,         &self};
  kernel_.launch(grid_for(batch, variant_.samples_per_block), static_cast<unsigned>(variant_.block_threads),
                 dot_backward_shared_bytes(num_features, dim, variant_), stream, args);
}

}  // namespace hetrec::kernels

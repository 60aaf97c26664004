#include "tunable/cross_net/cross_net_tuned.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/launch.h"
#include "kernels/rtc_sources.h"

static_assert(hetrec::kernels::kMaxCrossTerms == 3, "the tuned backward passes three chain terms and four z's");

namespace hetrec::kernels {

namespace {

// Widest word a vector access uses (row_vector.cuh: 16-byte words).
constexpr std::size_t kMaxWordBytes = 16;
// Whether `p` is aligned for vectors of `vec` elements of `bytes` bytes (null passes).
bool vector_aligned(const void* p, int vec, std::size_t bytes) {
  const std::size_t align = std::min(kMaxWordBytes, static_cast<std::size_t>(vec) * bytes);
  return !p || reinterpret_cast<std::uintptr_t>(p) % align == 0;
}

std::string shape_mismatch(const char* who, const CrossNetShape& compiled, int64_t width, DType op) {
  return std::string(who) + " compiled for " + compiled.key() + ", called with op=" + std::string(dtype_name(op)) +
         " width=" + std::to_string(width);
}

gpu::RtcProgram program(const char* name, const std::string& expression, const std::string& kernel_header) {
  gpu::RtcProgram p;
  p.name = name;
  p.source = std::string("#include \"") + kCrossNetKernelHeader + "\"\n";
  p.name_expression = expression;
  p.headers = rtc_source_files();
  if (!kernel_header.empty())
    for (gpu::RtcHeader& h : p.headers)
      if (h.name == kCrossNetKernelHeader) h.text = kernel_header;
  return p;
}

gpu::RtcBinary compile_or_throw(const gpu::RtcProgram& p, const CrossNetShape& s, int major, int minor) {
  gpu::RtcBinary b = gpu::rtc_compile(p, major, minor);
  if (!b.ok) throw DeviceError(p.name_expression + " for " + s.key() + " does not compile:\n" + b.log);
  return b;
}

}  // namespace

gpu::RtcProgram cross_forward_program(const CrossNetShape& s, const CrossForwardVariant& v,
                                      const std::string& kernel_header) {
  return program("cross_forward_tuned.cu",
                 "hetrec::kernels::cross_forward_kernel<" + std::string(rtc_element_type(s.op_type)) + ", " +
                     std::to_string(v.vec) + ", " + std::to_string(v.items) + ", " + std::to_string(v.block_threads) +
                     ">",
                 kernel_header);
}

gpu::RtcProgram cross_backward_program(const CrossNetShape& s, const CrossBackwardVariant& v,
                                       const std::string& kernel_header) {
  return program("cross_backward_tuned.cu",
                 "hetrec::kernels::cross_backward_chunk_kernel<" + std::string(rtc_element_type(s.op_type)) + ", " +
                     std::to_string(v.vec) + ", " + std::to_string(v.col_threads) + ", " +
                     std::to_string(v.row_groups) + ", " + std::to_string(v.chunk_rows) + ">",
                 kernel_header);
}

TunedCrossForward::TunedCrossForward(const CrossNetShape& shape, const CrossForwardVariant& variant,
                                     int compute_major, int compute_minor, const std::string& kernel_header)
    : TunedCrossForward(shape, variant,
                        compile_or_throw(cross_forward_program(shape, variant, kernel_header), shape, compute_major,
                                         compute_minor)) {}

TunedCrossForward::TunedCrossForward(const CrossNetShape& shape, const CrossForwardVariant& variant,
                                     const gpu::RtcBinary& binary)
    : shape_(shape), variant_(variant), kernel_(binary) {}

void TunedCrossForward::launch(const CrossShape& s, const float* x0, const float* x, const void* z, float* out,
                               void* out_op, DType op_type, gpu::stream_t stream) const {
  if (s.width != shape_.width || op_type != shape_.op_type)
    throw InternalError(shape_mismatch("tuned cross forward", shape_, s.width, op_type));
  int64_t elements = s.batch * s.width;
  if (elements == 0) return;
  const std::size_t op_bytes = dtype_size(op_type);
  bool vector_ok = vector_aligned(x0, variant_.vec, sizeof(float)) && vector_aligned(x, variant_.vec, sizeof(float)) &&
                   vector_aligned(z, variant_.vec, op_bytes) && vector_aligned(out, variant_.vec, sizeof(float)) &&
                   vector_aligned(out_op, variant_.vec, op_bytes);
  const int64_t per_block = static_cast<int64_t>(variant_.block_threads) * variant_.items * variant_.vec;
  void* args[] = {&x0, &x, &z, &out, &out_op, &elements, &vector_ok};
  kernel_.launch(grid_for(elements, per_block), static_cast<unsigned>(variant_.block_threads), 0, stream, args);
}

TunedCrossBackward::TunedCrossBackward(const CrossNetShape& shape, const CrossBackwardVariant& variant,
                                       int compute_major, int compute_minor, const std::string& kernel_header)
    : TunedCrossBackward(shape, variant,
                         compile_or_throw(cross_backward_program(shape, variant, kernel_header), shape, compute_major,
                                          compute_minor)) {}

TunedCrossBackward::TunedCrossBackward(const CrossNetShape& shape, const CrossBackwardVariant& variant,
                                       const gpu::RtcBinary& binary)
    : shape_(shape), variant_(variant), kernel_(binary) {}

void TunedCrossBackward::launch(const CrossShape& s, const CrossBackward& a, void* workspace,
                                std::size_t workspace_bytes, gpu::stream_t stream) const {
  if (s.width != shape_.width || a.op_type != shape_.op_type)
    throw InternalError(shape_mismatch("tuned cross backward", shape_, s.width, a.op_type));
  check_cross_backward_args(a);
  if (s.width == 0) return;
  const std::size_t floats = cross_backward_partial_floats(s.batch, shape_.width, variant_);
  if (workspace_bytes < floats * sizeof(float))
    throw InternalError("tuned cross backward: workspace of " + std::to_string(workspace_bytes) + " bytes, need " +
                        std::to_string(floats * sizeof(float)));
  const int64_t chunks = static_cast<int64_t>(floats) / shape_.width;
  if (chunks > kMaxCrossChunks)
    throw InternalError("tuned cross backward: too many rows (" + std::to_string(s.batch) + ")");
  auto* partial = static_cast<float*>(workspace);
  if (chunks > 0) {
    const std::size_t op_bytes = dtype_size(a.op_type);
    const int vec = variant_.vec;
    bool vector_ok = s.width % vec == 0 && vector_aligned(a.g, vec, sizeof(float)) &&
                     vector_aligned(a.x0, vec, sizeof(float)) && vector_aligned(a.acc, vec, sizeof(float)) &&
                     vector_aligned(a.dx0, vec, sizeof(float)) && vector_aligned(a.dz, vec, op_bytes);
    for (const void* p : a.h) vector_ok = vector_ok && vector_aligned(p, vec, op_bytes);
    for (const void* p : a.z) vector_ok = vector_ok && vector_aligned(p, vec, op_bytes);
    float* g = a.g;
    const void *h0 = a.h[0], *h1 = a.h[1], *h2 = a.h[2];
    int terms = a.terms;
    const float* x0 = a.x0;
    const void *z0 = a.z[0], *z1 = a.z[1], *z2 = a.z[2], *z3 = a.z[3];
    int direct_terms = a.direct_terms, direct_first = a.direct_first;
    float* acc = a.acc;
    bool accumulate = a.accumulate, checkpoint = a.checkpoint;
    float* dx0 = a.dx0;
    void* dz = a.dz;
    int64_t rows = s.batch, cols = s.width;
    void* args[] = {&g,   &h0,          &h1,           &h2,         &terms,      &x0,  &z0,   &z1,   &z2,       &z3,
                    &direct_terms, &direct_first, &acc, &accumulate, &checkpoint, &dx0, &dz, &rows, &cols, &partial,
                    &vector_ok};
    kernel_.launch(grid_for(cols, static_cast<int64_t>(variant_.col_threads) * vec),
                   static_cast<unsigned>(variant_.block_threads()), 0, stream, args, static_cast<unsigned>(chunks));
  }
  cross_combine_column_chunks(partial, chunks, s.width, a.bias_grad, stream);
}

}  // namespace hetrec::kernels

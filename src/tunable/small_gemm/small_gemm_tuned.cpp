#include "tunable/small_gemm/small_gemm_tuned.h"

#include <algorithm>

#include "core/error.h"
#include "gpu/device.h"
#include "kernels/launch.h"
#include "kernels/rtc_sources.h"
#include "tunable/small_gemm/small_gemm_sources.h"

namespace hetrec::kernels {

namespace {
// Above the default 48 KB of dynamic shared memory a kernel must opt in.
constexpr std::size_t kDefaultSharedLimit = 48 * 1024;
// The second pass's block: one thread per output, a common block size.
constexpr int kFinishThreads = 256;
// The widest vector access (bytes), and so the most alignment a vector needs.
constexpr std::size_t kMaxAlignment = 16;
constexpr const char* kHeaderName = "tunable/small_gemm/small_gemm_kernel.cuh";

const char* epilogue_constant(SmallGemmEpilogue e) {
  switch (e) {
    case SmallGemmEpilogue::none: return "hetrec::kernels::kSmallGemmNoEpilogue";
    case SmallGemmEpilogue::bias: return "hetrec::kernels::kSmallGemmBias";
    case SmallGemmEpilogue::relu_bias: return "hetrec::kernels::kSmallGemmReluBias";
  }
  return "";
}

gpu::RtcProgram base_program(const std::string& kernel_header) {
  gpu::RtcProgram p;
  p.name = "small_gemm_tuned.cu";
  p.source = std::string("#include \"") + kHeaderName + "\"\n";
  p.headers = small_gemm_source_files();
  if (!kernel_header.empty())
    for (gpu::RtcHeader& h : p.headers)
      if (h.name == kHeaderName) h.text = kernel_header;
  return p;
}

gpu::RtcBinary compile_or_throw(const gpu::RtcProgram& program, const SmallGemmShape& s, int major, int minor) {
  gpu::RtcBinary b = gpu::rtc_compile(program, major, minor);
  if (!b.ok) throw DeviceError("small GEMM variant for " + s.key() + " does not compile:\n" + b.log);
  return b;
}

std::size_t alignment_of(int vec, std::size_t elem) { return std::min(kMaxAlignment, vec * elem); }

void check_aligned(const char* what, const void* p, int64_t ld, std::size_t elem, std::size_t align,
                   const SmallGemmShape& s) {
  if (!p) throw InternalError(std::string("small GEMM ") + s.key() + ": " + what + " is missing");
  if (reinterpret_cast<uintptr_t>(p) % align != 0 || (static_cast<std::size_t>(ld) * elem) % align != 0)
    throw InternalError(std::string("small GEMM ") + s.key() + ": " + what + " (row stride " + std::to_string(ld) +
                        ") is not aligned to the variant's " + std::to_string(align) + "-byte vectors");
}
}  // namespace

gpu::RtcProgram small_gemm_program(const SmallGemmShape& s, const SmallGemmVariant& v,
                                   const std::string& kernel_header) {
  const char* type = rtc_element_type(s.operand);
  if (!type) throw InternalError("small GEMM: no device type for operand " + std::string(dtype_name(s.operand)));
  const std::string t = type;
  const std::string trans = s.flag ? "true" : "false";
  gpu::RtcProgram p = base_program(kernel_header);
  const auto i = [](int x) { return std::to_string(x); };
  switch (s.kind) {
    case SmallGemmKind::rows:
      p.name_expression = "hetrec::kernels::small_gemm_rows<" + t + ", " + i(s.narrow) + ", " + i(v.lanes) + ", " +
                          i(v.rows_per_block) + ", " + i(v.vec) + ", " + i(v.unroll) + ", " + trans + ", " +
                          epilogue_constant(s.epilogue) + ">";
      break;
    case SmallGemmKind::outer:
      p.name_expression = "hetrec::kernels::small_gemm_outer<" + t + ", " + i(s.narrow) + ", " + i(v.rows_per_block) +
                          ", " + i(v.vec) + ", " + i(v.unroll) + ", " + trans + ", " + epilogue_constant(s.epilogue) +
                          ">";
      break;
    case SmallGemmKind::reduce:
      p.name_expression = "hetrec::kernels::small_gemm_reduce<" + t + ", " + i(s.narrow) + ", " +
                          i(v.rows_per_block) + ", " + i(v.vec) + ", " + i(v.unroll) + ">";
      break;
  }
  return p;
}

gpu::RtcProgram small_gemm_finish_program(const std::string& kernel_header) {
  gpu::RtcProgram p = base_program(kernel_header);
  p.name_expression = "hetrec::kernels::small_gemm_reduce_finish";
  return p;
}

TunedSmallGemm::TunedSmallGemm(const SmallGemmShape& shape, const SmallGemmVariant& variant, int compute_major,
                               int compute_minor, const std::string& kernel_header)
    : TunedSmallGemm(shape, variant,
                     compile_or_throw(small_gemm_program(shape, variant, kernel_header), shape, compute_major,
                                      compute_minor),
                     shape.kind == SmallGemmKind::reduce
                         ? compile_or_throw(small_gemm_finish_program(kernel_header), shape, compute_major,
                                            compute_minor)
                         : gpu::RtcBinary{}) {}

TunedSmallGemm::TunedSmallGemm(const SmallGemmShape& shape, const SmallGemmVariant& variant,
                               const gpu::RtcBinary& binary, const gpu::RtcBinary& finish)
    : shape_(shape), variant_(variant), kernel_(binary) {
  if (shape.kind == SmallGemmKind::reduce) finish_.emplace(finish);
  const std::size_t bytes = small_gemm_shared_bytes(shape, variant);
  if (bytes > kDefaultSharedLimit) kernel_.allow_dynamic_shared_memory(bytes);
  const int threads = small_gemm_block_threads(shape, variant);
  persistent_blocks_ =
      std::max(1, kernel_.resident_blocks(threads, bytes)) * gpu::multiprocessor_count(gpu::current_device());
}

void TunedSmallGemm::launch(const SmallGemmArgs& g, gpu::stream_t stream) const {
  if (g.m == 0) return;
  const SmallGemmShape& s = shape_;
  const SmallGemmVariant& v = variant_;
  const std::size_t elem = dtype_size(s.operand);
  const unsigned threads = static_cast<unsigned>(small_gemm_block_threads(s, v));
  const std::size_t shared = small_gemm_shared_bytes(s, v);
  int64_t m = g.m;
  const void* a = g.a;
  const void* b = g.b;
  int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
  float* c = g.c;
  const float* bias = g.bias;
  int wide = s.wide;
  if (!c) throw InternalError("small GEMM " + s.key() + ": C is missing");
  if (s.epilogue != SmallGemmEpilogue::none && !bias)
    throw InternalError("small GEMM " + s.key() + ": the bias is missing");
  switch (s.kind) {
    case SmallGemmKind::rows: {
      check_aligned("A", a, lda, elem, alignment_of(v.vec, elem), s);
      check_aligned("B", b, ldb, elem, elem, s);
      void* args[] = {&a, &lda, &b, &ldb, &c, &ldc, &bias, &m, &wide};
      const int64_t grid = std::min<int64_t>(ceil_div<int64_t>(m, v.rows_per_block), persistent_blocks_);
      kernel_.launch(static_cast<unsigned>(grid), threads, shared, stream, args);
      return;
    }
    case SmallGemmKind::outer: {
      check_aligned("A", a, lda, elem, elem, s);
      check_aligned("B", b, ldb, elem, elem, s);
      check_aligned("C", c, ldc, sizeof(float), alignment_of(v.vec, sizeof(float)), s);
      void* args[] = {&a, &lda, &b, &ldb, &c, &ldc, &bias, &m, &wide};
      const int64_t grid =
          std::min<int64_t>(ceil_div<int64_t>(m, int64_t{v.rows_per_block} * v.unroll), persistent_blocks_);
      kernel_.launch(static_cast<unsigned>(grid), threads, shared, stream, args);
      return;
    }
    case SmallGemmKind::reduce: {
      check_aligned("the narrow operand", a, lda, elem, elem, s);
      check_aligned("the wide operand", b, ldb, elem, alignment_of(v.vec, elem), s);
      if (!g.workspace) throw InternalError("small GEMM " + s.key() + ": the workspace is missing");
      float* partial = g.workspace;
      void* args[] = {&a, &lda, &b, &ldb, &partial, &m, &wide};
      kernel_.launch(static_cast<unsigned>(v.split), threads, shared, stream, args);
      int chunks = v.split, narrow = s.narrow;
      bool narrow_is_a = s.flag;
      const float* partial_in = partial;
      void* finish_args[] = {&partial_in, &chunks, &narrow, &wide, &c, &ldc, &narrow_is_a};
      finish_->launch(grid_for(int64_t{narrow} * wide, kFinishThreads), kFinishThreads, 0, stream, finish_args);
      return;
    }
  }
}

}  // namespace hetrec::kernels

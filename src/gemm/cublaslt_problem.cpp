// Compiled into hetrec_gemm only with a GPU backend (the CPU build sees an empty file).
#if defined(HETREC_WITH_GPU)
#include "gemm/cublaslt_problem.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/log.h"

namespace hetrec::inline gemm::cublaslt {

namespace {

// cuBLASLt requires the ReLU bit-mask leading dimension to be a multiple of 128.
constexpr int64_t kAuxLdMultiple = 128;
constexpr int kMaxAlignment = 256;

cublasLtEpilogue_t epilogue_of(Epilogue e) {
  switch (e) {
    case Epilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::relu_bias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::relu_aux_bias: return CUBLASLT_EPILOGUE_RELU_AUX_BIAS;
    case Epilogue::drelu_bgrad: return CUBLASLT_EPILOGUE_DRELU_BGRAD;
    case Epilogue::drelu: return CUBLASLT_EPILOGUE_DRELU;
    // Row-major A is the column-major product's B operand.
    case Epilogue::bgrad_a: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

bool uses_bias(Epilogue e) { return e != Epilogue::none && e != Epilogue::drelu; }
bool uses_aux(Epilogue e) {
  return e == Epilogue::relu_aux_bias || e == Epilogue::drelu_bgrad || e == Epilogue::drelu;
}

int alignment_of(const void* p) {
  const auto addr = reinterpret_cast<std::uintptr_t>(p);
  int a = kMaxAlignment;
  while (a > 1 && addr % static_cast<std::uintptr_t>(a) != 0) a /= 2;
  return a;
}


template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  HETREC_BLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

}  // namespace

cudaDataType data_type(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f16: return CUDA_R_16F;
    case DType::f8e4m3: return CUDA_R_8F_E4M3;
    default: throw InternalError("cublaslt: unsupported matrix dtype " + std::string(dtype_name(t)));
  }
}


std::string shape_text(const Problem& p) {
  return "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         (p.trans_a ? " A^T" : " A") + (p.trans_b ? " B^T" : " B") + " lda=" + std::to_string(p.lda) +
         " ldb=" + std::to_string(p.ldb) + " ldd=" + std::to_string(p.ldd) + " D " +
         std::string(dtype_name(p.d_type)) + " precision " + precision_name(p.precision) +
         " epilogue " + std::to_string(static_cast<int>(p.epilogue)) +
         (uses_bias(p.epilogue) ? " bias " + std::string(dtype_name(p.bias_type)) : std::string());
}

DType operand_dtype(Precision p) {
  switch (p) {
    case Precision::fp32:
    case Precision::tf32: return DType::f32;
    case Precision::bf16: return DType::bf16;
    case Precision::fp16: return DType::f16;
    case Precision::fp8_e4m3: return DType::f8e4m3;
  }
  return DType::f32;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::fp8_e4m3: return "fp8_e4m3";
  }
  return "?";
}

int64_t relu_aux_ld(int64_t n) { return (n + kAuxLdMultiple - 1) / kAuxLdMultiple * kAuxLdMultiple; }

std::size_t relu_aux_bytes(int64_t m, int64_t n) { return static_cast<std::size_t>(relu_aux_ld(n) / 8 * m); }

std::vector<cublasLtMatmulAlgo_t> heuristic_algos(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                  cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                  cublasLtMatrixLayout_t d, std::size_t workspace_bytes,
                                                  const Alignment& alignment, bool sixteen_bit_d, int count) {
  cublasLtMatmulPreference_t pref = nullptr;
  HETREC_BLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  std::vector<cublasLtMatmulAlgo_t> chosen;
  try {
    HETREC_BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &workspace_bytes, sizeof(workspace_bytes)));
#if !defined(HETREC_GPU_HIP)  // hipBLASLt has no alignment preferences; it checks pointers itself
    // The column-major product's A is our B and its B our A.
    const uint32_t align_a = static_cast<uint32_t>(alignment.b), align_b = static_cast<uint32_t>(alignment.a);
    const uint32_t align_d = static_cast<uint32_t>(alignment.d);
    HETREC_BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a,
                                                           sizeof(align_a)));
    HETREC_BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b,
                                                           sizeof(align_b)));
    HETREC_BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_d,
                                                           sizeof(align_d)));
    HETREC_BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_d,
                                                           sizeof(align_d)));
    if (sixteen_bit_d) {
      // No split-K (scheme none) or partials added in the fp32 compute type.
      const uint32_t schemes = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
      HETREC_BLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &schemes,
                                                             sizeof(schemes)));
    }
#else
    (void)alignment;
    (void)sixteen_bit_d;
#endif
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(std::max(count, 1)));
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, d, d, pref, count, results.data(),
                                                                 &found);
    if (status == CUBLAS_STATUS_SUCCESS)
      for (int i = 0; i < found; ++i)
        if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
          chosen.push_back(results[static_cast<std::size_t>(i)].algo);
  } catch (...) {
    (void)cublasLtMatmulPreferenceDestroy(pref);
    throw;
  }
  HETREC_BLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  return chosen;
}

std::optional<cublasLtMatmulAlgo_t> select_algo(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                cublasLtMatrixLayout_t d, std::size_t workspace_bytes,
                                                const Alignment& alignment, bool sixteen_bit_d) {
  const auto algos = heuristic_algos(handle, desc, a, b, d, workspace_bytes, alignment, sixteen_bit_d, 1);
  if (algos.empty()) return std::nullopt;
  return algos.front();
}

MatmulDescriptors::~MatmulDescriptors() {
  if (a) (void)cublasLtMatrixLayoutDestroy(a);
  if (b) (void)cublasLtMatrixLayoutDestroy(b);
  if (d) (void)cublasLtMatrixLayoutDestroy(d);
  if (desc) (void)cublasLtMatmulDescDestroy(desc);
}

std::unique_ptr<MatmulDescriptors> make_descriptors(const Problem& p) {
  if (p.m <= 0 || p.n <= 0 || p.k <= 0) throw InternalError("cublaslt: empty problem " + shape_text(p));
  const int64_t a_rows = p.trans_a ? p.k : p.m, a_cols = p.trans_a ? p.m : p.k;
  const int64_t b_rows = p.trans_b ? p.n : p.k, b_cols = p.trans_b ? p.k : p.n;
  if (p.lda < a_cols || p.ldb < b_cols || p.ldd < p.n)
    throw InternalError("cublaslt: leading dimension below the row width in " + shape_text(p) + " (A is " +
                        std::to_string(a_rows) + " x " + std::to_string(a_cols) + ", B " + std::to_string(b_rows) +
                        " x " + std::to_string(b_cols) + ")");
  auto m = std::make_unique<MatmulDescriptors>();
  const DType ab_type = operand_dtype(p.precision);
  const cublasComputeType_t compute = p.precision == Precision::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  HETREC_BLAS_CHECK(cublasLtMatmulDescCreate(&m->desc, compute, CUDA_R_32F));
  // Column-major view: D^T (n x m) = op(B)^T (n x k) * op(A)^T (k x m). A row-major
  // r x c matrix is a column-major c x r one, so B^T needs no transpose when B is used
  // as stored, and one when it is used transposed (likewise A).
  const cublasOperation_t op_first = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(m->desc, CUBLASLT_MATMUL_DESC_TRANSA, op_first);
  set_desc(m->desc, CUBLASLT_MATMUL_DESC_TRANSB, op_second);
  set_desc(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue_of(p.epilogue));
  if (uses_bias(p.epilogue) && p.bias_type != DType::f32 && p.bias_type != p.d_type)
    throw InternalError("cublaslt: a bias must be fp32 or of D's type: " + shape_text(p));
  if (uses_bias(p.epilogue) && p.d_type != DType::f32)
    set_desc(m->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, data_type(p.bias_type));
  if (uses_aux(p.epilogue)) set_desc(m->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, relu_aux_ld(p.n));
  // Stored shapes in the column-major view: B is (b_cols x b_rows) with ld ldb, A is
  // (a_cols x a_rows) with ld lda, D is (n x m) with ld ldd.
  HETREC_BLAS_CHECK(cublasLtMatrixLayoutCreate(&m->a, data_type(ab_type), static_cast<uint64_t>(b_cols),
                                               static_cast<uint64_t>(b_rows), p.ldb));
  HETREC_BLAS_CHECK(cublasLtMatrixLayoutCreate(&m->b, data_type(ab_type), static_cast<uint64_t>(a_cols),
                                               static_cast<uint64_t>(a_rows), p.lda));
  HETREC_BLAS_CHECK(cublasLtMatrixLayoutCreate(&m->d, data_type(p.d_type), static_cast<uint64_t>(p.n),
                                               static_cast<uint64_t>(p.m), p.ldd));
  return m;
}

void set_operand_pointers(const Problem& p, const Operands& o, cublasLtMatmulDesc_t desc) {
  if (uses_bias(p.epilogue)) {
    const bool grad = p.epilogue == Epilogue::drelu_bgrad || p.epilogue == Epilogue::bgrad_a;
    if (grad ? !o.bias_grad : !o.bias) throw InternalError("cublaslt: epilogue needs a bias vector: " + shape_text(p));
    const void* bias = o.bias ? static_cast<const void*>(o.bias) : static_cast<const void*>(o.bias_grad);
    set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias);
  }
  if (uses_aux(p.epilogue)) {
    if (!o.aux) throw InternalError("cublaslt: epilogue needs the aux mask: " + shape_text(p));
    set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, o.aux);
  }
  if (p.precision == Precision::fp8_e4m3) {
    if (!o.a_scale || !o.b_scale) throw InternalError("cublaslt: fp8 needs A and B scales: " + shape_text(p));
    // cuBLASLt accepts such a configuration in AlgoCheck but refuses the launch
    // (NOT_SUPPORTED) when a scale is not 16-byte aligned.
    if (reinterpret_cast<std::uintptr_t>(o.a_scale) % kScaleAlignment != 0 ||
        reinterpret_cast<std::uintptr_t>(o.b_scale) % kScaleAlignment != 0)
      throw InternalError("cublaslt: fp8 scales must be " + std::to_string(kScaleAlignment) +
                          "-byte aligned device pointers: " + shape_text(p));
    // The column-major product's A is our B and its B our A.
    set_desc(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(o.b_scale));
    set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(o.a_scale));
  }
}

Alignment operand_alignment(const Problem& p, const Operands& o) {
  Alignment al;
  al.a = alignment_of(o.a);
  al.b = alignment_of(o.b);
  al.d = alignment_of(o.d);
  if (uses_aux(p.epilogue)) al.aux = alignment_of(o.aux);
  if (uses_bias(p.epilogue)) al.bias = alignment_of(o.bias ? o.bias : o.bias_grad);
  return al;
}

}  // namespace hetrec::gemm::cublaslt
#endif  // HETREC_WITH_GPU

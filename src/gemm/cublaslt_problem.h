#pragma once
// The cuBLASLt problem in hetrec's row-major language (gemm/cublaslt_gemm.h runs it): the
// precisions, epilogues, the problem and its operands, the matmul descriptors, the operand
// alignments and the library heuristic's queries. The algorithm enumeration
// (gemm/cublaslt_algos.h) and the model's choice (gemm/cublaslt_model_choice.h) build on
// this, below the Gemm class that uses them.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "gpu/blaslt.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_ranker.h"
#include "gemm_perf/gemm_selection_cache.h"
#include "gpu/platform.h"

namespace hetrec::inline gemm::cublaslt {

// What GEMM selection by the analytical model needs besides the problem
// (gemm/cublaslt_model_choice.h): the local GPU's description, the model's fitted
// parameters for it, the algorithm ids cuBLASLt offers for fp32 compute (the SIMT kernel
// families, gemm_perf/gemm_oracle_measurements.h) and, where one was trained on this GPU,
// driver and cuBLASLt, the learned ranker whose router picks (gemm_perf/gemm_ranker.h).
struct ModelSelection {
  Hardware hw;
  GemmModelParams params;
  std::vector<int> simt_families;
  std::shared_ptr<const GemmRanker> ranker;  // null: the model's fastest prediction runs
  // With a ranker: time this many of its best-scored configurations and the heuristic's
  // top-1 once per new problem and run the fastest (model.gemm_timed_shortlist); 0: no timing.
  int timed_shortlist = 0;
};

enum class Epilogue : uint8_t {
  none,
  bias,           // D[i][j] = (AB)[i][j] + bias[j]
  relu_bias,      // D = relu(AB + bias)
  relu_aux_bias,  // as relu_bias, and the ReLU mask (AB + bias > 0) goes to aux as bits
  drelu_bgrad,    // D = AB where the aux mask is set, else 0; bias_grad[j] = sum_i D[i][j]
  drelu,          // D = AB where the aux mask is set, else 0
  bgrad_a,        // D = AB; bias_grad[i] = sum_k op(A)[i][k] (a weight GEMM's bias gradient)
};

enum class Precision : uint8_t {
  fp32,  // fp32 operands, fp32 arithmetic
  tf32,  // fp32 operands, tensor cores with 10-bit-mantissa inputs, fp32 accumulation
  bf16,  // bf16 A and B, fp32 accumulation; D in fp32 or bf16
  fp16,  // fp16 A and B, fp32 accumulation; D in fp32 or fp16
  // e4m3 A and B with one fp32 scale each (Operands::a_scale, b_scale), fp32
  // accumulation, D in bf16 or fp32. cuBLASLt runs it only as "TN" in column-major terms,
  // which is trans_b && !trans_a here, with K and the leading dimensions multiples of 16.
  fp8_e4m3,
};

// The library's type code of a matrix element type (InternalError for others).
cudaDataType data_type(DType t);

// The storage type of A and B under a precision.
DType operand_dtype(Precision p);
const char* precision_name(Precision p);

struct Problem {
  bool trans_a = false;  // A stored k x m (row-major) and used transposed
  bool trans_b = false;  // B stored n x k and used transposed
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldd = 0;
  DType d_type = DType::f32;
  Precision precision = Precision::fp32;
  Epilogue epilogue = Epilogue::none;
  // The bias vector's type (bias epilogues): fp32, or D's 16-bit type. cuBLASLt fuses an
  // fp32 bias into a 16-bit D for few shapes, a bias of D's own type for all.
  DType bias_type = DType::f32;
};

struct Operands {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;  // 0: D is only written (NaN in it does not propagate)
  const void* bias = nullptr;   // bias, relu_bias, relu_aux_bias: n values of Problem::bias_type
  float* bias_grad = nullptr;   // drelu_bgrad: n values; bgrad_a: m values
  void* aux = nullptr;          // relu_aux_bias (written), drelu_bgrad and drelu (read): relu_aux_bytes(m, n)
  // fp8_e4m3: device pointers to A's and B's dequantisation scales, each kScaleAlignment-
  // byte aligned (two adjacent floats are not).
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
};
constexpr std::size_t kScaleAlignment = 16;

// The matmul descriptor and the three matrix layouts of one problem in cuBLASLt's
// column-major view (D^T = op(B)^T op(A)^T), destroyed with the object. Used by Gemm and
// by the algorithm enumeration of gemm/cublaslt_algos.h.
struct MatmulDescriptors {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // column-major A (our B), B (our A), D
  MatmulDescriptors() = default;
  ~MatmulDescriptors();
  MatmulDescriptors(const MatmulDescriptors&) = delete;
  MatmulDescriptors& operator=(const MatmulDescriptors&) = delete;
};
// Throws InternalError for an empty problem or leading dimensions below the row widths.
std::unique_ptr<MatmulDescriptors> make_descriptors(const Problem& problem);
// Sets the per-call pointers (bias, aux, fp8 scales) the problem's epilogue and precision
// need; throws InternalError naming the shape when one is missing.
void set_operand_pointers(const Problem& problem, const Operands& operands, cublasLtMatmulDesc_t desc);
// "m=.. n=.. k=.. A B^T lda=.. ..." for error messages.
std::string shape_text(const Problem& p);

// The ReLU mask is one bit per element of D, laid out for cuBLASLt's column-major view
// (n rows of D^T, leading dimension rounded up to 128 bits as the library requires).
int64_t relu_aux_ld(int64_t n);
std::size_t relu_aux_bytes(int64_t m, int64_t n);

// Pointer alignments the chosen algorithm may assume (bytes, power of two up to 256).
struct Alignment {
  int a = 256, b = 256, d = 256, aux = 256, bias = 256;
  auto tie() const { return std::tie(a, b, d, aux, bias); }
};

// cuBLASLt's own heuristic's first choice for one problem, or nothing when the library has
// no algorithm (e.g. an epilogue it does not fuse for these types).
// sixteen_bit_d: D is bf16 or fp16, so split-K algorithms that add their partial sums in
// D's type (rounding each partial: errors of a unit of the partials' magnitude, far
// beyond one of the result's) are left out; partials are then added in fp32.
std::optional<cublasLtMatmulAlgo_t> select_algo(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                cublasLtMatrixLayout_t d, std::size_t workspace_bytes,
                                                const Alignment& alignment, bool sixteen_bit_d);
// The heuristic's first `count` choices in its order, under the same preferences.
std::vector<cublasLtMatmulAlgo_t> heuristic_algos(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                  cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                  cublasLtMatrixLayout_t d, std::size_t workspace_bytes,
                                                  const Alignment& alignment, bool sixteen_bit_d, int count);

// The alignments the operands' pointers give the problem's matrices (and its aux and bias).
Alignment operand_alignment(const Problem& p, const Operands& o);

}  // namespace hetrec::gemm::cublaslt

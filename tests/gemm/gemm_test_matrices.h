#pragma once
// Host matrices for the cuBLASLt wrapper's tests (tests/gemm/test_cublaslt_*.cpp): fresh
// random values, exact in the operands' precision, with leading dimensions wider than the
// rows; their upload in that precision; the tolerance of each precision against a
// double-precision reference; and a 16-bit ReLU layer's GEMMs as GpuMlp asks for them, with
// their operands and references.
#include <cstdint>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/device.h"

namespace hetrec::gemm_test {

using cublaslt::Precision;

struct HostMatrix {
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<float> v;
  double at(int64_t r, int64_t c) const { return v[static_cast<std::size_t>(r * ld + c)]; }
};

// The 16-bit operand precisions: inputs are generated as exact values of the type.
inline bool sixteen_bit(Precision p) { return p == Precision::bf16 || p == Precision::fp16; }
inline uint16_t to_bits(float x, Precision p) { return p == Precision::fp16 ? f32_to_f16(x) : f32_to_bf16(x); }
inline float from_bits(uint16_t b, Precision p) { return p == Precision::fp16 ? f16_to_f32(b) : bf16_to_f32(b); }

inline HostMatrix random_matrix(int64_t rows, int64_t cols, uint64_t seed, Precision prec) {
  HostMatrix m{rows, cols, cols + 3, {}};
  m.v.resize(static_cast<std::size_t>(rows * m.ld));
  Rng rng(seed);
  for (float& x : m.v) {
    x = static_cast<float>(rng.normal());
    if (sixteen_bit(prec)) x = from_bits(to_bits(x, prec), prec);
  }
  return m;
}

inline gpu::DeviceBuffer upload(const HostMatrix& m, Precision prec) {
  if (!sixteen_bit(prec)) return testing::to_device(m.v);
  std::vector<uint16_t> bits(m.v.size());
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = to_bits(m.v[i], prec);
  return testing::to_device(bits);
}

inline double tolerance(Precision p) {
  switch (p) {
    case Precision::fp32: return 2e-6;
    case Precision::tf32: return 2e-3;  // 10-bit mantissa inputs
    case Precision::bf16: return 2e-6;  // inputs are exact bf16 values; fp32 accumulation
    case Precision::fp16: return 2e-6;  // inputs are exact fp16 values; fp32 accumulation
    case Precision::fp8_e4m3: break;  // not covered here (tests/gemm/test_cublaslt_algos.cpp)
  }
  return 0;
}

// A 16-bit ReLU layer at m = batch, n = its width, k = its successor's width, in = its
// input width: the forward GEMM y = relu(x W^T + bias) storing the ReLU mask
// (relu_aux_bias), and the successor's input-gradient GEMM dz = g W2 with `epilogue`
// (drelu_bgrad, drelu or none), 16-bit D, dense leading dimensions.
inline DType half_of(Precision prec) { return prec == Precision::fp16 ? DType::f16 : DType::bf16; }
inline cublaslt::Problem relu_forward_problem(int64_t m, int64_t n, int64_t in, Precision prec, DType bias_type) {
  return {.trans_b = true, .m = m, .n = n, .k = in, .lda = in, .ldb = in, .ldd = n, .d_type = half_of(prec),
          .precision = prec, .epilogue = cublaslt::Epilogue::relu_aux_bias, .bias_type = bias_type};
}
inline cublaslt::Problem input_gradient_problem(int64_t m, int64_t n, int64_t k, Precision prec,
                                                cublaslt::Epilogue epilogue, DType bias_type = DType::f32) {
  return {.m = m, .n = n, .k = k, .lda = k, .ldb = n, .ldd = n, .d_type = half_of(prec), .precision = prec,
          .epilogue = epilogue, .bias_type = bias_type};
}
// The layer's weight-gradient GEMM dW = dz^T x (n x in) on its 16-bit dz (m x n), summing
// the bias gradient along the batch (bgrad_a), fp32 D.
inline cublaslt::Problem weight_gradient_problem(int64_t m, int64_t n, int64_t in, Precision prec) {
  return {.trans_a = true, .m = n, .n = in, .k = m, .lda = n, .ldb = in, .ldd = in, .precision = prec,
          .epilogue = cublaslt::Epilogue::bgrad_a};
}

// That layer's operands, fresh random values exact in `prec` (the bias in bias_prec), on
// the host and the device: x (m x in), W (n x in), bias (1 x n), the successor's output
// gradient g (m x k) and weight W2 (k x n); and the double references.
struct ReluLayerOperands {
  HostMatrix x, w, bias, g, w2;
  gpu::DeviceBuffer dx, dw, dbias, dg, dw2;
  ReluLayerOperands(int64_t m, int64_t n, int64_t k, int64_t in, Precision prec, Precision bias_prec, uint64_t seed)
      : x(random_matrix(m, in, seed, prec)),
        w(random_matrix(n, in, seed + 1, prec)),
        bias(random_matrix(1, n, seed + 2, bias_prec)),
        g(random_matrix(m, k, seed + 3, prec)),
        w2(random_matrix(k, n, seed + 4, prec)),
        dx(upload(x, prec)),
        dw(upload(w, prec)),
        dbias(upload(bias, bias_prec)),
        dg(upload(g, prec)),
        dw2(upload(w2, prec)) {}
  // The problems' leading dimensions set to the padded operands'.
  void fit(cublaslt::Problem& forward, cublaslt::Problem& input_gradient) const {
    forward.lda = x.ld;
    forward.ldb = w.ld;
    input_gradient.lda = g.ld;
    input_gradient.ldb = w2.ld;
  }
  // Runs the forward GEMM into y (m x n, 16-bit) storing the mask in aux.
  void forward(cublaslt::Gemm& gemm, const cublaslt::Problem& f, void* y, void* aux) const {
    cublaslt::Operands o;
    o.a = dx.get();
    o.b = dw.get();
    o.d = y;
    o.bias = dbias.get();
    o.aux = aux;
    gemm.run(f, o, nullptr);
  }
  // The pre-activation (x W^T + bias)[i][j] and the product (g W2)[i][j].
  double pre(int64_t i, int64_t j) const {
    double s = bias.at(0, j);
    for (int64_t q = 0; q < x.cols; ++q) s += x.at(i, q) * w.at(j, q);
    return s;
  }
  double prod(int64_t i, int64_t j) const {
    double s = 0;
    for (int64_t q = 0; q < g.cols; ++q) s += g.at(i, q) * w2.at(q, j);
    return s;
  }
};

inline const char* name(Precision p) {
  return p == Precision::fp32 ? "fp32" : p == Precision::tf32 ? "tf32" : p == Precision::bf16 ? "bf16" : "fp16";
}

}  // namespace hetrec::gemm_test

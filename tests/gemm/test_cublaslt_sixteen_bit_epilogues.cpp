// cuBLASLt's ReLU-backward epilogues with a 16-bit D, as GpuMlp asks for them
// (model/gpu/relu_mask_fusion.h): which combinations the library fuses at the top MLP's
// shapes, printed; every one it fuses is checked against a double-precision reference on
// fresh random inputs at a small shape, with the outputs poisoned first.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "gemm_test_matrices.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"

namespace hetrec {
namespace {

using cublaslt::Epilogue;
using cublaslt::Precision;
using namespace gemm_test;

// The fused ReLU-backward epilogues with a 16-bit D, as GpuMlp asks for them: which
// combinations of bias (and bias-gradient) type cuBLASLt fuses at the top MLP's shapes,
// printed; every one it fuses is checked against a double reference at a small shape
// (mask from the forward, masked product and the fp32 column sums in the backward).
TEST(CublasLtSixteenBitEpilogues, ReluMaskAndBiasGradientWithSixteenBitOutput) {
  HETREC_REQUIRE_GPU();
  gpu::CachingDeviceAllocator alloc{0};
  cublaslt::Gemm gemm(alloc);
  for (Precision prec : {Precision::bf16, Precision::fp16}) {
    const DType half = prec == Precision::bf16 ? DType::bf16 : DType::f16;
    for (DType bias_type : {DType::f32, half}) {
      for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{131072, 1024, 1024}, {131072, 512, 1024},
                             {16384, 1024, 3456}, {384, 256, 160}}) {
        cublaslt::Problem f = relu_forward_problem(m, n, k, prec, bias_type);
        cublaslt::Problem b = input_gradient_problem(m, n, k, prec, Epilogue::drelu_bgrad, bias_type);
        std::printf("[ INFO ] %s D, %s bias, m=%lld n=%lld k=%lld: relu_aux_bias %d, drelu_bgrad %d\n", name(prec),
                    std::string(dtype_name(bias_type)).c_str(), static_cast<long long>(m), static_cast<long long>(n),
                    static_cast<long long>(k), gemm.supported(f) ? 1 : 0, gemm.supported(b) ? 1 : 0);
        if (m != 384 || !gemm.supported(f) || !gemm.supported(b) || bias_type != DType::f32) continue;
        // Correctness at the small shape with fp32 bias and bias gradient (the successor's
        // width equals the layer's input width here).
        const ReluLayerOperands op(m, n, k, k, prec, Precision::fp32, 11);
        op.fit(f, b);
        gpu::DeviceBuffer y(static_cast<std::size_t>(m * n) * 2), dz(static_cast<std::size_t>(m * n) * 2);
        gpu::DeviceBuffer aux(cublaslt::relu_aux_bytes(m, n));
        gpu::DeviceBuffer bgrad = testing::poisoned_floats(static_cast<std::size_t>(n));
        op.forward(gemm, f, y.get(), aux.get());
        cublaslt::Operands ob;
        ob.a = op.dg.get();
        ob.b = op.dw2.get();
        ob.d = dz.get();
        ob.bias_grad = bgrad.as<float>();
        ob.aux = aux.get();
        gemm.run(b, ob, nullptr);
        const auto dzb = testing::to_host<uint16_t>(dz, static_cast<std::size_t>(m * n));
        const auto bg = testing::to_host<float>(bgrad, static_cast<std::size_t>(n));
        for (int64_t j = 0; j < n; ++j) {
          double col = 0, col_abs = 0;
          for (int64_t i = 0; i < m; ++i) {
            const double pre = op.pre(i, j), prod = op.prod(i, j);
            const double want = pre > 0 ? prod : 0.0;
            const double got = from_bits(dzb[static_cast<std::size_t>(i * n + j)], prec);
            if (std::fabs(pre) > 1e-2 * std::sqrt(static_cast<double>(k))) {
              ASSERT_NEAR(got, want, 1e-2 * (std::fabs(want) + std::sqrt(static_cast<double>(k)))) << i << "," << j;
            }
            col += pre > 0 ? prod : 0.0;
            col_abs += std::fabs(prod);
          }
          ASSERT_NEAR(bg[static_cast<std::size_t>(j)], col, 2e-2 * col_abs + 1e-3) << name(prec) << " column " << j;
        }
      }
    }
  }
}

// The split ReLU backward (model.relu_backward = "split"), as GpuMlp asks for it: the
// input-gradient GEMM applies the forward's mask to a 16-bit D without a bias gradient
// (drelu), and the layer's weight GEMM dW = dz^T x on that 16-bit dz sums the bias gradient
// along the batch in fp32 (bgrad_a). Support at the top MLP's shapes is printed; where both
// fuse, the small shape is checked against a double reference on the GPU's own 16-bit dz.
TEST(CublasLtSixteenBitEpilogues, SplitReluBackwardMaskThenWeightGemmBiasGradient) {
  HETREC_REQUIRE_GPU();
  gpu::CachingDeviceAllocator alloc{0};
  cublaslt::Gemm gemm(alloc);
  for (Precision prec : {Precision::bf16, Precision::fp16}) {
    const DType half = prec == Precision::bf16 ? DType::bf16 : DType::f16;
    // m = batch, n = the layer's width, k = the successor's width, in = the layer's input.
    for (auto [m, n, k, in] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{131072, 1024, 1024, 3456},
                               {131072, 512, 256, 1024}, {384, 256, 160, 96}}) {
      cublaslt::Problem f = relu_forward_problem(m, n, in, prec, half);
      cublaslt::Problem b = input_gradient_problem(m, n, k, prec, Epilogue::drelu);
      cublaslt::Problem wg = weight_gradient_problem(m, n, in, prec);
      const bool ok = gemm.supported(f) && gemm.supported(b) && gemm.supported(wg);
      std::printf("[ INFO ] %s, batch %lld, width %lld, successor %lld, input %lld: relu_aux_bias %d, drelu %d, "
                  "weight GEMM bgrad_a %d\n",
                  name(prec), static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k),
                  static_cast<long long>(in), gemm.supported(f) ? 1 : 0, gemm.supported(b) ? 1 : 0,
                  gemm.supported(wg) ? 1 : 0);
      if (m != 384 || !ok) continue;
      const ReluLayerOperands op(m, n, k, in, prec, prec, 21);
      op.fit(f, b);
      wg.ldb = op.x.ld;
      if (!gemm.supported(f) || !gemm.supported(b) || !gemm.supported(wg)) {
        std::printf("[ INFO ] %s: not fused with padded operands (leading dimensions %lld, %lld)\n", name(prec),
                    static_cast<long long>(op.x.ld), static_cast<long long>(op.g.ld));
        continue;
      }
      gpu::DeviceBuffer y(static_cast<std::size_t>(m * n) * 2), aux(cublaslt::relu_aux_bytes(m, n));
      gpu::DeviceBuffer dz = testing::poisoned_floats(static_cast<std::size_t>(m * n) / 2);
      gpu::DeviceBuffer dW = testing::poisoned_floats(static_cast<std::size_t>(n * in));
      gpu::DeviceBuffer db = testing::poisoned_floats(static_cast<std::size_t>(n));
      op.forward(gemm, f, y.get(), aux.get());
      cublaslt::Operands ob;
      ob.a = op.dg.get();
      ob.b = op.dw2.get();
      ob.d = dz.get();
      ob.aux = aux.get();
      gemm.run(b, ob, nullptr);
      cublaslt::Operands ow;
      ow.a = dz.get();
      ow.b = op.dx.get();
      ow.d = dW.get();
      ow.bias_grad = db.as<float>();
      gemm.run(wg, ow, nullptr);
      const auto dzb = testing::to_host<uint16_t>(dz, static_cast<std::size_t>(m * n));
      const auto W = testing::to_host<float>(dW, static_cast<std::size_t>(n * in));
      const auto B = testing::to_host<float>(db, static_cast<std::size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        double col = 0, col_abs = 0;
        for (int64_t i = 0; i < m; ++i) {
          const double pre = op.pre(i, j), prod = op.prod(i, j);
          const double got = from_bits(dzb[static_cast<std::size_t>(i * n + j)], prec);
          if (std::fabs(pre) > 1e-2 * std::sqrt(static_cast<double>(in))) {
            const double want = pre > 0 ? prod : 0.0;
            ASSERT_NEAR(got, want, 1e-2 * (std::fabs(want) + std::sqrt(static_cast<double>(k)))) << i << "," << j;
          }
          col += got;  // the weight GEMM sums the 16-bit dz it reads
          col_abs += std::fabs(got);
        }
        ASSERT_NEAR(B[static_cast<std::size_t>(j)], col, 1e-5 * col_abs + 1e-5) << name(prec) << " column " << j;
        for (int64_t q = 0; q < in; q += 7) {
          double ref = 0, ref_abs = 0;
          for (int64_t i = 0; i < m; ++i) {
            const double t = from_bits(dzb[static_cast<std::size_t>(i * n + j)], prec) * op.x.at(i, q);
            ref += t;
            ref_abs += std::fabs(t);
          }
          ASSERT_NEAR(W[static_cast<std::size_t>(j * in + q)], ref, 1e-5 * ref_abs + 1e-5) << j << "," << q;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hetrec

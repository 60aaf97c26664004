// The cuBLASLt algorithm enumeration (gemm/cublaslt_algos.h) on the GPU: for small shapes
// in every precision, every valid configuration's output (poisoned first) against a
// double-precision reference of the same rounded inputs, and cuBLASLt's heuristic top-1
// among the enumerated configurations.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "gemm/cublaslt_algos.h"
#include "gemm/cublaslt_gemm.h"

namespace hetrec {
namespace {

using cublaslt::Precision;

struct Case {
  Precision precision;
  DType d_type;
  int64_t m, n, k;
  bool ta, tb;
};

// Rounds a value to the operand type and returns it with its stored bytes.
float round_to(DType t, float v, uint8_t* bytes) {
  switch (t) {
    case DType::f32: std::memcpy(bytes, &v, 4); return v;
    case DType::bf16: {
      const uint16_t h = f32_to_bf16(v);
      std::memcpy(bytes, &h, 2);
      return bf16_to_f32(h);
    }
    case DType::f16: {
      const uint16_t h = f32_to_f16(v);
      std::memcpy(bytes, &h, 2);
      return f16_to_f32(h);
    }
    case DType::f8e4m3: bytes[0] = f32_to_f8e4m3(v); return f8e4m3_to_f32(bytes[0]);
    default: ADD_FAILURE() << "type"; return 0;
  }
}

float read_out(DType t, const uint8_t* bytes) {
  if (t == DType::f32) {
    float v;
    std::memcpy(&v, bytes, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, bytes, 2);
  return t == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// Allowed |got - ref| = out_rel |ref| + acc x sum_k |a b|: output rounding plus the
// accumulation (tf32 rounds inputs to 10 mantissa bits; split-K partials may be rounded to
// a 16-bit output type, at most 16 of them).
struct Tolerance {
  double out_rel, acc;
};
Tolerance tolerance_of(const Case& c) {
  const double out = c.d_type == DType::f32 ? 0.0 : c.d_type == DType::bf16 ? 0x1.0p-8 : 0x1.0p-11;
  const double acc = c.precision == Precision::tf32 ? 2e-3 : c.d_type == DType::f32 ? 1e-5 : 16 * out;
  return {out, acc};
}

class CublasLtAlgos : public ::testing::TestWithParam<Case> {};

TEST_P(CublasLtAlgos, EveryValidConfigurationMatchesTheReference) {
  HETREC_REQUIRE_GPU();
  const Case c = GetParam();
  const DType in_type = cublaslt::operand_dtype(c.precision);
  const std::size_t es = dtype_size(in_type);
  cublaslt::Problem p;
  p.m = c.m;
  p.n = c.n;
  p.k = c.k;
  p.trans_a = c.ta;
  p.trans_b = c.tb;
  p.lda = c.ta ? c.m : c.k;
  p.ldb = c.tb ? c.k : c.n;
  p.ldd = c.n;
  p.d_type = c.d_type;
  p.precision = c.precision;

  // op(A)[i][l] and op(B)[l][j] in double, from the rounded stored values.
  Rng rng(0x5eed, static_cast<uint64_t>(c.precision) * 16 + static_cast<uint64_t>(c.d_type));
  std::vector<uint8_t> a_bytes(static_cast<std::size_t>(c.m * c.k) * es), b_bytes(static_cast<std::size_t>(c.k * c.n) * es);
  std::vector<double> a(static_cast<std::size_t>(c.m * c.k)), b(static_cast<std::size_t>(c.k * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t l = 0; l < c.k; ++l) {
      const int64_t at = c.ta ? l * c.m + i : i * c.k + l;
      a[static_cast<std::size_t>(i * c.k + l)] =
          round_to(in_type, static_cast<float>(rng.normal()), &a_bytes[static_cast<std::size_t>(at) * es]);
    }
  for (int64_t l = 0; l < c.k; ++l)
    for (int64_t j = 0; j < c.n; ++j) {
      const int64_t at = c.tb ? j * c.k + l : l * c.n + j;
      b[static_cast<std::size_t>(l * c.n + j)] =
          round_to(in_type, static_cast<float>(rng.normal()), &b_bytes[static_cast<std::size_t>(at) * es]);
    }
  const float scales[2] = {0.5f, 4.0f};  // fp8: A's and B's dequantisation scales
  const double scale = c.precision == Precision::fp8_e4m3 ? double(scales[0]) * scales[1] : 1.0;
  std::vector<double> ref(static_cast<std::size_t>(c.m * c.n)), mag(ref.size());
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0, s_abs = 0;
      for (int64_t l = 0; l < c.k; ++l) {
        const double t = a[static_cast<std::size_t>(i * c.k + l)] * b[static_cast<std::size_t>(l * c.n + j)];
        s += t;
        s_abs += std::fabs(t);
      }
      ref[static_cast<std::size_t>(i * c.n + j)] = scale * s;
      mag[static_cast<std::size_t>(i * c.n + j)] = scale * s_abs;
    }

  auto dev_a = testing::to_device(a_bytes), dev_b = testing::to_device(b_bytes);
  // Each scale in its own 16-byte-aligned slot (cuBLASLt refuses unaligned ones).
  constexpr std::size_t kScaleSlot = cublaslt::kScaleAlignment / sizeof(float);
  std::vector<float> scale_slots(2 * kScaleSlot, 0.0f);
  scale_slots[0] = scales[0];
  scale_slots[kScaleSlot] = scales[1];
  auto dev_scales = testing::to_device(scale_slots);
  const std::size_t d_bytes = ref.size() * dtype_size(c.d_type);
  gpu::DeviceBuffer dev_d(d_bytes), workspace(cublaslt::Gemm::kDefaultWorkspaceBytes);

  cublasLtHandle_t handle = nullptr;
  HETREC_BLAS_CHECK(cublasLtCreate(&handle));
  const auto desc = cublaslt::make_descriptors(p);
  cublaslt::Operands o;
  o.a_scale = dev_scales.as<float>();
  o.b_scale = dev_scales.as<float>() + kScaleSlot;
  cublaslt::set_operand_pointers(p, o, desc->desc);
  const auto e = cublaslt::enumerate_algos(handle, p, *desc, workspace.bytes());
  ASSERT_FALSE(e.valid.empty()) << "no valid configuration; " << e.algo_ids << " ids, " << e.checked << " checked";

  const Tolerance tol = tolerance_of(c);
  int splitk = 0;
  for (const auto& cand : e.valid) {
    splitk += cand.config.split_k > 1;
    gpu::memset_async(dev_d.get(), 0xFF, d_bytes, nullptr);  // NaN in fp32, bf16 and fp16
    const float alpha = 1.0f, beta = 0.0f;
    ASSERT_EQ(cublasLtMatmul(handle, desc->desc, &alpha, dev_b.get(), desc->a, dev_a.get(), desc->b, &beta, dev_d.get(),
                             desc->d, dev_d.get(), desc->d, &cand.algo, workspace.get(), workspace.bytes(), nullptr),
              CUBLAS_STATUS_SUCCESS)
        << cublaslt::algo_key(cand.config);
    const auto got = testing::to_host<uint8_t>(dev_d, d_bytes);
    double worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double g = read_out(c.d_type, &got[i * dtype_size(c.d_type)]);
      const double allowed = tol.out_rel * std::fabs(ref[i]) + tol.acc * mag[i] + 1e-30;
      const double excess = std::isfinite(g) ? std::fabs(g - ref[i]) / allowed : INFINITY;
      worst = std::max(worst, excess);
    }
    EXPECT_LE(worst, 1.0) << cublaslt::algo_key(cand.config) << " (error / allowed)";
  }

  // The heuristic's choice is one of the enumerated configurations, unless it uses a value
  // outside the enumeration's bounds (split-K not in {1,2,4,8,16}, a cluster shape outside
  // the fixed set, a custom option): then the test says which.
  const auto heuristic = cublaslt::select_algo(handle, desc->desc, desc->a, desc->b, desc->d, workspace.bytes(),
                                               cublaslt::Alignment{}, c.d_type != DType::f32);
  ASSERT_TRUE(heuristic.has_value());
  const auto hc = cublaslt::read_algo_config(*heuristic);
  std::string why;
  const bool in_bounds = cublaslt::within_enumeration_bounds(hc, e, &why);
  const bool found = cublaslt::find_config(e.valid, hc).has_value();
  EXPECT_TRUE(found || !in_bounds) << "heuristic " << cublaslt::algo_key(hc) << " is within the bounds but not among "
                                   << e.valid.size() << " enumerated configurations";
  if (!found) std::printf("heuristic %s is not enumerated: %s\n", cublaslt::algo_key(hc).c_str(), why.c_str());
  std::printf("%s %ldx%ldx%ld: %d ids, %d checked, %zu valid (%d split-K), %d over workspace; heuristic %s\n",
              cublaslt::precision_name(c.precision), static_cast<long>(c.m), static_cast<long>(c.n),
              static_cast<long>(c.k), e.algo_ids, e.checked, e.valid.size(), splitk, e.over_workspace,
              cublaslt::algo_key(hc).c_str());
  (void)cublasLtDestroy(handle);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CublasLtAlgos,
                         ::testing::Values(Case{Precision::fp32, DType::f32, 72, 40, 96, false, true},
                                           Case{Precision::tf32, DType::f32, 64, 48, 160, true, false},
                                           Case{Precision::bf16, DType::f32, 96, 56, 128, false, false},
                                           Case{Precision::bf16, DType::bf16, 64, 64, 256, false, true},
                                           Case{Precision::fp16, DType::f16, 48, 64, 96, true, false},
                                           Case{Precision::fp8_e4m3, DType::bf16, 64, 64, 128, false, true}),
                         [](const ::testing::TestParamInfo<Case>& param) {
                           const Case& c = param.param;
                           return std::string(cublaslt::precision_name(c.precision)) + "_d" +
                                  std::string(dtype_name(c.d_type)) + "_" + std::to_string(c.m) + "x" +
                                  std::to_string(c.n) + "x" + std::to_string(c.k) + (c.ta ? "_ta" : "") +
                                  (c.tb ? "_tb" : "");
                         });

}  // namespace
}  // namespace hetrec

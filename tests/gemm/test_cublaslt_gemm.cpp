// The cuBLASLt wrapper (gemm/cublaslt_gemm.h): every transpose combination, precision
// and epilogue against a double-precision reference on fresh random inputs, with the
// output poisoned first and leading dimensions wider than the rows; with cuBLASLt's
// heuristic choosing each configuration, with the analytical model choosing it
// (gemm/cublaslt_model_choice.h, CUDA builds), and with the learned ranker's router
// choosing it (the shipped ranker trained for this GPU, driver and cuBLASLt; skipped
// where none is).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <tuple>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "gemm_test_matrices.h"
#include "core/dtype.h"
#include "core/rng.h"
#include "core/text_file.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "hw/hardware.h"
#include "core/install_paths.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_ranker.h"
#if defined(HETREC_WITH_CUDA)
#include "gemm/cublaslt_model_choice.h"
#endif

namespace hetrec {
namespace {

using cublaslt::Epilogue;
using cublaslt::Precision;
using namespace gemm_test;

struct Case {
  int64_t m, n, k;
  bool ta, tb;
};

// ranked: the ranker's router; timed: its shortlist of kTimedShortlist timed at each new
// problem's first run (model.gemm_timed_shortlist).
enum class Selection { library, model, ranked, timed };
constexpr int kTimedShortlist = 5;

bool with_ranker(Selection s) { return s == Selection::ranked || s == Selection::timed; }

bool by_model(Selection s) { return s != Selection::library; }

// The shipped ranker trained for this GPU, driver and cuBLASLt ("" when none is).
std::string local_ranker_file() {
#if defined(HETREC_WITH_CUDA)
  return choose_gemm_ranker_file("", data_dir() + "/gemm/rankers", cublaslt::local_ranker_validators(0));
#else
  return "";
#endif
}

class CublasLtGemm : public ::testing::TestWithParam<std::tuple<Precision, Selection>> {
 protected:
  // The Gemm under test, choosing configurations as the parameter says.
  cublaslt::Gemm& make_gemm() {
    gemm_ = std::make_unique<cublaslt::Gemm>(alloc_);
    if (by_model(std::get<1>(GetParam()))) use_model_selection(*gemm_);
    return *gemm_;
  }
  // The model (or the ranker's router) chooses, keeping its choices in this test's selections file.
  void use_model_selection(cublaslt::Gemm& gemm) {
    const std::string dir = default_hardware_dir();
    Hardware hw = hardware_for_device(gpu::device_properties(0).name, dir, "test");
    GemmModelParams params = load_gemm_params_for(hw, dir + "/params");
    std::shared_ptr<const GemmRanker> ranker;
    if (with_ranker(std::get<1>(GetParam()))) {
#if defined(HETREC_WITH_CUDA)
      ranker = load_gemm_ranker(ranker_file_, cublaslt::local_ranker_validators(0));
#endif
    }
    gemm.use_model_selection(std::move(hw), std::move(params), cache_path_, ranker,
                             ranker ? gemm_ranker_id(ranker_file_) : std::string(),
                             std::get<1>(GetParam()) == Selection::timed ? kTimedShortlist : 0);
  }
  void TearDown() override {
    // Every problem got a configuration the way the parameter says (the model describes
    // some of the library's configurations for every problem here).
    if (!gemm_) return;
    const auto& counts = gemm_->selection_counts();
    if (std::get<1>(GetParam()) == Selection::model) {
      EXPECT_GT(counts.by_model, 0u);
      EXPECT_EQ(counts.by_library, 0u);
      EXPECT_TRUE(counts.ranker.empty());
    } else if (with_ranker(std::get<1>(GetParam()))) {
      // The router keeps the heuristic's top-1 where the model cannot describe it: that one
      // runs through the library path.
      EXPECT_GT(counts.by_model + counts.by_library, 0u);
      EXPECT_FALSE(counts.ranker.empty());
      // Timed: every problem the model chose for was run, so its shortlist was timed (or
      // its choice came from the selections file); untimed: none was.
      if (std::get<1>(GetParam()) == Selection::timed) {
        EXPECT_GT(counts.timed + counts.from_cache, 0u);
        EXPECT_LE(counts.timed_other, counts.timed);
      } else {
        EXPECT_EQ(counts.timed, 0u);
      }
    } else {
      EXPECT_EQ(counts.by_model, 0u);
    }
  }
  void SetUp() override {
    std::string test = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(test.begin(), test.end(), '/', '_');  // "PlainBiasAndReluEpilogues/fp32_model"
    cache_path_ = ::testing::TempDir() + "/gemm-selections-" + test + ".txt";
    std::remove(cache_path_.c_str());
    if (with_ranker(std::get<1>(GetParam()))) {
      HETREC_REQUIRE_GPU();  // the ranker is chosen by the device's name, driver and cuBLASLt
      ranker_file_ = local_ranker_file();
      if (ranker_file_.empty()) GTEST_SKIP() << "no shipped GEMM ranker was trained for this GPU, driver and cuBLASLt";
    }
  }
  gpu::CachingDeviceAllocator alloc_{0};
  std::unique_ptr<cublaslt::Gemm> gemm_;
  std::string cache_path_, ranker_file_;
};

// op(A) (m x k) from a stored matrix: A is m x k, or k x m when transposed.
double op(const HostMatrix& a, bool t, int64_t i, int64_t j) { return t ? a.at(j, i) : a.at(i, j); }

TEST_P(CublasLtGemm, PlainBiasAndReluEpilogues) {
  HETREC_REQUIRE_GPU();
  const Precision prec = std::get<0>(GetParam());
  const Precision operands = prec;  // generated and uploaded in this precision
  const auto check_all = [&](cublaslt::Gemm& gemm) {
  uint64_t seed = 1000;
  for (const Case c : {Case{64, 48, 40, false, true}, Case{257, 129, 33, false, false}, Case{33, 200, 1000, true, false},
                       Case{512, 256, 128, true, true}, Case{4096, 1, 512, false, true}}) {
    for (Epilogue e : {Epilogue::none, Epilogue::bias, Epilogue::relu_bias}) {
      for (float beta : {0.0f, 1.0f}) {
        if (beta != 0.0f && e != Epilogue::none) continue;
        const HostMatrix a = random_matrix(c.ta ? c.k : c.m, c.ta ? c.m : c.k, ++seed, operands);
        const HostMatrix b = random_matrix(c.tb ? c.n : c.k, c.tb ? c.k : c.n, ++seed, operands);
        HostMatrix d0 = random_matrix(c.m, c.n, ++seed, Precision::fp32);
        const HostMatrix bias = random_matrix(1, c.n, ++seed, Precision::fp32);
        gpu::DeviceBuffer da = upload(a, operands), db = upload(b, operands), dbias = testing::to_device(bias.v);
        gpu::DeviceBuffer dd = beta != 0.0f ? testing::to_device(d0.v) : testing::poisoned_floats(d0.v.size());
        cublaslt::Problem p;
        p.trans_a = c.ta;
        p.trans_b = c.tb;
        p.m = c.m;
        p.n = c.n;
        p.k = c.k;
        p.lda = a.ld;
        p.ldb = b.ld;
        p.ldd = d0.ld;
        p.precision = prec;
        p.epilogue = e;
        ASSERT_TRUE(gemm.supported(p)) << name(prec) << " epilogue " << static_cast<int>(e);
        cublaslt::Operands o;
        o.a = da.get();
        o.b = db.get();
        o.d = dd.get();
        o.beta = beta;
        o.bias = dbias.as<float>();
        gemm.run(p, o, nullptr);
        const auto got = testing::to_host<float>(dd, d0.v.size());
        double err = 0, norm = 0;
        for (int64_t i = 0; i < c.m; ++i) {
          for (int64_t j = 0; j < c.n; ++j) {
            double ref = 0;
            for (int64_t q = 0; q < c.k; ++q) ref += op(a, c.ta, i, q) * op(b, c.tb, q, j);
            if (beta != 0.0f) ref += d0.at(i, j);
            if (e != Epilogue::none) ref += bias.at(0, j);
            if (e == Epilogue::relu_bias) ref = std::max(ref, 0.0);
            const double g = got[static_cast<std::size_t>(i * d0.ld + j)];
            ASSERT_FALSE(std::isnan(g)) << "unwritten element " << i << "," << j;
            err += (g - ref) * (g - ref);
            norm += ref * ref;
          }
          for (int64_t j = c.n; j < d0.ld; ++j) {
            if (beta == 0.0f) {
              ASSERT_TRUE(std::isnan(got[static_cast<std::size_t>(i * d0.ld + j)])) << "wrote past the row";
            }
          }
        }
        EXPECT_LE(std::sqrt(err / (norm + 1e-30)), tolerance(prec) * std::sqrt(static_cast<double>(c.k)))
            << name(prec) << " m=" << c.m << " n=" << c.n << " k=" << c.k << " ta=" << c.ta << " tb=" << c.tb
            << " epilogue " << static_cast<int>(e) << " beta " << beta;
      }
    }
  }
  };
  cublaslt::Gemm& gemm = make_gemm();
  check_all(gemm);
  if (by_model(std::get<1>(GetParam()))) {
    // A second engine run: every choice comes from the selections file the first one wrote,
    // and the recorded configurations compute the same products.
    ASSERT_EQ(gemm.selection_counts().from_cache, 0u);
    // Timed: the shortlists were timed at the first runs, and the fastest were kept.
    if (std::get<1>(GetParam()) == Selection::timed) {
      EXPECT_GT(gemm.selection_counts().timed, 0u);
    }
    cublaslt::Gemm again(alloc_);
    use_model_selection(again);
    check_all(again);
    EXPECT_EQ(again.selection_counts().from_cache, gemm.selection_counts().by_model);
    EXPECT_EQ(again.selection_counts().by_model, gemm.selection_counts().by_model);
    // The heuristic's listed structs are found again in its list, to run as returned.
    EXPECT_EQ(again.selection_counts().as_returned, gemm.selection_counts().as_returned);
    EXPECT_NE(read_text_file(cache_path_).find(" library=a"), std::string::npos);
  }
}

// A 16-bit D with the bias in D's own type, as the 16-bit dense layers write the operand
// their successor reads: every element equals the product plus the bias (and ReLU),
// rounded once to the 16-bit type, to within one unit of that type. Shapes include the
// small ones cuBLASLt has no fp32-bias algorithm for.
TEST_P(CublasLtGemm, SixteenBitOutputWithSixteenBitBias) {
  HETREC_REQUIRE_GPU();
  const Precision prec = std::get<0>(GetParam());
  if (!sixteen_bit(prec)) GTEST_SKIP() << "16-bit D goes with 16-bit operands";
  cublaslt::Gemm& gemm = make_gemm();
  uint64_t seed = 3000;
  for (const Case c : {Case{96, 64, 96, false, true}, Case{128, 64, 96, false, true}, Case{257, 136, 72, false, true},
                       Case{1024, 512, 1024, false, true}}) {
    for (Epilogue e : {Epilogue::none, Epilogue::bias, Epilogue::relu_bias}) {
      const HostMatrix a = random_matrix(c.m, c.k, ++seed, prec);
      const HostMatrix b = random_matrix(c.n, c.k, ++seed, prec);
      const HostMatrix bias = random_matrix(1, c.n, ++seed, prec);  // exact 16-bit values
      std::vector<uint16_t> poison(static_cast<std::size_t>(c.m * c.n), prec == Precision::bf16 ? 0x7FC0 : 0x7E00);
      gpu::DeviceBuffer da = upload(a, prec), db = upload(b, prec), dbias = upload(bias, prec);
      gpu::DeviceBuffer dd = testing::to_device(poison);
      cublaslt::Problem p;
      p.trans_b = true;
      p.m = c.m;
      p.n = c.n;
      p.k = c.k;
      p.lda = a.ld;
      p.ldb = b.ld;
      p.ldd = c.n;
      p.d_type = prec == Precision::bf16 ? DType::bf16 : DType::f16;
      p.bias_type = p.d_type;
      p.precision = prec;
      p.epilogue = e;
      ASSERT_TRUE(gemm.supported(p)) << cublaslt::shape_text(p);
      cublaslt::Operands o;
      o.a = da.get();
      o.b = db.get();
      o.d = dd.get();
      o.bias = dbias.get();
      gemm.run(p, o, nullptr);
      const auto got = testing::to_host<uint16_t>(dd, poison.size());
      std::vector<double> ref(poison.size());
      double ref_sq = 0.0;
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          double r = 0;
          for (int64_t q = 0; q < c.k; ++q) r += a.at(i, q) * b.at(j, q);
          if (e != Epilogue::none) r += bias.at(0, j);
          if (e == Epilogue::relu_bias) r = std::max(r, 0.0);
          ref[static_cast<std::size_t>(i * c.n + j)] = r;
          ref_sq += r * r;
        }
      }
      const double rms = std::sqrt(ref_sq / static_cast<double>(ref.size()));
      // One unit of the 16-bit type at x is 2^-7 |x| (bf16), 2^-10 |x| (fp16). The library
      // may round the product to that type before adding the bias, and a split-K reduction
      // may round its partials, so an element may be off by a few units of the larger of
      // its value and the bias, plus one unit of the typical magnitude; the whole matrix
      // must still be within one unit in RMS.
      const double unit = prec == Precision::bf16 ? 0x1p-7 : 0x1p-10;
      double err_sq = 0.0;
      for (int64_t i = 0; i < c.m; ++i) {
        for (int64_t j = 0; j < c.n; ++j) {
          const double r = ref[static_cast<std::size_t>(i * c.n + j)];
          const double g = from_bits(got[static_cast<std::size_t>(i * c.n + j)], prec);
          ASSERT_FALSE(std::isnan(g)) << "unwritten element " << i << "," << j;
          const double bias_mag = e == Epilogue::none ? 0.0 : std::fabs(bias.at(0, j));
          ASSERT_NEAR(g, r, 2 * unit * (std::fabs(r) + bias_mag) + unit * rms)
              << cublaslt::shape_text(p) << " at " << i << "," << j;
          err_sq += (g - r) * (g - r);
          if (e == Epilogue::relu_bias) {
            ASSERT_GE(g, 0.0);
          }
        }
      }
      EXPECT_LE(std::sqrt(err_sq / ref_sq), unit) << cublaslt::shape_text(p);
    }
  }
}

// relu_aux_bias stores the ReLU mask; drelu_bgrad applies it to another product of the
// same output shape and sums the columns; drelu applies it alone; bgrad_a sums op(A)'s rows
// (a weight GEMM's bias gradient). Combinations the library does not fuse are reported, not failed: the
// model does not depend on them.
TEST_P(CublasLtGemm, BackwardEpilogues) {
  HETREC_REQUIRE_GPU();
  const Precision prec = std::get<0>(GetParam());
  const Precision operands = prec;  // generated and uploaded in this precision
  cublaslt::Gemm& gemm = make_gemm();
  const int64_t m = 384, n = 200, k1 = 96, k2 = 160;
  const HostMatrix x = random_matrix(m, k1, 1, operands), w = random_matrix(n, k1, 2, operands);
  const HostMatrix bias = random_matrix(1, n, 3, Precision::fp32);
  const HostMatrix g = random_matrix(m, k2, 4, operands), w2 = random_matrix(k2, n, 5, operands);
  gpu::DeviceBuffer dx = upload(x, operands), dw = upload(w, operands), dbias = testing::to_device(bias.v),
                    dg = upload(g, operands), dw2 = upload(w2, operands);
  gpu::DeviceBuffer z = testing::poisoned_floats(static_cast<std::size_t>(m * n));
  gpu::DeviceBuffer aux(cublaslt::relu_aux_bytes(m, n));
  cublaslt::Problem fwd;
  fwd.m = m;
  fwd.n = n;
  fwd.k = k1;
  fwd.trans_b = true;
  fwd.lda = x.ld;
  fwd.ldb = w.ld;
  fwd.ldd = n;
  fwd.precision = prec;
  fwd.epilogue = Epilogue::relu_aux_bias;
  cublaslt::Problem bwd = fwd;
  bwd.k = k2;
  bwd.trans_b = false;
  bwd.lda = g.ld;
  bwd.ldb = w2.ld;
  bwd.epilogue = Epilogue::drelu_bgrad;
  if (!gemm.supported(fwd) || !gemm.supported(bwd)) {
    std::printf("[ INFO ] %s: relu_aux_bias supported %d, drelu_bgrad supported %d\n", name(prec), gemm.supported(fwd),
                gemm.supported(bwd));
  } else {
    cublaslt::Operands of;
    of.a = dx.get();
    of.b = dw.get();
    of.d = z.get();
    of.bias = dbias.as<float>();
    of.aux = aux.get();
    gemm.run(fwd, of, nullptr);
    gpu::DeviceBuffer dz = testing::poisoned_floats(static_cast<std::size_t>(m * n));
    gpu::DeviceBuffer bgrad = testing::poisoned_floats(static_cast<std::size_t>(n));
    cublaslt::Operands ob;
    ob.a = dg.get();
    ob.b = dw2.get();
    ob.d = dz.get();
    ob.bias_grad = bgrad.as<float>();
    ob.aux = aux.get();
    gemm.run(bwd, ob, nullptr);
    const auto zf = testing::to_host<float>(z, static_cast<std::size_t>(m * n));
    const auto dzf = testing::to_host<float>(dz, static_cast<std::size_t>(m * n));
    const auto bg = testing::to_host<float>(bgrad, static_cast<std::size_t>(n));
    std::vector<double> col(static_cast<std::size_t>(n), 0.0), col_abs(static_cast<std::size_t>(n), 0.0);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double pre = bias.at(0, j);
        for (int64_t q = 0; q < k1; ++q) pre += x.at(i, q) * w.at(j, q);
        const bool on = pre > 0;
        const double zref = on ? pre : 0.0;
        const double z_tol = 10 * tolerance(prec) * std::sqrt(static_cast<double>(k1)) + 1e-4;
        ASSERT_NEAR(zf[static_cast<std::size_t>(i * n + j)], zref, z_tol);
        double prod = 0;
        for (int64_t q = 0; q < k2; ++q) prod += g.at(i, q) * w2.at(q, j);
        // Near zero the GPU's pre-activation may fall on the other side: accept either.
        const bool ambiguous = std::fabs(pre) < z_tol;
        const double want = on ? prod : 0.0;
        const double got = dzf[static_cast<std::size_t>(i * n + j)];
        if (!ambiguous) {
          ASSERT_NEAR(got, want, 10 * tolerance(prec) * std::sqrt(static_cast<double>(k2)) + 1e-4) << i << "," << j;
        }
        col[static_cast<std::size_t>(j)] += got;
        col_abs[static_cast<std::size_t>(j)] += std::fabs(got);
      }
    for (int64_t j = 0; j < n; ++j)
      ASSERT_NEAR(bg[static_cast<std::size_t>(j)], col[static_cast<std::size_t>(j)], 1e-5 * col_abs[static_cast<std::size_t>(j)] + 1e-5) << j;

    // The mask alone (drelu): the same masked product, and no bias vector is touched.
    cublaslt::Problem masked = bwd;
    masked.epilogue = Epilogue::drelu;
    std::printf("[ INFO ] %s: drelu supported %d\n", name(prec), gemm.supported(masked));
    if (gemm.supported(masked)) {
      gpu::DeviceBuffer dz2 = testing::poisoned_floats(static_cast<std::size_t>(m * n));
      cublaslt::Operands om;
      om.a = dg.get();
      om.b = dw2.get();
      om.d = dz2.get();
      om.aux = aux.get();
      gemm.run(masked, om, nullptr);
      const auto dz2f = testing::to_host<float>(dz2, static_cast<std::size_t>(m * n));
      const double tol = 10 * tolerance(prec) * std::sqrt(static_cast<double>(k2)) + 1e-4;
      for (std::size_t e = 0; e < dz2f.size(); ++e) ASSERT_NEAR(dz2f[e], dzf[e], tol) << e;
    }
  }

  // Weight-gradient GEMM with the bias gradient of A's rows: dW = dZ^T X, db = sum_b dZ.
  cublaslt::Problem wg;
  wg.trans_a = true;
  wg.m = k2;
  wg.n = k1;
  wg.k = m;
  wg.lda = g.ld;
  wg.ldb = x.ld;
  wg.ldd = k1;
  wg.precision = prec;
  wg.epilogue = Epilogue::bgrad_a;
  if (!gemm.supported(wg)) {
    std::printf("[ INFO ] %s: bgrad_a (BGRADB) not supported for a transposed A\n", name(prec));
    return;
  }
  gpu::DeviceBuffer dW = testing::poisoned_floats(static_cast<std::size_t>(k2 * k1));
  gpu::DeviceBuffer db = testing::poisoned_floats(static_cast<std::size_t>(k2));
  cublaslt::Operands ow;
  ow.a = dg.get();
  ow.b = dx.get();
  ow.d = dW.get();
  ow.bias_grad = db.as<float>();
  gemm.run(wg, ow, nullptr);
  const auto W = testing::to_host<float>(dW, static_cast<std::size_t>(k2 * k1));
  const auto B = testing::to_host<float>(db, static_cast<std::size_t>(k2));
  for (int64_t i = 0; i < k2; ++i) {
    double s = 0, sa = 0;
    for (int64_t r = 0; r < m; ++r) {
      s += g.at(r, i);
      sa += std::fabs(g.at(r, i));
    }
    ASSERT_NEAR(B[static_cast<std::size_t>(i)], s, 1e-5 * sa + 1e-5) << i;
    for (int64_t j = 0; j < k1; j += 7) {
      double ref = 0;
      for (int64_t r = 0; r < m; ++r) ref += g.at(r, i) * x.at(r, j);
      ASSERT_NEAR(W[static_cast<std::size_t>(i * k1 + j)], ref, tolerance(prec) * 50 * std::sqrt(m) + 1e-4) << i << "," << j;
    }
  }
}

// Selection by the model needs cuBLASLt's configuration enumeration (CUDA builds).
#if defined(HETREC_WITH_CUDA)
const auto kSelections = ::testing::Values(Selection::library, Selection::model, Selection::ranked, Selection::timed);
#else
const auto kSelections = ::testing::Values(Selection::library);
#endif

INSTANTIATE_TEST_SUITE_P(
    Precisions, CublasLtGemm,
    ::testing::Combine(::testing::Values(Precision::fp32, Precision::tf32, Precision::bf16, Precision::fp16), kSelections),
    [](const ::testing::TestParamInfo<std::tuple<Precision, Selection>>& param_info) {
      return std::string(name(std::get<0>(param_info.param))) +
             (std::get<1>(param_info.param) == Selection::model    ? "_model"
              : std::get<1>(param_info.param) == Selection::ranked ? "_ranked"
              : std::get<1>(param_info.param) == Selection::timed  ? "_timed"
                                                                  : "_library");
    });

}  // namespace
}  // namespace hetrec

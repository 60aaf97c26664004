// The GPU model with tuned small-GEMM winners: every GEMM of the narrow MLP layers (the
// 13-wide input layer, a 16-wide layer, the 1-wide logit layer) runs the small-GEMM
// kernel instead of cuBLASLt, and training gives the same losses as the cuBLASLt path
// within a stated tolerance; 16-bit layers stay on cuBLASLt; stale winners are ignored.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "../gpu/device_test_support.h"
#include "core/rng.h"
#include "gemm_perf/gemm_ranker.h"
#include "gpu/device.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "model/gpu/gpu_dlrm.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tune/winners.h"

namespace hetrec::tune {
namespace {

// Each GEMM of the small-GEMM kernel adds its products in another order than cuBLASLt,
// so an output differs by at most the fp32 summation bound, 2 (k + 2) 2^-24 sum|a b|
// (k <= 32 here: about 4e-6 of the magnitudes), and the training steps carry such
// differences on through the parameters. 1e-5 of the loss leaves room for that over
// five steps and is far below what a wrong GEMM moves (a dropped input or batch row
// changes the loss by orders of magnitude more). With bf16 the fp32 layers' outputs feed
// 16-bit layers, where such a difference can flip an operand's rounding (2^-8 of that
// element), hence 1e-3 there.
constexpr double kLossRelTolerance = 1e-5;
constexpr double kLossRelToleranceBf16 = 1e-3;
constexpr int kSteps = 5;

std::vector<TableConfig> tables() {
  std::vector<TableConfig> t(3);
  const int64_t rows[] = {5000, 300, 20000};
  const int hot[] = {3, 1, 8};
  for (int i = 0; i < 3; ++i) {
    t[i].name = "T" + std::to_string(i);
    t[i].rows = rows[i];
    t[i].hotness = hot[i];
  }
  return t;
}

// 13 dense features into a bottom MLP of `hidden` and 16 wide layers, a top MLP of `hidden`
// and 1 wide layers, three small tables of dim 16.
ModelConfig narrow_model(Arch arch, int hidden, uint64_t seed) {
  ModelConfig m;
  m.arch = arch;
  m.num_dense = 13;
  m.embedding_dim = 16;
  m.tables = tables();
  m.bottom_mlp = {hidden, 16};
  m.top_mlp = {hidden, 1};
  m.init_seed = seed;
  return m;
}

Batch random_batch(const ModelConfig& m, int64_t size, uint64_t seed) {
  Batch batch;
  batch.reset(size, m.num_dense, m.num_tables());
  Rng rng(seed);
  for (float& x : batch.dense) x = static_cast<float>(rng.uniform());
  for (float& y : batch.labels) y = rng.uniform() < 0.3 ? 1.0f : 0.0f;
  for (int t = 0; t < m.num_tables(); ++t)
    for (int64_t s = 0; s < size; ++s) {
      for (int k = 0; k < m.tables[static_cast<std::size_t>(t)].hotness; ++k)
        batch.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(m.tables[static_cast<std::size_t>(t)].rows))));
      batch.offsets[static_cast<std::size_t>(t * size + s + 1)] = static_cast<int32_t>(batch.ids.size());
    }
  return batch;
}

// Trains both models kSteps steps on `batch`: b's losses equal a's within `tolerance`
// (relative) at every step.
void expect_same_losses(GpuModel& a, GpuModel& b, const Batch& batch, const StepRates& rates, double tolerance,
                        const std::string& what) {
  for (int step = 0; step < kSteps; ++step) {
    const double la = a.train_step(batch, rates), lb = b.train_step(batch, rates);
    ASSERT_TRUE(std::isfinite(lb)) << what << " step " << step;
    EXPECT_NEAR(lb, la, tolerance * std::fabs(la)) << what << " step " << step;
  }
}

TEST(SmallGemmEngineGpu, NarrowLayersRunTheTunedKernelWithTheSameLosses) {
  HETREC_REQUIRE_GPU();
  // bottom 13 -> 32 (narrow input) -> 16 (narrow output), top ... -> 32 -> 1 (the logit)
  ModelConfig m = narrow_model(Arch::dcnv2, 32, 7);
  m.cross_layers = 1;
  m.cross_rank = 16;
  OptimConfig optim;
  optim.dense = OptimizerKind::adagrad;
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());

  // A winner (the default parameters) for every narrow-layer GEMM the engine runs.
  WinnersStore store;
  std::vector<SmallGemmLayerGemm> gemms = small_gemm_mlp_gemms("bottom_mlp", 13, m.bottom_mlp, true, false, DType::f32);
  for (const auto& g : small_gemm_mlp_gemms("top_mlp", m.interaction_width(), m.top_mlp, false, true, DType::f32))
    gemms.push_back(g);
  ASSERT_EQ(gemms.size(), 2u + 3u + 3u);
  for (const auto& g : gemms) {
    Winner w;
    w.key = {kSmallGemmKernel, g.shape.key(), dev.name,
             std::to_string(dev.compute_major) + "." + std::to_string(dev.compute_minor), gpu::driver_version(),
             kernels::small_gemm_sources_hash()};
    w.params = small_gemm_parameters(kernels::default_small_gemm_variant(g.shape));
    w.time_us = 1.0;
    store.offer(w);
  }
  const auto dir = std::filesystem::temp_directory_path() / ("hetrec_small_gemm_engine_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "winners.json").string();
  store.save(file);

  const Batch batch = random_batch(m, 1000, 3);  // not a multiple of any rows per block
  const StepRates rates{0.05f, 0.05f};
  for (const cublaslt::Precision precision : {cublaslt::Precision::fp32, cublaslt::Precision::bf16}) {
    GpuModelOptions plain, tuned;
    plain.precision = tuned.precision = precision;
    tuned.tuned_kernels_file = file;
    // With bf16 the library runs the narrow (fp32-operand) layers on the TF32 pipe and the
    // kernels in fp32: plain SGD keeps that rounding difference in proportion, where
    // Adagrad's first update (+-lr per parameter whatever the gradient's size) would flip
    // the near-zero gradients' signs.
    OptimConfig o = optim;
    if (precision == cublaslt::Precision::bf16) o.dense = OptimizerKind::sgd;
    auto a = make_gpu_model(m, o, plain);
    auto b = make_gpu_model(m, o, tuned);
    const std::string d = b->describe();
    EXPECT_EQ(a->describe().find("small-GEMM"), std::string::npos);
    for (const char* role : {"bottom_mlp.0 forward", "bottom_mlp.0 weight gradient", "top_mlp.1 forward",
                             "top_mlp.1 weight gradient", "top_mlp.1 input gradient"})
      EXPECT_NE(d.find(role), std::string::npos) << role << " in " << d;
    // bottom_mlp.1 (32 -> 16) is a 16-bit layer with bf16: it stays on cuBLASLt.
    EXPECT_EQ(d.find("bottom_mlp.1 forward") == std::string::npos, precision == cublaslt::Precision::bf16) << d;
    expect_same_losses(*a, *b, batch, rates,
                       precision == cublaslt::Precision::bf16 ? kLossRelToleranceBf16 : kLossRelTolerance,
                       std::string(cublaslt::precision_name(precision)));
  }

  // Winners measured with another driver are stale: every GEMM stays on cuBLASLt.
  WinnersStore stale;
  for (Winner w : store.winners()) {
    w.key.driver_version += 1;
    stale.offer(w);
  }
  stale.save(file);
  GpuModelOptions tuned;
  tuned.tuned_kernels_file = file;
  const std::string d = make_gpu_model(m, optim, tuned)->describe();
  EXPECT_EQ(d.find("small-GEMM kernel (tuned)"), std::string::npos) << d;
  EXPECT_NE(d.find("8 stale small-GEMM winner(s) ignored"), std::string::npos) << d;
  std::filesystem::remove_all(dir);
}

// model.gemm_selection = "model" with no winners file: the model ranks the small-GEMM
// variants of every narrow fp32 GEMM at the first batch and, per batch, runs the kernel
// only where it predicts it faster than its choice among cuBLASLt's configurations.
// Whatever runs, the losses are those of the library's path; every decision follows the
// predictions it records.
TEST(SmallGemmEngineGpu, ModelSelectionChoosesBetweenTheKernelsByPrediction) {
  HETREC_REQUIRE_GPU();
  // bottom 13 -> 64 (narrow input) -> 16 (narrow output), top ... -> 64 -> 1 (the logit)
  const ModelConfig m = narrow_model(Arch::dlrm, 64, 11);
  OptimConfig optim;
  optim.dense = OptimizerKind::adagrad;
  const StepRates rates{0.05f, 0.05f};
  ModelConfig by_model = m;
  by_model.gemm_selection = GemmSelection::model;
  by_model.gemm_cache = "none";
  for (const int64_t size : {int64_t{1000}, int64_t{65536}}) {
    const Batch batch = random_batch(m, size, 5);
    auto a = make_gpu_model(m, optim);
    auto b = make_gpu_model(by_model, optim);
    expect_same_losses(*a, *b, batch, rates, kLossRelTolerance, "batch " + std::to_string(size));
    EXPECT_TRUE(a->small_gemm_decisions().empty());
    const auto decisions = b->small_gemm_decisions();
    // bottom_mlp.0: forward, weight gradient; bottom_mlp.1: forward, weight gradient, input
    // gradient; top_mlp.1: the same three. At 1000 rows the weight gradients have no
    // variant (the reduce kind's partial sums would outweigh the rows it reads): cuBLASLt
    // runs them without a decision.
    EXPECT_EQ(decisions.size(), size >= 65536 ? 8u : 5u) << "batch " << size;
    int small = 0;
    for (const auto& d : decisions) {
      EXPECT_EQ(d.batch, size);
      EXPECT_GT(d.small_gemm_us, 0.0) << d.gemm;
      EXPECT_EQ(d.small_gemm, !d.cublaslt_us || d.small_gemm_us < *d.cublaslt_us) << d.gemm;
      small += d.small_gemm;
      std::printf("batch %6lld  %-28s %-9s small-GEMM %.2f us, cuBLASLt %s\n", static_cast<long long>(size),
                  d.gemm.c_str(), d.small_gemm ? "small" : "cuBLASLt", d.small_gemm_us,
                  d.cublaslt_us ? (std::to_string(*d.cublaslt_us) + " us").c_str() : "(its heuristic's choice)");
    }
    EXPECT_GT(small, 0) << "batch " << size;
    EXPECT_NE(b->describe().find("small-GEMM kernels where the model predicts them faster"), std::string::npos)
        << b->describe();
  }
}

// With a timed shortlist (model.gemm_timed_shortlist), each decision between a small-GEMM
// kernel and cuBLASLt is timed once on the operands at hand: both measured times are
// recorded, and the kernel runs only where it measured at least kShortlistMargin faster.
// The losses stay those of the library's path.
TEST(SmallGemmEngineGpu, TimedShortlistTimesTheKernelsAgainstCublasLt) {
  HETREC_REQUIRE_GPU();
  const ModelConfig m = narrow_model(Arch::dlrm, 64, 13);
  OptimConfig optim;
  optim.dense = OptimizerKind::adagrad;
  const StepRates rates{0.05f, 0.05f};
  ModelConfig timed = m;
  timed.gemm_selection = GemmSelection::model;
  timed.gemm_cache = "none";
  timed.gemm_timed_shortlist = 5;
  const Batch batch = random_batch(m, 65536, 9);
  auto a = make_gpu_model(m, optim);
  auto b = make_gpu_model(timed, optim);
  expect_same_losses(*a, *b, batch, rates, kLossRelTolerance, "timed shortlist");
  if (b->gemm_selection_counts().ranker.empty())
    GTEST_SKIP() << "no GEMM ranker ships for " << gpu::device_properties(0).name << ": nothing is timed";
  const auto decisions = b->small_gemm_decisions();
  EXPECT_EQ(decisions.size(), 8u);
  for (const auto& d : decisions) {
    ASSERT_TRUE(d.small_gemm_measured_us && d.cublaslt_measured_us) << d.gemm;
    EXPECT_GT(*d.small_gemm_measured_us, 0.0) << d.gemm;
    EXPECT_GT(*d.cublaslt_measured_us, 0.0) << d.gemm;
    EXPECT_EQ(d.small_gemm, *d.small_gemm_measured_us < (1.0 - kShortlistMargin) * *d.cublaslt_measured_us) << d.gemm;
    std::printf("%-28s %-9s measured small-GEMM %.2f us, cuBLASLt %.2f us (predicted %.2f, %s)\n", d.gemm.c_str(),
                d.small_gemm ? "small" : "cuBLASLt", *d.small_gemm_measured_us, *d.cublaslt_measured_us,
                d.small_gemm_us, d.cublaslt_us ? std::to_string(*d.cublaslt_us).c_str() : "unpriced");
  }
}

}  // namespace
}  // namespace hetrec::tune

// The gate on the device: correct variants pass verification against the double-precision
// reference, deliberately wrong kernel sources (one drops the last id of every bag, one
// the last term of every dot product, one the last occurrence of every row the sparse
// update sums, one the last feature's pair terms in the dot backward) are rejected, and
// never stored, a short tuning run writes its attempt
// log, winners and results, and the GPU model runs stored winners in place of the
// built-in kernels with the same results.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include <unistd.h>

#include "../gpu/device_test_support.h"
#include "gate_test_support.h"
#include "core/rng.h"
#include "gpu/device.h"
#include "tunable/dot_interaction/dot_interaction_backward_tuned.h"
#include "tunable/dot_interaction/dot_interaction_tuned.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "kernels/rtc_sources.h"
#include "kernels/embedding_bag_backward.h"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "model/gpu/gpu_dlrm.h"
#include "tune/gate.h"
#include "tunable/dot_interaction/dot_backward_bench.h"
#include "tunable/dot_interaction/dot_interaction_bench.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"
#include "tunable/sparse_update/sparse_update_bench.h"
#include "tune/gpu/tune_session.h"
#include "tune/kernel_families.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::tune {
namespace {

std::vector<TableConfig> small_tables() {
  std::vector<TableConfig> t(4);
  const int64_t rows[] = {5000, 300, 7, 20000};
  const int hot[] = {3, 1, 20, 8};
  for (int i = 0; i < 4; ++i) {
    t[i].name = "T" + std::to_string(i);
    t[i].rows = rows[i];
    t[i].hotness = hot[i];
    t[i].variable_bags = i == 3;
    t[i].pooling = i == 1 ? Pooling::mean : Pooling::sum;
  }
  return t;
}

ForwardLaunch tuned_launch(const kernels::TunedEmbeddingForward& k) {
  return [&k](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b, const kernels::PooledView& p,
              int32_t* bad, gpu::stream_t s) { k.launch(t, b, p, bad, s); };
}

TEST(TuneGateGpu, CorrectVariantsPassAndAWrongKernelIsRejectedAndNeverStored) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  for (DType rows : {DType::f32, DType::bf16}) {
    EmbeddingForwardBench bench(small_tables(), 64, rows, 700, Rng(7).next_u64() ^ static_cast<uint64_t>(rows), 2);
    const kernels::EmbeddingForwardShape shape = bench.workload().shape;
    const ForwardCheck builtin = bench.verify([](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b,
                                                 const kernels::PooledView& p, int32_t* bad, gpu::stream_t s) {
      kernels::embedding_bag_forward(t, b, p, bad, s);
    });
    ASSERT_TRUE(builtin.ok) << builtin.reason;
    for (const kernels::EmbeddingForwardVariant v :
         {kernels::kDefaultForwardVariant, kernels::EmbeddingForwardVariant{4, 16, 1, 64},
          kernels::EmbeddingForwardVariant{8, 8, 8, 512}, kernels::EmbeddingForwardVariant{16, 4, 2, 128}}) {
      if (!kernels::forward_variant_problem(shape, v, 32).empty()) continue;
      const kernels::TunedEmbeddingForward k(shape, v, dev.compute_major, dev.compute_minor);
      const ForwardCheck c = bench.verify(tuned_launch(k));
      EXPECT_TRUE(c.ok) << shape.key() << " vec_bytes=" << v.vec_bytes << " lanes=" << v.lanes << ": " << c.reason;
      EXPECT_GT(bench.median_us(tuned_launch(k), 3), 0.0);
    }

    // The wrong candidate: the kernel source with the last id of every bag dropped.
    std::string header;
    for (const gpu::RtcHeader& h : kernels::rtc_source_files())
      if (h.name == "tunable/embedding_forward/embedding_bag_forward_kernel.cuh") header = h.text;
    const std::string right = "if (p + k < end) {";
    ASSERT_NE(header.find(right), std::string::npos);
    header.replace(header.find(right), right.size(), "if (p + k < end - 1) {");
    const kernels::TunedEmbeddingForward wrong(shape, kernels::kDefaultForwardVariant, dev.compute_major,
                                               dev.compute_minor, header);
    const ForwardCheck c = bench.verify(tuned_launch(wrong));
    EXPECT_FALSE(c.ok);
    EXPECT_FALSE(c.reason.empty());

    // It runs, and may even be fast: the gate must keep it out on its verdict.
    expect_never_stored(kEmbeddingForwardKernel, shape.key(), kernels::rtc_sources_hash(),
                        forward_parameters(kernels::kDefaultForwardVariant, shape, 32), c, header,
                        bench.median_us(tuned_launch(wrong), 3));
  }
}

TEST(TuneGateGpu, DotInteractionVariantsPassAndAWrongKernelIsRejected) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  for (const bool self : {false, true}) {
    const kernels::DotForwardShape shape{9, 48, self};
    DotForwardBench bench(shape, 1001, Rng(3).next_u64() + (self ? 1 : 0), 2);  // a partial last block
    const ForwardCheck builtin = bench.verify([](const kernels::DotInteractionShape& s, const float* f, int64_t fs,
                                                 float* out, int64_t os, gpu::stream_t st) {
      kernels::dot_interaction_forward(s, f, fs, out, os, st);
    });
    ASSERT_TRUE(builtin.ok) << builtin.reason;
    for (const kernels::DotForwardVariant v : {kernels::kDefaultDotForwardVariant, kernels::DotForwardVariant{64, 8, 0},
                                               kernels::DotForwardVariant{512, 4, 1}}) {
      const kernels::TunedDotForward k(shape, v, dev.compute_major, dev.compute_minor);
      const ForwardCheck c = bench.verify([&k](const kernels::DotInteractionShape& s, const float* f, int64_t fs,
                                               float* out, int64_t os, gpu::stream_t st) {
        k.launch(s, f, fs, out, os, st);
      });
      EXPECT_TRUE(c.ok) << shape.key() << " block " << v.block_threads << " samples " << v.samples_per_block << ": "
                        << c.reason;
    }
    // The wrong candidate: each dot product misses its last term.
    std::string header;
    for (const gpu::RtcHeader& h : kernels::rtc_source_files())
      if (h.name == "tunable/dot_interaction/dot_interaction_kernel.cuh") header = h.text;
    const std::string right = "for (int k = 0; k < dim; ++k) acc = fmaf(xi[k], xj[k], acc);";
    ASSERT_NE(header.find(right), std::string::npos);
    header.replace(header.find(right), right.size(), "for (int k = 0; k < dim - 1; ++k) acc = fmaf(xi[k], xj[k], acc);");
    const kernels::TunedDotForward wrong(shape, kernels::kDefaultDotForwardVariant, dev.compute_major,
                                         dev.compute_minor, header);
    const ForwardCheck c = bench.verify([&wrong](const kernels::DotInteractionShape& s, const float* f, int64_t fs,
                                                 float* out, int64_t os, gpu::stream_t st) {
      wrong.launch(s, f, fs, out, os, st);
    });
    EXPECT_FALSE(c.ok);
    EXPECT_NE(c.reason.find("differs from the reference"), std::string::npos) << c.reason;
  }
}

DotBackwardLaunch dot_backward_launch(const kernels::TunedDotBackward& k) {
  return [&k](const kernels::DotInteractionShape& s, const float* f, int64_t fs, const float* g, int64_t gs, float* df,
              int64_t dfs, gpu::stream_t st) { k.launch(s, f, fs, g, gs, df, dfs, st); };
}

TEST(TuneGateGpu, DotInteractionBackwardVariantsPassAndAWrongKernelIsRejectedAndNeverStored) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  for (const bool self : {false, true}) {
    const kernels::DotForwardShape shape{9, 48, self};
    // 1001 samples: a partial last block for every samples_per_block above 1.
    DotBackwardBench bench(shape, 1001, Rng(13).next_u64() + (self ? 1 : 0), 2);
    const ForwardCheck builtin = bench.verify([](const kernels::DotInteractionShape& s, const float* f, int64_t fs,
                                                 const float* g, int64_t gs, float* df, int64_t dfs, gpu::stream_t st) {
      kernels::dot_interaction_backward(s, f, fs, g, gs, df, dfs, st);
    });
    ASSERT_TRUE(builtin.ok) << builtin.reason;
    // Rows per thread 2, 4 and 8 with 9 features: the last group reads rows past F.
    for (const kernels::DotBackwardVariant v :
         {kernels::kDefaultDotBackwardVariant, kernels::DotBackwardVariant{64, 8, 0, 8},
          kernels::DotBackwardVariant{512, 4, 1, 4}, kernels::DotBackwardVariant{128, 2, 0, 2}}) {
      const kernels::TunedDotBackward k(shape, v, dev.compute_major, dev.compute_minor);
      const ForwardCheck c = bench.verify(dot_backward_launch(k));
      EXPECT_TRUE(c.ok) << shape.key() << " " << describe(dot_backward_parameters(v)) << ": " << c.reason;
      EXPECT_GT(bench.median_us(dot_backward_launch(k), 3), 0.0);
    }
    // The wrong candidate: no feature gets the last feature's pair terms.
    std::string header;
    for (const gpu::RtcHeader& h : kernels::rtc_source_files())
      if (h.name == "tunable/dot_interaction/dot_interaction_backward_kernel.cuh") header = h.text;
    const std::string right = "for (int j = 0; j < num_features; ++j) {";
    ASSERT_NE(header.find(right), std::string::npos);
    header.replace(header.find(right), right.size(), "for (int j = 0; j < num_features - 1; ++j) {");
    const kernels::TunedDotBackward wrong(shape, kernels::kDefaultDotBackwardVariant, dev.compute_major,
                                          dev.compute_minor, header);
    const ForwardCheck c = bench.verify(dot_backward_launch(wrong));
    EXPECT_FALSE(c.ok);
    EXPECT_NE(c.reason.find("differs from the reference"), std::string::npos) << c.reason;

    // It runs, and may even be fast: the gate must keep it out on its verdict.
    expect_never_stored(kDotBackwardKernel, shape.key(), kernels::rtc_sources_hash(),
                        dot_backward_parameters(kernels::kDefaultDotBackwardVariant), c, header,
                        bench.median_us(dot_backward_launch(wrong), 3));
  }
}

UpdateLaunch update_launch(const kernels::TunedSparseUpdate& k) {
  return [&k](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b, const float* g, int64_t gs,
              const kernels::SparseOptimizerParams& o, const kernels::SparseUpdatePlan& p,
              gpu::stream_t s) { k.launch(t, b, g, gs, o, p, s); };
}

TEST(TuneGateGpu, SparseUpdateVariantsPassAndAWrongKernelIsRejectedAndNeverStored) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  using kernels::SparseOptimizerKind;
  struct Case {
    DType rows;
    SparseOptimizerKind opt;
  };
  // Table 2 (7 rows, 20 ids per bag) makes rows met thousands of times: the chunked path.
  for (const Case& cs : {Case{DType::bf16, SparseOptimizerKind::rowwise_adagrad},
                         Case{DType::f32, SparseOptimizerKind::rowwise_adagrad}, Case{DType::f32, SparseOptimizerKind::sgd},
                         Case{DType::f16, SparseOptimizerKind::adagrad}}) {
    const SparseUpdateRule rule{cs.opt, 0.05f, 1e-8f};
    SparseUpdateBench bench(small_tables(), 64, cs.rows, rule, 700, Rng(9).next_u64() ^ static_cast<uint64_t>(cs.rows), 2);
    const kernels::SparseUpdateShape shape = bench.workload().shape;
    EXPECT_GT(bench.workload().long_row_chunks, 0) << "the workload should have long rows";
    const ForwardCheck builtin = bench.verify([](const kernels::EmbeddingTables& t, const kernels::DeviceBags& b,
                                                 const float* g, int64_t gs, const kernels::SparseOptimizerParams& o,
                                                 const kernels::SparseUpdatePlan& p, gpu::stream_t s) {
      kernels::embedding_backward_apply(t, b, g, gs, o, p, s);
    });
    ASSERT_TRUE(builtin.ok) << shape.key() << ": " << builtin.reason;
    for (const kernels::SparseUpdateVariant v :
         {kernels::kDefaultSparseUpdateVariant, kernels::SparseUpdateVariant{4, 8, 1, 128, 2},
          kernels::SparseUpdateVariant{8, 16, 8, 512, 1}, kernels::SparseUpdateVariant{16, 4, 2, 128, 8}}) {
      if (!kernels::sparse_update_variant_problem(shape, v, 32).empty()) continue;
      const kernels::TunedSparseUpdate k(shape, v, dev.compute_major, dev.compute_minor);
      const ForwardCheck c = bench.verify(update_launch(k));
      EXPECT_TRUE(c.ok) << shape.key() << " vec_bytes=" << v.vec_bytes << " lanes=" << v.lanes
                        << " grads=" << v.grads_in_flight << ": " << c.reason;
      EXPECT_GT(bench.median_us(update_launch(k), 3), 0.0);
      // The run-time compiled built-in parameters verify again after timing runs.
      EXPECT_TRUE(bench.verify(update_launch(k)).ok);
    }

    // The wrong candidate: the kernel source with the last occurrence of every row it
    // sums dropped.
    std::string header;
    for (const gpu::RtcHeader& h : kernels::rtc_source_files())
      if (h.name == "tunable/sparse_update/sparse_update_kernel.cuh") header = h.text;
    const std::string right = "  for (uint32_t p = begin; p < end; p += GRADS_IN_FLIGHT) {\n";
    ASSERT_NE(header.find(right), std::string::npos);
    header.replace(header.find(right), right.size(), "  if (end > begin) --end;\n" + right);
    const kernels::TunedSparseUpdate wrong(shape, kernels::kDefaultSparseUpdateVariant, dev.compute_major,
                                           dev.compute_minor, header);
    const ForwardCheck c = bench.verify(update_launch(wrong));
    EXPECT_FALSE(c.ok) << shape.key();
    EXPECT_NE(c.reason.find("differs from the reference"), std::string::npos) << c.reason;

    // It runs, and may even be fast: the gate must keep it out on its verdict.
    expect_never_stored(kSparseUpdateKernel, shape.key(), kernels::rtc_sources_hash(),
                        sparse_update_parameters(kernels::kDefaultSparseUpdateVariant, shape, 32), c, header,
                        bench.median_us(update_launch(wrong), 3));
  }
}

TEST(TuneGateGpu, ShortRunWritesLogWinnersAndResults) {
  HETREC_REQUIRE_GPU();
  TuneOptions o;
  o.kernels = {"all"};
  o.budget_minutes = 0.5;
  // The description of this device (HETREC_HW_DIR where the tree moved to another machine).
  const char* env_dir = std::getenv("HETREC_HW_DIR");
  const std::string hw_dir = env_dir ? env_dir : std::string(HETREC_SOURCE_DIR) + "/hw";
  const std::string device = gpu::device_properties(gpu::current_device()).name;
  bool found = false;
  for (const std::string& name : list_hardware(hw_dir)) {
    const Hardware h = load_hardware_by_name(name, hw_dir);
    if (describes_device(h, device)) {
      o.hw = h;
      found = true;
    }
  }
  if (!found) GTEST_SKIP() << "no hardware description for " << device;
  const auto dir = tune_temp_dir("run");
  o.out_dir = (dir / "out").string();
  o.winners_path = (dir / "tune" / "winners.json").string();
  o.dim = 64;
  o.tables = small_tables();
  o.row_dtypes = {DType::f32};
  o.cross_operand_dtypes = {DType::bf16};
  o.sparse_lr = 0.01;
  o.batch = 2048;
  o.reps = 5;
  o.rotations = 2;
  std::ostringstream progress;
  const nlohmann::json r = run_tuning(o, progress);
  // One shape per family, in the order of the one list (tune/kernel_families.h): the cross
  // net's two passes (bf16 operands), the dot interaction's forward and backward, the
  // embedding forward and the sparse update (fp32 rows); no small-GEMM shape was asked for.
  std::vector<std::string> expected;
  for (const KernelFamily& f : kernel_families())
    if (f.kernel != kSmallGemmKernel) expected.push_back(f.kernel);
  ASSERT_EQ(expected.size(), 6u);
  ASSERT_EQ(r["shapes"].size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(r["shapes"][i]["kernel"], expected[i]) << i;
  const nlohmann::json& s = r["shapes"][0];
  EXPECT_GT(s["default_us"].get<double>(), 0.0);
  EXPECT_GT(s["floor_us"].get<double>(), 0.0);
  EXPECT_GE(s["candidates_compiled"].get<int>(), 1);
  std::size_t with_winner = 0;
  for (const auto& shape : r["shapes"]) {
    EXPECT_GE(shape["candidates_passed"].get<int>(), 1) << progress.str();
    if (!shape.contains("winner_us")) continue;  // nothing beat the built-in kernel
    ++with_winner;
    EXPECT_LT(shape["winner_us"].get<double>(), shape["default_us"].get<double>());
  }
  EXPECT_TRUE(std::filesystem::exists(r["results_file"].get<std::string>()));
  std::ifstream log(r["attempt_log"].get<std::string>());
  int lines = 0;
  for (std::string line; std::getline(log, line);) ++lines;
  int attempts = 0;
  for (const auto& shape : r["shapes"])
    attempts += shape["pruned_before_compile"].get<int>() + shape["candidates_tried"].get<int>();
  EXPECT_EQ(lines, attempts);
  const WinnersStore store = WinnersStore::load(o.winners_path);
  ASSERT_EQ(store.winners().size(), with_winner);
  for (const Winner& w : store.winners()) EXPECT_EQ(w.key.gpu, r["gpu"].get<std::string>());
  std::filesystem::remove_all(dir);
}

TEST(TuneGateGpu, GpuModelRunsTheStoredWinnerWithTheSameResults) {
  HETREC_REQUIRE_GPU();
  ModelConfig m;
  m.arch = Arch::dlrm;
  m.num_dense = 13;
  m.embedding_dim = 16;
  m.tables = small_tables();
  m.bottom_mlp = {32, 16};
  m.top_mlp = {32, 1};
  m.init_seed = 11;
  OptimConfig optim;
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  const auto dir = tune_temp_dir("model");
  WinnersStore store;
  Winner w;
  w.key = {kEmbeddingForwardKernel, kernels::EmbeddingForwardShape{DType::f32, DType::f32, 16}.key(), dev.name,
           std::to_string(dev.compute_major) + "." + std::to_string(dev.compute_minor), gpu::driver_version(),
           kernels::rtc_sources_hash()};
  w.params = {{"vec_bytes", 8}, {"lanes", 8}, {"ids_in_flight", 2}, {"block_threads", 128}};  // not the built-in
  w.time_us = 1.0;
  store.offer(w);
  Winner dot = w;
  dot.key.kernel = kDotForwardKernel;
  dot.key.shape = kernels::DotForwardShape{m.num_tables() + 1, m.embedding_dim, false}.key();
  dot.params = {{"block_threads", 128}, {"samples_per_block", 4}, {"row_pad", 1}};  // not the built-in
  store.offer(dot);
  // The sparse update: the built-in row layout (so row-wise Adagrad sums g^2 in the same
  // order), other gradients in flight, block size and launch bound.
  Winner update = w;
  update.key.kernel = kSparseUpdateKernel;
  update.key.shape = kernels::SparseUpdateShape{DType::f32, 16, kernels::SparseOptimizerKind::rowwise_adagrad}.key();
  update.params = {{"vec_bytes", 16}, {"lanes", 4}, {"grads_in_flight", 2}, {"block_threads", 128},
                   {"min_blocks_per_sm", 2}};
  store.offer(update);
  Winner dot_backward = dot;
  dot_backward.key.kernel = kDotBackwardKernel;
  dot_backward.params = {{"block_threads", 128}, {"samples_per_block", 2}, {"row_pad", 0}, {"rows_per_thread", 4}};
  store.offer(dot_backward);
  const std::string file = (dir / "winners.json").string();
  store.save(file);

  GpuModelOptions plain, tuned;
  tuned.tuned_kernels_file = file;
  auto a = make_gpu_model(m, optim, plain);
  auto b = make_gpu_model(m, optim, tuned);
  EXPECT_NE(b->describe().find("embedding forward: tuned variant"), std::string::npos) << b->describe();
  EXPECT_NE(b->describe().find("dot interaction: tuned variant"), std::string::npos) << b->describe();
  EXPECT_NE(b->describe().find("embedding sparse update: tuned variant"), std::string::npos) << b->describe();
  EXPECT_NE(b->describe().find("dot interaction backward: tuned variant"), std::string::npos) << b->describe();
  EXPECT_EQ(a->describe().find("tuned variant"), std::string::npos);

  Batch batch;
  const int64_t size = 256;
  batch.reset(size, m.num_dense, m.num_tables());
  Rng rng(5);
  for (float& x : batch.dense) x = static_cast<float>(rng.uniform());
  for (float& y : batch.labels) y = rng.uniform() < 0.3 ? 1.0f : 0.0f;
  for (int t = 0; t < m.num_tables(); ++t)
    for (int64_t s = 0; s < size; ++s) {
      for (int k = 0; k < m.tables[t].hotness; ++k)
        batch.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(m.tables[t].rows))));
      batch.offsets[static_cast<std::size_t>(t * size + s + 1)] = static_cast<int32_t>(batch.ids.size());
    }
  const StepRates rates{0.01f, 0.01f};
  for (int step = 0; step < 3; ++step) {
    // Same accumulation order in every variant: the losses agree bit for bit.
    EXPECT_EQ(a->train_step(batch, rates), b->train_step(batch, rates)) << "step " << step;
  }

  // A winner measured with another driver is stale: the built-in variant runs.
  store = WinnersStore();
  w.key.driver_version += 1;
  store.offer(w);
  update.key.driver_version += 1;
  store.offer(update);
  dot_backward.key.driver_version += 1;
  store.offer(dot_backward);
  store.save(file);
  auto c = make_gpu_model(m, optim, tuned);
  EXPECT_NE(c->describe().find("stale"), std::string::npos) << c->describe();
  EXPECT_NE(c->describe().find("embedding sparse update: built-in variant (1 stale winner(s)"), std::string::npos)
      << c->describe();
  EXPECT_NE(c->describe().find("dot interaction backward: built-in variant (1 stale winner(s)"), std::string::npos)
      << c->describe();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrec::tune

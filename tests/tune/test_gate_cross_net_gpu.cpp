// The gate on the device for the cross net's element-wise passes: variants of both passes
// (vector widths, unrolls, column-chunk geometries, the scalar fallbacks for unaligned
// operands and widths the vector does not divide) pass verification against the
// double-precision reference; a forward that leaves the last element of each vector
// uncomputed and a backward that skips the last row of each chunk in the column sums are
// rejected, and never stored; the GPU model (DCNv2) runs stored winners of both with
// bit-identical losses and ignores stale ones.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

#include "../gpu/device_test_support.h"
#include "gate_test_support.h"
#include "core/rng.h"
#include "gpu/device.h"
#include "gpu/stream.h"
#include "tunable/cross_net/cross_net.h"
#include "tunable/cross_net/cross_net_tuned.h"
#include "kernels/rtc_sources.h"
#include "model/gpu/gpu_dlrm.h"
#include "tune/gate.h"
#include "tunable/cross_net/cross_net_bench.h"

namespace hetrec::tune {
namespace {

std::string embedded_header() {
  for (const gpu::RtcHeader& h : kernels::rtc_source_files())
    if (h.name == kernels::kCrossNetKernelHeader) return h.text;
  return "";
}

std::string replaced(std::string text, const std::string& right, const std::string& wrong) {
  const auto at = text.find(right);
  EXPECT_NE(at, std::string::npos) << right;
  EXPECT_EQ(text.find(right, at + 1), std::string::npos) << "not unique: " << right;
  if (at != std::string::npos) text.replace(at, right.size(), wrong);
  return text;
}

CrossForwardLaunch forward_launch(const kernels::TunedCrossForward& k) {
  return [&k](const kernels::CrossShape& s, const float* x0, const float* x, const void* z, float* out, void* op,
              DType t, gpu::stream_t st) { k.launch(s, x0, x, z, out, op, t, st); };
}

CrossBackwardLaunch backward_launch(const kernels::TunedCrossBackward& k) {
  return [&k](const kernels::CrossShape& s, const kernels::CrossBackward& a, void* ws, std::size_t bytes,
              gpu::stream_t st) { k.launch(s, a, ws, bytes, st); };
}

TEST(CrossNetGateGpu, ForwardVariantsPassAndAWrongKernelIsRejectedAndNeverStored) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  for (DType op : {DType::f32, DType::bf16, DType::f16}) {
    // 1001 x 100 elements: 100100, not a multiple of 8, so the scalar remainder runs.
    const kernels::CrossNetShape shape{op, 100};
    CrossForwardBench bench(shape, 1001, Rng(21).next_u64() + static_cast<uint64_t>(op));
    const ForwardCheck builtin = bench.verify([](const kernels::CrossShape& s, const float* x0, const float* x,
                                                 const void* z, float* out, void* out_op, DType t, gpu::stream_t st) {
      kernels::cross_forward(s, x0, x, z, out, out_op, t, st);
    });
    ASSERT_TRUE(builtin.ok) << builtin.reason;
    for (const kernels::CrossForwardVariant v :
         {kernels::kDefaultCrossForwardVariant, kernels::CrossForwardVariant{8, 4, 128},
          kernels::CrossForwardVariant{4, 2, 512}, kernels::CrossForwardVariant{2, 1, 1024}}) {
      const kernels::TunedCrossForward k(shape, v, dev.compute_major, dev.compute_minor);
      const ForwardCheck c = bench.verify(forward_launch(k));
      EXPECT_TRUE(c.ok) << shape.key() << " vec=" << v.vec << " items=" << v.items << ": " << c.reason;
      EXPECT_GT(bench.median_us(forward_launch(k), 3), 0.0);
    }
    // The wrong candidate: the last element of every vector is left as x0.
    const std::string header =
        replaced(embedded_header(), "for (int k = 0; k < VEC; ++k) a[k] = fmaf(a[k], c[k], b[k]);",
                 "for (int k = 0; k < VEC - 1; ++k) a[k] = fmaf(a[k], c[k], b[k]);");
    const kernels::CrossForwardVariant v{4, 1, 256};
    const kernels::TunedCrossForward wrong(shape, v, dev.compute_major, dev.compute_minor, header);
    const ForwardCheck c = bench.verify(forward_launch(wrong));
    EXPECT_FALSE(c.ok);
    EXPECT_NE(c.reason.find("differs from the reference"), std::string::npos) << c.reason;
    expect_never_stored(kCrossForwardKernel, shape.key(), kernels::rtc_sources_hash(),
                        cross_forward_parameters(v), c, header,
                        bench.median_us(forward_launch(wrong), 3));
  }
}

TEST(CrossNetGateGpu, ForwardOnUnalignedOperandsFallsBackAndMatchesTheBuiltIn) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  const int64_t rows = 37, width = 64, n = rows * width;
  Rng rng(5);
  std::vector<float> x0(static_cast<std::size_t>(n) + 1), x(x0.size()), z(x0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) {
    x0[i] = static_cast<float>(rng.uniform() * 2 - 1);
    x[i] = static_cast<float>(rng.uniform() * 2 - 1);
    z[i] = static_cast<float>(rng.uniform() * 2 - 1);
  }
  const gpu::DeviceBuffer d_x0 = testing::to_device(x0), d_x = testing::to_device(x), d_z = testing::to_device(z);
  const gpu::DeviceBuffer ref = testing::poisoned_floats(x0.size()), got = testing::poisoned_floats(x0.size());
  gpu::Stream stream;
  // One float past an aligned base: misaligned for vectors of 2 or more.
  const kernels::CrossShape s{rows, width};
  kernels::cross_forward(s, d_x0.as<float>() + 1, d_x.as<float>() + 1, d_z.as<float>() + 1, ref.as<float>() + 1,
                         nullptr, DType::f32, stream.get());
  const kernels::TunedCrossForward k({DType::f32, static_cast<int>(width)}, {4, 2, 128}, dev.compute_major,
                                     dev.compute_minor);
  k.launch(s, d_x0.as<float>() + 1, d_x.as<float>() + 1, d_z.as<float>() + 1, got.as<float>() + 1, nullptr,
           DType::f32, stream.get());
  stream.synchronize();
  const std::vector<float> a = testing::to_host<float>(ref, x0.size()), b = testing::to_host<float>(got, x0.size());
  EXPECT_EQ(std::memcmp(a.data() + 1, b.data() + 1, static_cast<std::size_t>(n) * sizeof(float)), 0);
  EXPECT_TRUE(std::isnan(b[0]));  // nothing before the first element
}

TEST(CrossNetGateGpu, BackwardVariantsPassAndAWrongKernelIsRejectedAndNeverStored) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  for (DType op : {DType::f32, DType::bf16, DType::f16}) {
    // A partial last chunk (1000 rows) and a partial last column block (136 columns).
    for (const int width : {136, 102}) {
      const kernels::CrossNetShape shape{op, width};
      CrossBackwardBench bench(shape, 1000, Rng(33).next_u64() + static_cast<uint64_t>(op) * 7 + width);
      const ForwardCheck builtin =
          bench.verify([](const kernels::CrossShape& s, const kernels::CrossBackward& a, void* ws, std::size_t bytes,
                          gpu::stream_t st) { kernels::cross_backward(s, a, ws, bytes, st); });
      ASSERT_TRUE(builtin.ok) << builtin.reason;
      // Width 102: 4 columns per thread do not divide it, so those run element by element.
      for (const kernels::CrossBackwardVariant v :
           {kernels::kDefaultCrossBackwardVariant, kernels::CrossBackwardVariant{4, 32, 1, 256},
            kernels::CrossBackwardVariant{2, 64, 4, 512}, kernels::CrossBackwardVariant{1, 32, 8, 1024},
            kernels::CrossBackwardVariant{4, 32, 2, 256}}) {
        const kernels::TunedCrossBackward k(shape, v, dev.compute_major, dev.compute_minor);
        const ForwardCheck c = bench.verify(backward_launch(k));
        EXPECT_TRUE(c.ok) << shape.key() << " vec=" << v.vec << " cols=" << v.col_threads
                          << " groups=" << v.row_groups << " chunk=" << v.chunk_rows << ": " << c.reason;
        EXPECT_GT(bench.median_us(backward_launch(k), 3), 0.0);
      }
    }
    // The wrong candidate: every element is computed, but the last row of each chunk is
    // left out of the column sums, in the one-column path and in the vector path.
    const kernels::CrossNetShape shape{op, 136};
    CrossBackwardBench bench(shape, 4096, Rng(34).next_u64() + static_cast<uint64_t>(op));
    const std::string header = replaced(
        replaced(embedded_header(), "for (int k = 0; k < VEC; ++k) sum[k] += d[k];",
                 "for (int k = 0; k < VEC; ++k) sum[k] += r + 1 < r_limit ? d[k] : 0.0f;"),
        "sum[0] += cross_backward_element(a, r * cols + c0);",
        "{ const float d_last = cross_backward_element(a, r * cols + c0);"
        " if (r + 1 < r_limit) sum[0] += d_last; }");
    for (const kernels::CrossBackwardVariant v :
         {kernels::kDefaultCrossBackwardVariant, kernels::CrossBackwardVariant{4, 32, 1, 256}}) {
      const kernels::TunedCrossBackward wrong(shape, v, dev.compute_major, dev.compute_minor, header);
      const ForwardCheck c = bench.verify(backward_launch(wrong));
      EXPECT_FALSE(c.ok) << "vec=" << v.vec;
      EXPECT_NE(c.reason.find("bias gradient"), std::string::npos) << c.reason;
      expect_never_stored(kCrossBackwardKernel, shape.key(), kernels::rtc_sources_hash(),
                          cross_backward_parameters(v), c, header,
                          bench.median_us(backward_launch(wrong), 3));
    }
  }
}

TEST(CrossNetGateGpu, GpuModelRunsTheStoredWinnersWithTheSameResults) {
  HETREC_REQUIRE_GPU();
  ModelConfig m;
  m.arch = Arch::dcnv2;
  m.num_dense = 13;
  m.embedding_dim = 16;
  m.tables.resize(3);
  for (int i = 0; i < 3; ++i) {
    m.tables[i].name = "T" + std::to_string(i);
    m.tables[i].rows = 500 + 100 * i;
    m.tables[i].hotness = 1 + i;
  }
  m.bottom_mlp = {32, 16};
  m.top_mlp = {32, 1};
  m.cross_layers = 3;
  m.cross_rank = 0;
  m.init_seed = 13;
  OptimConfig optim;
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  const kernels::CrossNetShape shape{DType::f32, m.interaction_width()};
  const auto dir = tune_temp_dir("model");
  WinnersStore store;
  Winner fwd;
  fwd.key = {kCrossForwardKernel, shape.key(), dev.name,
             std::to_string(dev.compute_major) + "." + std::to_string(dev.compute_minor), gpu::driver_version(),
             kernels::rtc_sources_hash()};
  fwd.params = {{"vec", 4}, {"items", 2}, {"block_threads", 128}};  // not the built-in
  fwd.time_us = 1.0;
  store.offer(fwd);
  // The backward: other vectors and block width, the built-in summation order (one row
  // group, chunks of 256 rows), so the bias gradients agree bit for bit.
  Winner bwd = fwd;
  bwd.key.kernel = kCrossBackwardKernel;
  bwd.params = {{"vec", 4}, {"col_threads", 32}, {"row_groups", 1}, {"chunk_rows", 256}};
  store.offer(bwd);
  const std::string file = (dir / "winners.json").string();
  store.save(file);

  GpuModelOptions plain, tuned;
  tuned.tuned_kernels_file = file;
  auto a = make_gpu_model(m, optim, plain);
  auto b = make_gpu_model(m, optim, tuned);
  EXPECT_NE(b->describe().find("cross forward: tuned variant"), std::string::npos) << b->describe();
  EXPECT_NE(b->describe().find("cross backward: tuned variant"), std::string::npos) << b->describe();
  EXPECT_EQ(a->describe().find("tuned variant"), std::string::npos);

  Batch batch;
  const int64_t size = 300;
  batch.reset(size, m.num_dense, m.num_tables());
  Rng rng(8);
  for (float& x : batch.dense) x = static_cast<float>(rng.uniform());
  for (float& y : batch.labels) y = rng.uniform() < 0.3 ? 1.0f : 0.0f;
  for (int t = 0; t < m.num_tables(); ++t)
    for (int64_t s = 0; s < size; ++s) {
      for (int k = 0; k < m.tables[t].hotness; ++k)
        batch.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(m.tables[t].rows))));
      batch.offsets[static_cast<std::size_t>(t * size + s + 1)] = static_cast<int32_t>(batch.ids.size());
    }
  const StepRates rates{0.01f, 0.01f};
  for (int step = 0; step < 3; ++step) EXPECT_EQ(a->train_step(batch, rates), b->train_step(batch, rates)) << step;

  // Winners measured with other kernel sources are stale: the built-in variants run.
  store = WinnersStore();
  fwd.key.source_hash = "0000000000000000";
  bwd.key.source_hash = fwd.key.source_hash;
  store.offer(fwd);
  store.offer(bwd);
  store.save(file);
  auto c = make_gpu_model(m, optim, tuned);
  EXPECT_NE(c->describe().find("cross forward: built-in variant (1 stale winner(s)"), std::string::npos)
      << c->describe();
  EXPECT_NE(c->describe().find("cross backward: built-in variant (1 stale winner(s)"), std::string::npos)
      << c->describe();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrec::tune

// Table-batched embedding kernels: initialisation, pooled forward and the backward fused
// with the sparse optimizers, against double-precision references and the CPU
// EmbeddingCollection, for every row dtype, with empty bags, duplicate ids and ids
// outside their table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/dtype.h"
#include "embedding_test_data.h"
#include "gpu/device.h"
#include "gpu/memory.h"
#include "kernels/embedding_bag_backward.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"
#include "kernels/long_rows.h"
#include "tunable/sparse_update/sparse_update_tuned.h"
#include "tunable/sparse_update/sparse_update_variant.h"
#include "kernels/step_scalars.h"
#include "nn/embedding_collection.h"

namespace hetrec {
namespace {

using testing::DeviceBatchCopy;
using testing::DeviceTables;

std::vector<unsigned char> download_weights(const DeviceTables& t, const ModelConfig& m) {
  return testing::to_host<unsigned char>(t.weights, static_cast<std::size_t>(t.view.total_rows) * m.embedding_dim *
                                                        dtype_size(m.row_dtype));
}

// The CPU collection's table t as raw bytes.
std::vector<unsigned char> cpu_table_bytes(EmbeddingCollection& cpu, int t) {
  for (NamedTensor& nt : cpu.state())
    if (nt.name == "embedding." + cpu.table(t).name + ".weight") {
      const auto* p = static_cast<const unsigned char*>(nt.tensor.raw());
      return std::vector<unsigned char>(p, p + nt.tensor.nbytes());
    }
  ADD_FAILURE() << "no weight tensor for table " << t;
  return {};
}

class EmbeddingKernels : public ::testing::TestWithParam<std::tuple<DType, int>> {};

TEST_P(EmbeddingKernels, InitMatchesCpuCollectionBitForBit) {
  HETREC_REQUIRE_GPU();
  const auto [dtype, dim] = GetParam();
  const ModelConfig m = testing::embedding_model(dim, dtype, 101);
  OptimConfig optim;
  EmbeddingCollection cpu(m.embedding_spec(), optim, m.init_seed);
  DeviceTables dev(m);
  const std::vector<unsigned char> gpu = download_weights(dev, m);
  const std::size_t row_bytes = static_cast<std::size_t>(dim) * dtype_size(dtype);
  for (int t = 0; t < m.num_tables(); ++t) {
    const std::vector<unsigned char> host = cpu_table_bytes(cpu, t);
    const std::size_t first = static_cast<std::size_t>(dev.offsets_host[static_cast<std::size_t>(t)]) * row_bytes;
    ASSERT_EQ(0, std::memcmp(gpu.data() + first, host.data(), host.size())) << "table " << t;
  }
}

TEST_P(EmbeddingKernels, ForwardMatchesDoubleReferenceAndCpu) {
  HETREC_REQUIRE_GPU();
  const auto [dtype, dim] = GetParam();
  const ModelConfig m = testing::embedding_model(dim, dtype, 102);
  const int64_t batch = 333;
  const Batch b = testing::random_batch(m, batch, 7);
  DeviceTables dev(m);
  DeviceBatchCopy db(b, 100);
  const int num = m.num_tables();
  // Written into a wider row (stride > num x dim, with a leading gap) as the model does.
  const int64_t gap = dim;
  const int64_t stride = gap + num * dim + 3;
  gpu::DeviceBuffer out = testing::poisoned_floats(static_cast<std::size_t>(batch * stride));
  gpu::DeviceBuffer bad = testing::to_device(std::vector<int32_t>{0});
  kernels::PooledView view{out.as<float>() + gap, stride, DType::f32};
  kernels::embedding_bag_forward(dev.view, db.bags, view, bad.as<int32_t>(), nullptr);
  const std::vector<float> got = testing::to_host<float>(out, static_cast<std::size_t>(batch * stride));
  EXPECT_EQ(testing::to_host<int32_t>(bad, 1)[0], 0);

  const std::vector<float> w = testing::rows_as_float(download_weights(dev, m), dtype);
  OptimConfig optim;
  EmbeddingCollection cpu(m.embedding_spec(), optim, m.init_seed);
  std::vector<float> cpu_out(static_cast<std::size_t>(batch * num * dim));
  cpu.forward(b, cpu_out.data());
  for (int64_t s = 0; s < batch; ++s) {
    for (int64_t c = 0; c < stride; ++c) {
      const bool in_pooled = c >= gap && c < gap + num * dim;
      if (!in_pooled) {
        ASSERT_TRUE(std::isnan(got[static_cast<std::size_t>(s * stride + c)])) << "wrote outside";
      }
    }
    for (int t = 0; t < num; ++t) {
      const int64_t begin = b.bag_begin(t, s), end = b.bag_end(t, s);
      for (int d = 0; d < dim; ++d) {
        double ref = 0.0;
        for (int64_t i = begin; i < end; ++i) {
          const int64_t row = dev.offsets_host[static_cast<std::size_t>(t)] + b.ids[static_cast<std::size_t>(i)];
          ref += w[static_cast<std::size_t>(row * dim + d)];
        }
        if (m.tables[static_cast<std::size_t>(t)].pooling == Pooling::mean && end > begin) ref /= static_cast<double>(end - begin);
        const float g = got[static_cast<std::size_t>(s * stride + gap + t * dim + d)];
        ASSERT_NEAR(g, ref, 1e-6 + 1e-5 * std::fabs(ref)) << "sample " << s << " table " << t << " d " << d;
        // Same fp32 additions in the same order as the CPU collection.
        ASSERT_EQ(g, cpu_out[static_cast<std::size_t>((s * num + t) * dim + d)]) << "sample " << s << " table " << t;
      }
    }
  }
}

TEST_P(EmbeddingKernels, Bf16PooledOutputRoundsTheFp32Sum) {
  HETREC_REQUIRE_GPU();
  const auto [dtype, dim] = GetParam();
  const ModelConfig m = testing::embedding_model(dim, dtype, 103);
  const int64_t batch = 64;
  const Batch b = testing::random_batch(m, batch, 8);
  DeviceTables dev(m);
  DeviceBatchCopy db(b);
  const int64_t width = m.num_tables() * dim;
  gpu::DeviceBuffer f32 = testing::poisoned_floats(static_cast<std::size_t>(batch * width));
  gpu::DeviceBuffer b16(static_cast<std::size_t>(batch * width) * 2);
  kernels::embedding_bag_forward(dev.view, db.bags, {f32.get(), width, DType::f32}, nullptr, nullptr);
  kernels::embedding_bag_forward(dev.view, db.bags, {b16.get(), width, DType::bf16}, nullptr, nullptr);
  const auto a = testing::to_host<float>(f32, static_cast<std::size_t>(batch * width));
  const auto h = testing::to_host<uint16_t>(b16, static_cast<std::size_t>(batch * width));
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(h[i], f32_to_bf16(a[i])) << i;
}

struct UpdateCase {
  OptimizerKind kind;
  const char* name;
};

// batch: samples of the random batch; table 0 draws from 8 rows, so each of them occurs
// about 3 batch / 8 times.
void run_update_case(DType dtype, int dim, OptimizerKind kind, uint64_t seed, int64_t batch = 257) {
  ModelConfig m = testing::embedding_model(dim, dtype, seed);
  OptimConfig optim;
  optim.sparse = kind;
  optim.eps = 1e-6;
  optim.adagrad_initial_accumulator = 0.01;
  const float lr = 0.05f;
  const int64_t step = 17;
  const int num = m.num_tables();
  const Batch b = testing::random_batch(m, batch, seed + 1);

  // Gradient of the pooled output, fresh and random.
  std::vector<float> grad(static_cast<std::size_t>(batch * num * dim));
  Rng rng(seed + 2);
  for (float& g : grad) g = static_cast<float>(rng.normal());

  DeviceTables dev(m);
  const std::vector<float> w0 = testing::rows_as_float(download_weights(dev, m), dtype);
  const int64_t total = dev.view.total_rows;
  const int64_t state_per_row = kind == OptimizerKind::adagrad ? dim : (kind == OptimizerKind::rowwise_adagrad ? 1 : 0);
  std::vector<float> acc0(static_cast<std::size_t>(total * state_per_row), static_cast<float>(optim.adagrad_initial_accumulator));
  gpu::DeviceBuffer acc = testing::to_device(acc0.empty() ? std::vector<float>{0.0f} : acc0);

  DeviceBatchCopy db(b, 50);
  gpu::DeviceBuffer dgrad = testing::to_device(grad);
  gpu::DeviceBuffer scalars = testing::to_device(std::vector<kernels::StepScalars>{
      kernels::make_step_scalars(lr, 0.0, 0.9, 0.999, step)});
  kernels::SparseOptimizerParams p;
  p.kind = kind == OptimizerKind::sgd ? kernels::SparseOptimizerKind::sgd
           : kind == OptimizerKind::adagrad ? kernels::SparseOptimizerKind::adagrad
                                            : kernels::SparseOptimizerKind::rowwise_adagrad;
  p.eps = static_cast<float>(optim.eps);
  p.accumulators = state_per_row ? acc.as<float>() : nullptr;
  p.seed = m.init_seed;
  p.scalars = scalars.as<kernels::StepScalars>();
  const std::size_t ws_bytes = kernels::embedding_backward_workspace_bytes(db.bags.max_ids, m.embedding_dim);
  gpu::DeviceBuffer ws(ws_bytes);
  kernels::embedding_bag_backward_update(dev.view, db.bags, dgrad.as<float>(), num * dim, p, ws.get(), ws_bytes, nullptr);
  const std::vector<float> w1 = testing::rows_as_float(download_weights(dev, m), dtype);
  const std::vector<float> acc1 = testing::to_host<float>(acc, acc0.size());

  // Double-precision reference: per unique row, the summed gradient, then the rule.
  // g_abs (the sum of the contributions' magnitudes) bounds the fp32 summation error.
  std::vector<double> g_row(static_cast<std::size_t>(total * dim), 0.0), g_abs(g_row.size(), 0.0);
  std::vector<int64_t> occurrences(static_cast<std::size_t>(total), 0);
  for (int t = 0; t < num; ++t)
    for (int64_t s = 0; s < batch; ++s) {
      const int64_t begin = b.bag_begin(t, s), end = b.bag_end(t, s);
      const double scale = m.tables[static_cast<std::size_t>(t)].pooling == Pooling::mean ? 1.0 / static_cast<double>(end - begin) : 1.0;
      for (int64_t i = begin; i < end; ++i) {
        const int64_t row = dev.offsets_host[static_cast<std::size_t>(t)] + b.ids[static_cast<std::size_t>(i)];
        ++occurrences[static_cast<std::size_t>(row)];
        for (int d = 0; d < dim; ++d) {
          const double c = scale * grad[static_cast<std::size_t>((s * num + t) * dim + d)];
          g_row[static_cast<std::size_t>(row * dim + d)] += c;
          g_abs[static_cast<std::size_t>(row * dim + d)] += std::fabs(c);
        }
      }
    }
  // 16-bit rows may land on either neighbour of the exact value (stochastic rounding):
  // one unit of the format at x is at most |x| 2^-7 (bf16) or |x| 2^-10 (fp16), and 2^-24
  // among fp16's subnormals.
  const auto unit16 = [dtype](double x) {
    if (dtype == DType::bf16) return std::fabs(x) * std::ldexp(1.0, -7);
    if (dtype == DType::f16) return std::max(std::fabs(x) * std::ldexp(1.0, -10), std::ldexp(1.0, -24));
    return 0.0;
  };
  constexpr double kSumError = 2e-6;  // fp32 summation of ~100 contributions, relative to g_abs
  int64_t checked = 0, long_rows = 0;
  for (int64_t r = 0; r < total; ++r) {
    const bool touched = occurrences[static_cast<std::size_t>(r)] > 0;
    long_rows += occurrences[static_cast<std::size_t>(r)] > 64;
    double acc_row = optim.adagrad_initial_accumulator;
    if (kind == OptimizerKind::rowwise_adagrad) {
      double sq = 0.0, sq_err = 0.0;
      for (int d = 0; d < dim; ++d) {
        const std::size_t i = static_cast<std::size_t>(r * dim + d);
        sq += g_row[i] * g_row[i];
        sq_err += 2 * std::fabs(g_row[i]) * kSumError * g_abs[i];
      }
      if (touched) acc_row += sq / dim;
      ASSERT_NEAR(acc1[static_cast<std::size_t>(r)], acc_row, 1e-6 * acc_row + sq_err / dim + 1e-9) << "accumulator of row " << r;
    }
    for (int d = 0; d < dim; ++d) {
      const std::size_t i = static_cast<std::size_t>(r * dim + d);
      if (!touched) {
        ASSERT_EQ(w1[i], w0[i]) << "untouched row " << r << " changed";
        continue;
      }
      const double g = g_row[i];
      const double g_tol = kSumError * g_abs[i] + 1e-9;
      double step_size = 0.0, sensitivity = lr;  // |d step / d g|
      switch (kind) {
        case OptimizerKind::sgd: step_size = lr * g; break;
        case OptimizerKind::adagrad: {
          const double a = optim.adagrad_initial_accumulator + g * g;
          ASSERT_NEAR(acc1[i], a, 1e-6 * a + 2 * std::fabs(g) * g_tol + g_tol * g_tol) << "accumulator " << i;
          step_size = lr * g / (std::sqrt(a) + optim.eps);
          sensitivity = lr / std::sqrt(optim.adagrad_initial_accumulator);
          break;
        }
        default:
          step_size = lr * g / (std::sqrt(acc_row) + optim.eps);
          sensitivity = lr / std::sqrt(acc_row);
          break;
      }
      const double expect = w0[i] - step_size;
      const double tol = 2e-6 * std::fabs(expect) + 1e-5 * std::fabs(step_size) + sensitivity * g_tol +
                         1.01 * unit16(expect) + 1e-8;
      ASSERT_NEAR(w1[i], expect, tol) << "row " << r << " d " << d;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
  EXPECT_GT(long_rows, 0) << "the batch should exercise the chunked path of hot rows";

  // The CPU collection from the same state and gradient. SGD and Adagrad agree bit for
  // bit on rows the GPU sums in one sequence (64 occurrences or fewer); longer rows are
  // summed in chunks, and row-wise Adagrad sums g^2 across lanes, so those agree to
  // rounding (and 16-bit rows then to one unit of stochastic rounding, in few places).
  EmbeddingCollection cpu(m.embedding_spec(), optim, m.init_seed);
  cpu.backward_update(b, grad.data(), lr, step);
  int64_t differ = 0, elements = 0;
  for (int t = 0; t < num; ++t) {
    const std::vector<float> host = testing::rows_as_float(cpu_table_bytes(cpu, t), dtype);
    const int64_t first = dev.offsets_host[static_cast<std::size_t>(t)];
    for (std::size_t k = 0; k < host.size(); ++k) {
      const int64_t row = first + static_cast<int64_t>(k) / dim;
      const float gv = w1[static_cast<std::size_t>(first * dim) + k];
      ++elements;
      if (gv == host[k]) continue;
      ++differ;
      const bool exact = kind != OptimizerKind::rowwise_adagrad && occurrences[static_cast<std::size_t>(row)] <= 64;
      ASSERT_FALSE(exact) << "table " << t << " element " << k << ": gpu " << gv << " cpu " << host[k];
      // Both sums carry rounding error, bounded through the rule's sensitivity to g.
      const double sensitivity =
          kind == OptimizerKind::sgd ? lr : lr / std::sqrt(optim.adagrad_initial_accumulator);
      const double g_err = 2 * kSumError * g_abs[static_cast<std::size_t>(row * dim) + k % static_cast<std::size_t>(dim)];
      ASSERT_NEAR(gv, host[k], 2e-6 * std::fabs(host[k]) + sensitivity * g_err + 1.01 * unit16(host[k]) + 1e-8)
          << "table " << t << " element " << k;
    }
  }
  if (dtype != DType::f32) {
    EXPECT_LE(differ, elements / 50) << "stochastic rounding disagrees too often";
  }
}

TEST_P(EmbeddingKernels, BackwardSgd) {
  HETREC_REQUIRE_GPU();
  run_update_case(std::get<0>(GetParam()), std::get<1>(GetParam()), OptimizerKind::sgd, 201);
}
TEST_P(EmbeddingKernels, BackwardAdagrad) {
  HETREC_REQUIRE_GPU();
  run_update_case(std::get<0>(GetParam()), std::get<1>(GetParam()), OptimizerKind::adagrad, 202);
}
TEST_P(EmbeddingKernels, BackwardRowwiseAdagrad) {
  HETREC_REQUIRE_GPU();
  run_update_case(std::get<0>(GetParam()), std::get<1>(GetParam()), OptimizerKind::rowwise_adagrad, 203);
}

// bf16 pooled gradients (a bf16 embedding exchange's) read by the update, built-in and
// tuned (NVRTC, the default variant compiled for bf16 gradients): each value widens
// exactly, so rows and accumulators equal the fp32 call's on the widened gradients bit
// for bit, hot rows' chunk sums included.
void run_bf16_gradient_case(DType dtype, int dim, OptimizerKind kind, uint64_t seed) {
  ModelConfig m = testing::embedding_model(dim, dtype, seed);
  const int num = m.num_tables();
  const int64_t batch = 257;  // table 0's 8 rows occur about 100 times each: chunked
  const Batch b = testing::random_batch(m, batch, seed + 1);
  std::vector<float> widened(static_cast<std::size_t>(batch * num * dim));
  std::vector<uint16_t> bits(widened.size());
  Rng rng(seed + 2);
  for (std::size_t i = 0; i < widened.size(); ++i) {
    bits[i] = f32_to_bf16(static_cast<float>(rng.normal()));
    widened[i] = bf16_to_f32(bits[i]);
  }
  const int64_t state_per_row = kind == OptimizerKind::adagrad ? dim : (kind == OptimizerKind::rowwise_adagrad ? 1 : 0);
  DeviceBatchCopy db(b, 50);
  gpu::DeviceBuffer dwide = testing::to_device(widened), dbits = testing::to_device(bits);
  gpu::DeviceBuffer scalars = testing::to_device(std::vector<kernels::StepScalars>{
      kernels::make_step_scalars(0.05f, 0.0, 0.9, 0.999, 17)});
  const kernels::SparseOptimizerKind opt = kind == OptimizerKind::sgd       ? kernels::SparseOptimizerKind::sgd
                                           : kind == OptimizerKind::adagrad ? kernels::SparseOptimizerKind::adagrad
                                                                            : kernels::SparseOptimizerKind::rowwise_adagrad;
  const std::size_t ws_bytes = kernels::embedding_backward_workspace_bytes(db.bags.max_ids, dim);
  gpu::DeviceBuffer ws(ws_bytes);
  const gpu::DeviceProperties device = gpu::device_properties(gpu::current_device());
  const kernels::SparseUpdateShape shape{dtype, dim, opt, DType::bf16};
  const bool tunable =
      kernels::sparse_update_variant_problem(shape, kernels::kDefaultSparseUpdateVariant, device.warp_size).empty();
  std::unique_ptr<kernels::TunedSparseUpdate> tuned;
  if (tunable)
    tuned = std::make_unique<kernels::TunedSparseUpdate>(shape, kernels::kDefaultSparseUpdateVariant,
                                                         device.compute_major, device.compute_minor);
  // [0]: fp32 gradients; [1]: bf16, built-in; [2]: bf16, tuned; [3]: fp32 in two parts
  // (the sort, then the chunk sums and the update: the GPU step's early sort).
  std::vector<std::vector<unsigned char>> weights;
  std::vector<std::vector<float>> accumulators;
  for (int run = 0; run < 4; ++run) {
    if (run == 2 && !tunable) {
      weights.push_back(weights[0]);
      accumulators.push_back(accumulators[0]);
      continue;
    }
    DeviceTables dev(m);
    const int64_t total = dev.view.total_rows;
    gpu::DeviceBuffer acc = testing::to_device(std::vector<float>(std::max<std::size_t>(
        1, static_cast<std::size_t>(total * state_per_row)), 0.01f));
    kernels::SparseOptimizerParams p;
    p.kind = opt;
    p.eps = 1e-6f;
    p.accumulators = state_per_row ? acc.as<float>() : nullptr;
    p.seed = m.init_seed;
    p.scalars = scalars.as<kernels::StepScalars>();
    if (run == 0) {
      kernels::embedding_bag_backward_update(dev.view, db.bags, dwide.as<float>(), num * dim, p, ws.get(), ws_bytes,
                                             nullptr);
    } else if (run == 3) {
      gpu::memset_async(ws.get(), 0xFF, ws_bytes, nullptr);  // nothing of an earlier run's workspace is reused
      const kernels::SparseUpdatePlan plan = kernels::embedding_backward_sort(dev.view, db.bags, p, ws.get(), ws_bytes,
                                                                              nullptr);
      const kernels::PooledGradView g{dwide.get(), num * dim, DType::f32};
      kernels::embedding_backward_chunk_sums(dev.view, db.bags, g, p, plan, ws.get(), nullptr);
      kernels::embedding_backward_apply(dev.view, db.bags, g, p, plan, nullptr);
    } else
      kernels::embedding_bag_backward_update(dev.view, db.bags, kernels::PooledGradView{dbits.get(), num * dim, DType::bf16},
                                             p, ws.get(), ws_bytes, nullptr, run == 2 ? tuned.get() : nullptr);
    weights.push_back(download_weights(dev, m));
    accumulators.push_back(testing::to_host<float>(acc, static_cast<std::size_t>(std::max<int64_t>(1, total * state_per_row))));
  }
  ASSERT_NE(weights[0], download_weights(DeviceTables(m), m)) << "the update changed nothing";
  const char* names[] = {"", "built-in update from bf16 gradients", "tuned update from bf16 gradients",
                         "sort, chunk sums and update in two parts"};
  for (std::size_t run = 1; run < weights.size(); ++run) {
    EXPECT_EQ(weights[run], weights[0]) << names[run];
    EXPECT_EQ(0, std::memcmp(accumulators[run].data(), accumulators[0].data(), accumulators[0].size() * sizeof(float)))
        << names[run] << " (accumulators)";
  }
}

TEST_P(EmbeddingKernels, Bf16GradientsUpdateAsTheirWidenedFp32Values) {
  HETREC_REQUIRE_GPU();
  for (OptimizerKind kind : {OptimizerKind::sgd, OptimizerKind::adagrad, OptimizerKind::rowwise_adagrad})
    run_bf16_gradient_case(std::get<0>(GetParam()), std::get<1>(GetParam()), kind, 211 + static_cast<uint64_t>(kind));
}

// Rows met about 15 000 times: their chunks are longer than the shortest (ceil(sqrt(len))
// occurrences each, about 123), and the update adds over a hundred chunk partials per
// row; sums and rules still match the double reference and the CPU collection.
TEST(EmbeddingKernelsHotRows, VeryHotRowsAreSummedInSquareRootChunks) {
  HETREC_REQUIRE_GPU();
  run_update_case(DType::f32, 16, OptimizerKind::rowwise_adagrad, 204, 40000);
  run_update_case(DType::bf16, 128, OptimizerKind::adagrad, 205, 40000);
}

// fp32/fp16/bf16 rows; widths on the 16-byte vector path (16, 128, 256), narrower than a
// warp's vectors (8), and off it (6, 10: scalar loads).
INSTANTIATE_TEST_SUITE_P(AllRowTypes, EmbeddingKernels,
                         ::testing::Combine(::testing::Values(DType::f32, DType::f16, DType::bf16),
                                            ::testing::Values(6, 8, 16, 128, 256)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, int>>& param_info) {
                           return std::string(dtype_name(std::get<0>(param_info.param))) + "_dim" +
                                  std::to_string(std::get<1>(param_info.param));
                         });

TEST(EmbeddingKernelsGuards, BadIdsAreCountedAndSkipped) {
  HETREC_REQUIRE_GPU();
  const ModelConfig m = testing::embedding_model(16, DType::f32, 104);
  Batch b = testing::random_batch(m, 20, 9);
  b.ids[0] = -3;                    // table 0, before its rows
  b.ids[b.ids.size() - 1] = 1 << 30;  // last table (1 row), far past its rows
  DeviceTables dev(m);
  DeviceBatchCopy db(b);
  const int64_t width = m.num_tables() * 16;
  gpu::DeviceBuffer out = testing::poisoned_floats(static_cast<std::size_t>(20 * width));
  gpu::DeviceBuffer bad = testing::to_device(std::vector<int32_t>{0});
  kernels::embedding_bag_forward(dev.view, db.bags, {out.get(), width, DType::f32}, bad.as<int32_t>(), nullptr);
  EXPECT_EQ(testing::to_host<int32_t>(bad, 1)[0], 2);
  for (float v : testing::to_host<float>(out, static_cast<std::size_t>(20 * width))) ASSERT_FALSE(std::isnan(v));

  // The backward skips them and still updates the valid rows; nothing outside changes.
  const std::vector<unsigned char> before = download_weights(dev, m);
  gpu::DeviceBuffer grad = testing::to_device(std::vector<float>(static_cast<std::size_t>(20 * width), 1.0f));
  gpu::DeviceBuffer scalars = testing::to_device(std::vector<kernels::StepScalars>{kernels::make_step_scalars(0.5, 0, 0.9, 0.999, 0)});
  kernels::SparseOptimizerParams p;
  p.scalars = scalars.as<kernels::StepScalars>();
  const std::size_t ws_bytes = kernels::embedding_backward_workspace_bytes(db.bags.max_ids, m.embedding_dim);
  gpu::DeviceBuffer ws(ws_bytes);
  kernels::embedding_bag_backward_update(dev.view, db.bags, grad.as<float>(), width, p, ws.get(), ws_bytes, nullptr);
  const std::vector<unsigned char> after = download_weights(dev, m);
  EXPECT_NE(before, after);

  // skip_update: nothing changes at all.
  kernels::StepScalars skip = kernels::make_step_scalars(0.5, 0, 0.9, 0.999, 1);
  skip.skip_update = 1;
  gpu::DeviceBuffer skip_scalars = testing::to_device(std::vector<kernels::StepScalars>{skip});
  p.scalars = skip_scalars.as<kernels::StepScalars>();
  kernels::embedding_bag_backward_update(dev.view, db.bags, grad.as<float>(), width, p, ws.get(), ws_bytes, nullptr);
  EXPECT_EQ(after, download_weights(dev, m));
}

// More than kLongSegment invalid ids, from every table: their segment (sorted last) must
// not be split into chunk sums, which would read one table's gradients at another's
// offsets; the valid rows are still updated.
TEST(EmbeddingKernelsGuards, ManyBadIdsFormNoChunkSums) {
  HETREC_REQUIRE_GPU();
  const ModelConfig m = testing::embedding_model(16, DType::f32, 105);
  Batch b = testing::random_batch(m, 200, 10);
  int64_t invalid = 0;
  for (std::size_t i = 0; i < b.ids.size(); i += 7, ++invalid) b.ids[i] = i % 2 ? -1 : 1 << 30;
  ASSERT_GT(invalid, 2 * static_cast<int64_t>(kernels::kLongSegment));
  DeviceTables dev(m);
  DeviceBatchCopy db(b);
  const int64_t width = m.num_tables() * 16;
  gpu::DeviceBuffer grad = testing::to_device(std::vector<float>(static_cast<std::size_t>(200 * width), 1.0f));
  gpu::DeviceBuffer scalars =
      testing::to_device(std::vector<kernels::StepScalars>{kernels::make_step_scalars(0.5, 0, 0.9, 0.999, 0)});
  kernels::SparseOptimizerParams p;
  p.scalars = scalars.as<kernels::StepScalars>();
  const std::size_t ws_bytes = kernels::embedding_backward_workspace_bytes(db.bags.max_ids, m.embedding_dim);
  gpu::DeviceBuffer ws(ws_bytes);
  const kernels::SparseUpdatePlan plan =
      kernels::embedding_backward_prepare(dev.view, db.bags, grad.as<float>(), width, p, ws.get(), ws_bytes, nullptr);
  gpu::synchronize_device();
  uint32_t unique = 0, start = 0, key = 0, chunks = 1;
  gpu::memcpy_sync(&unique, plan.num_unique, sizeof unique, gpu::CopyKind::device_to_host);
  ASSERT_GT(unique, 1u);
  gpu::memcpy_sync(&start, plan.segment_start + unique - 1, sizeof start, gpu::CopyKind::device_to_host);
  gpu::memcpy_sync(&key, plan.sorted_keys + start, sizeof key, gpu::CopyKind::device_to_host);
  gpu::memcpy_sync(&chunks, plan.chunks + unique - 1, sizeof chunks, gpu::CopyKind::device_to_host);
  EXPECT_EQ(key, 0xFFFFFFFFu) << "the invalid ids' segment sorts last";
  EXPECT_EQ(chunks, 0u) << "the invalid ids' segment must not be summed in chunks";
  const std::vector<unsigned char> before = download_weights(dev, m);
  kernels::embedding_backward_apply(dev.view, db.bags, grad.as<float>(), width, p, plan, nullptr);
  EXPECT_NE(before, download_weights(dev, m));
}

}  // namespace
}  // namespace hetrec

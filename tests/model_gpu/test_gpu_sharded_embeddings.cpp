// GpuEmbeddings holding shards of model tables (distributed training) against the CPU
// EmbeddingCollection built with the same origins: for fp32, fp16 and bf16 rows and SGD,
// Adagrad and row-wise Adagrad, shards that are row blocks (one of them in mapped host
// memory), column blocks at even column offsets, and whole tables in another order than
// the model's. Initial rows equal the CPU shard's and the full table's block bit for bit;
// then 3 steps of fresh random multi-hot batches and gradients: the pooled forward
// (outputs poisoned with NaN first) and, after each fused backward + update, the rows and
// accumulators equal the CPU collection's.
//
// Bit for bit except for row-wise Adagrad: its accumulator adds the row's mean of g^2,
// which the device sums across the lanes of a group (a tree) and the CPU element by
// element, so the fp32 sums differ in their last bits; rows and pooled outputs then
// agree to a relative 1e-5 (1e-6 absolute near zero) and 16-bit rows to a unit or two of
// the format in few places (the same rounding draws applied to values a few ulps apart). The batches keep every row
// at 64 occurrences or fewer, which the device sums in one sequence, in sample order, as
// the CPU does (longer rows are summed in chunks; tests/kernels covers those).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/rng.h"
#include "gpu/caching_allocator.h"
#include "gpu/stream.h"
#include "kernels/embedding_bag_backward.h"
#include "tunable/embedding_forward/embedding_bag_forward.h"
#include "kernels/long_rows.h"
#include "kernels/step_scalars.h"
#include "model/gpu/gpu_embeddings.h"
#include "nn/embedding_collection.h"

namespace hetrec {
namespace {

constexpr int kFullDim = 32;
constexpr int kSteps = 3;
constexpr int64_t kBatch = 300;
constexpr int kMaxBag = 4;  // bags of 0..3 ids
constexpr uint64_t kSeed = 4242;
// Occurrences the backward sums for a row before splitting it into chunks (kernels/long_rows.h).
constexpr int64_t kMaxOccurrencesSummedInOneSequence = kernels::kLongSegment;
// Row-wise Adagrad's tolerance (see above): fp32 values within a relative kRelTol, or
// kAbsTol near zero (a step of up to lr * sqrt(dim) = 0.3 with a multiplier a few ulps
// apart, over 3 steps); 16-bit values within kUnits16 units of the format (one rounding
// may flip per step, rarely twice for one element in 3 steps).
constexpr double kRelTol = 1e-5;
constexpr double kAbsTol = 1e-6;
constexpr double kUnits16 = 2.01;

// The full model's tables.
std::vector<TableConfig> full_tables() {
  const int64_t rows[] = {3000, 500, 60};
  std::vector<TableConfig> out;
  for (int t = 0; t < 3; ++t) {
    TableConfig c;
    c.name = std::string("T") + static_cast<char>('A' + t);
    c.rows = rows[t];
    c.hotness = 2;
    c.pooling = t == 1 ? Pooling::mean : Pooling::sum;
    out.push_back(c);
  }
  return out;
}

struct ShardCase {
  std::string name;
  int dim = kFullDim;
  // Per shard: (model table, first row, rows, first column).
  std::vector<std::tuple<int, int64_t, int64_t, int>> blocks;
  std::vector<std::string> host_tables;
};

std::vector<ShardCase> shard_cases(OptimizerKind kind) {
  std::vector<ShardCase> cases;
  cases.push_back({"row_blocks", kFullDim, {{0, 1000, 1200, 0}, {1, 250, 250, 0}, {2, 0, 60, 0}}, {"TB"}});
  // Row-wise Adagrad keeps one accumulator per full row: column blocks cannot have it.
  if (kind != OptimizerKind::rowwise_adagrad)
    cases.push_back({"column_blocks", 8, {{0, 0, 3000, 8}, {1, 0, 500, 24}, {2, 0, 60, 0}, {0, 0, 3000, 16}}, {}});
  cases.push_back({"whole_tables_reordered", kFullDim, {{2, 0, 60, 0}, {0, 0, 3000, 0}}, {}});
  return cases;
}

// Fresh multi-hot bags of local ids; returns the batch and checks no row occurs more
// than kMaxOccurrencesSummedInOneSequence times.
Batch random_batch(const ModelConfig& m, Rng& rng) {
  Batch b;
  b.reset(kBatch, 0, m.num_tables());
  for (int t = 0; t < m.num_tables(); ++t) {
    const auto rows = static_cast<uint64_t>(m.tables[static_cast<std::size_t>(t)].rows);
    std::vector<int64_t> count(rows, 0);
    for (int64_t s = 0; s < kBatch; ++s) {
      const auto len = static_cast<int64_t>(rng.below(kMaxBag));
      for (int64_t k = 0; k < len; ++k) {
        auto id = static_cast<int64_t>(rng.below(rows));
        if (count[static_cast<std::size_t>(id)] == kMaxOccurrencesSummedInOneSequence) continue;
        ++count[static_cast<std::size_t>(id)];
        b.ids.push_back(static_cast<int32_t>(id));
      }
      b.offsets[static_cast<std::size_t>(t * kBatch + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  }
  return b;
}

std::vector<unsigned char> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw());
  return std::vector<unsigned char>(p, p + t.nbytes());
}

// One unit of the 16-bit row format at x (0 for fp32 rows).
double unit16(DType dtype, double x) {
  if (dtype == DType::bf16) return std::fabs(x) * std::ldexp(1.0, -7);
  if (dtype == DType::f16) return std::max(std::fabs(x) * std::ldexp(1.0, -10), std::ldexp(1.0, -24));
  return 0.0;
}

struct Compared {
  int64_t elements = 0, differ = 0;
};

// Same names, shapes and dtypes; bitwise equal when `exact`, else to the tolerance of the
// header comment.
void compare_state(const std::vector<gpu_model::DeviceMirror>& gpu, std::vector<NamedTensor> cpu, DType dtype,
                   bool exact, const std::string& where, Compared& stats) {
  ASSERT_EQ(gpu.size(), cpu.size()) << where;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    const Tensor& g = gpu[i].host;
    const Tensor& c = cpu[i].tensor;
    ASSERT_EQ(gpu[i].name, cpu[i].name) << where;
    ASSERT_EQ(g.shape(), c.shape()) << where << " " << gpu[i].name;
    ASSERT_EQ(g.dtype(), c.dtype()) << where << " " << gpu[i].name;
    if (exact) {
      ASSERT_EQ(bytes_of(g), bytes_of(c)) << where << " " << gpu[i].name << " differs";
      continue;
    }
    const auto n = static_cast<std::size_t>(g.numel());
    for (std::size_t k = 0; k < n; ++k) {
      const double gv = load_as_f32(g.raw(), k, g.dtype()), cv = load_as_f32(c.raw(), k, c.dtype());
      ++stats.elements;
      if (gv == cv) continue;
      ++stats.differ;
      const double unit = g.dtype() == DType::f32 ? 0.0 : unit16(dtype, cv);
      ASSERT_NEAR(gv, cv, kRelTol * std::fabs(cv) + kUnits16 * unit + kAbsTol) << where << " " << gpu[i].name << " element " << k;
    }
  }
}

class ShardedGpuEmbeddings : public ::testing::TestWithParam<std::tuple<DType, OptimizerKind>> {};

TEST_P(ShardedGpuEmbeddings, MatchTheCpuCollectionWithTheSameOrigins) {
  HETREC_REQUIRE_GPU();
  const auto [dtype, kind] = GetParam();
  OptimConfig optim;
  optim.sparse = kind;
  optim.eps = 1e-6;
  optim.adagrad_initial_accumulator = 0.01;
  const bool exact = kind != OptimizerKind::rowwise_adagrad;
  const float lr = 0.05f;

  // The unsharded model, whose blocks the shards must start as.
  const std::vector<TableConfig> full = full_tables();
  EmbeddingCollection whole(EmbeddingSpec{full, kFullDim, dtype}, optim, kSeed);
  const std::vector<NamedTensor> whole_state = whole.state();
  const auto whole_weight = [&](int table) -> const Tensor& {
    for (const NamedTensor& nt : whole_state)
      if (nt.name == "embedding." + full[static_cast<std::size_t>(table)].name + ".weight") return nt.tensor;
    throw std::runtime_error("no weight of table " + std::to_string(table));
  };

  gpu::CachingDeviceAllocator alloc(0);
  // The legacy default stream: ordered with the synchronous copies of the test's inputs.
  const gpu::stream_t stream = nullptr;
  for (const ShardCase& sc : shard_cases(kind)) {
    SCOPED_TRACE(sc.name);
    ModelConfig m;
    m.embedding_dim = sc.dim;
    m.row_dtype = dtype;
    m.init_seed = kSeed;
    m.host_tables = sc.host_tables;
    std::vector<TableOrigin> origins;
    for (const auto& [table, row0, rows, col0] : sc.blocks) {
      TableConfig c = full[static_cast<std::size_t>(table)];
      c.rows = rows;
      m.tables.push_back(c);
      origins.push_back({table, row0, full[static_cast<std::size_t>(table)].rows, col0});
    }
    const int num = m.num_tables();
    const int dim = sc.dim;

    EmbeddingCollection cpu(m.embedding_spec(), optim, kSeed, origins);
    gpu_model::GpuEmbeddings dev(m, optim, alloc, stream, origins);
    EXPECT_EQ(dev.host_table_count(), static_cast<int>(sc.host_tables.size()));
    const std::vector<gpu_model::DeviceMirror>& mirrors = dev.mirrors();
    gpu_model::download(mirrors, stream);
    gpu::synchronize(stream);
    Compared stats;
    compare_state(mirrors, cpu.state(), dtype, /*exact=*/true, "initial state", stats);
    // Each shard is its block of the full table.
    for (int t = 0; t < num; ++t) {
      const auto& [table, row0, rows, col0] = sc.blocks[static_cast<std::size_t>(t)];
      const Tensor& w = whole_weight(table);
      const Tensor* mine = nullptr;
      for (std::size_t k = 0, seen = 0; k < mirrors.size(); ++k)
        if (mirrors[k].name.ends_with(".weight") && static_cast<int>(seen++) == t) mine = &mirrors[k].host;
      ASSERT_NE(mine, nullptr);
      const std::size_t esize = dtype_size(dtype);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(0, std::memcmp(static_cast<const char*>(mine->raw()) + static_cast<std::size_t>(r * dim) * esize,
                                 static_cast<const char*>(w.raw()) +
                                     static_cast<std::size_t>((row0 + r) * kFullDim + col0) * esize,
                                 static_cast<std::size_t>(dim) * esize))
            << "shard " << t << " row " << r << " is not row " << row0 + r << " of table " << table;
    }

    Rng rng(kSeed + 17);
    const int64_t width = static_cast<int64_t>(num) * dim;
    for (int step = 0; step < kSteps; ++step) {
      const Batch b = random_batch(m, rng);
      dev.validate(b);
      gpu::DeviceBuffer offsets = testing::to_device(b.offsets), ids = testing::to_device(b.ids);
      kernels::DeviceBags bags;
      bags.offsets = offsets.as<int32_t>();
      bags.ids = ids.as<int32_t>();
      bags.batch = b.size;
      bags.max_ids = static_cast<int64_t>(b.ids.size());

      // Forward: poisoned output, every element written, equal to the CPU's.
      gpu::DeviceBuffer pooled = testing::poisoned_floats(static_cast<std::size_t>(kBatch * width));
      gpu::DeviceBuffer bad = testing::to_device(std::vector<int32_t>{0});
      kernels::embedding_bag_forward(dev.tables(), bags, {pooled.get(), width, DType::f32}, bad.as<int32_t>(),
                                     stream);
      gpu::synchronize(stream);
      const std::vector<float> got = testing::to_host<float>(pooled, static_cast<std::size_t>(kBatch * width));
      EXPECT_EQ(testing::to_host<int32_t>(bad, 1)[0], 0);
      std::vector<float> want(got.size());
      cpu.forward(b, want.data());
      // Row-wise Adagrad: a pooled element sums up to kMaxBag - 1 rows, each within the
      // rows' tolerance; bounded through the table's largest element.
      std::vector<double> pooled_tol(static_cast<std::size_t>(num), 0.0);
      if (!exact) {
        int t = 0;
        for (const NamedTensor& nt : cpu.state()) {
          if (!nt.name.ends_with(".weight")) continue;
          double largest = 0.0;
          for (int64_t k = 0; k < nt.tensor.numel(); ++k)
            largest = std::max(largest, std::fabs(static_cast<double>(load_as_f32(nt.tensor.raw(), static_cast<std::size_t>(k), dtype))));
          pooled_tol[static_cast<std::size_t>(t++)] =
              (kMaxBag - 1) * (kRelTol * largest + kUnits16 * unit16(dtype, largest) + kAbsTol);
        }
      }
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_FALSE(std::isnan(got[i])) << "step " << step << " pooled element " << i << " not written";
        if (exact || step == 0)
          ASSERT_EQ(got[i], want[i]) << "step " << step << " pooled element " << i;
        else
          ASSERT_NEAR(got[i], want[i], pooled_tol[(i / static_cast<std::size_t>(dim)) % static_cast<std::size_t>(num)])
              << "step " << step << " pooled element " << i;
      }

      // Backward + update from a fresh random gradient.
      std::vector<float> grad(static_cast<std::size_t>(kBatch * width));
      for (float& g : grad) g = static_cast<float>(rng.normal());
      const int64_t global_step = 11 + step;
      gpu::DeviceBuffer dgrad = testing::to_device(grad);
      gpu::DeviceBuffer scalars = testing::to_device(
          std::vector<kernels::StepScalars>{kernels::make_step_scalars(lr, 0.0, 0.9, 0.999, global_step)});
      const std::size_t ws_bytes = kernels::embedding_backward_workspace_bytes(bags.max_ids, dim);
      gpu::DeviceBuffer ws(ws_bytes);
      kernels::embedding_bag_backward_update(dev.tables(), bags, dgrad.as<float>(), width,
                                             dev.optimizer(scalars.as<kernels::StepScalars>()), ws.get(), ws_bytes,
                                             stream);
      cpu.backward_update(b, grad.data(), lr, global_step);
      gpu_model::download(mirrors, stream);
      gpu::synchronize(stream);
      compare_state(mirrors, cpu.state(), dtype, exact, "after step " + std::to_string(step), stats);
    }
    if (!exact && dtype != DType::f32) {
      EXPECT_LE(stats.differ, stats.elements / 50) << "stochastic rounding disagrees too often";
    }
  }
}

// Origins that do not fit their tables are refused with a ConfigError naming the shard.
TEST(ShardedGpuEmbeddingsGuards, OriginsOutsideTheirTableAreRefused) {
  HETREC_REQUIRE_GPU();
  ModelConfig m;
  m.embedding_dim = 8;
  m.init_seed = 1;
  m.tables = {full_tables()[0]};
  m.tables[0].rows = 100;
  OptimConfig optim;
  gpu::CachingDeviceAllocator alloc(0);
  const gpu::stream_t stream = nullptr;
  const auto build = [&](std::vector<TableOrigin> origins) {
    gpu_model::GpuEmbeddings e(m, optim, alloc, stream, std::move(origins));
  };
  EXPECT_THROW(build({{0, 950, 1000, 0}}), ConfigError);  // rows past the full table
  EXPECT_THROW(build({{0, 0, 1000, 3}}), ConfigError);    // odd column offset
  EXPECT_THROW(build({{0, 0, 1000, 0}, {0, 0, 1000, 0}}), ConfigError);  // one origin per table
  EXPECT_NO_THROW(build({{0, 900, 1000, 8}}));
}

INSTANTIATE_TEST_SUITE_P(
    RowTypesAndOptimizers, ShardedGpuEmbeddings,
    ::testing::Combine(::testing::Values(DType::f32, DType::f16, DType::bf16),
                       ::testing::Values(OptimizerKind::sgd, OptimizerKind::adagrad, OptimizerKind::rowwise_adagrad)),
    [](const ::testing::TestParamInfo<std::tuple<DType, OptimizerKind>>& param_info) {
      const OptimizerKind k = std::get<1>(param_info.param);
      return std::string(dtype_name(std::get<0>(param_info.param))) + "_" +
             (k == OptimizerKind::sgd ? "sgd" : k == OptimizerKind::adagrad ? "adagrad" : "rowwise_adagrad");
    });

}  // namespace
}  // namespace hetrec

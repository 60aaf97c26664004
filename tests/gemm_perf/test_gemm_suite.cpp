// The GEMM shape suite of the cuBLASLt oracle (gemm_perf/gemm_suite.h): size, unique stable ids,
// deterministic order, and every dense GEMM of the shipped DLRM and DLRM-DCNv2 configs.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "gemm_perf/gemm_suite.h"
#include "train/config.h"

namespace hetrec {
namespace {

const std::string kConfigs = std::string(HETREC_SOURCE_DIR) + "/configs/";

TEST(GemmSuite, AtLeast300UniqueShapesInAFixedOrder) {
  const auto suite = gemm_suite();
  EXPECT_GE(suite.size(), 300u);
  std::set<std::string> ids;
  std::set<std::tuple<int64_t, int64_t, int64_t, bool, bool, std::string, std::string>> gemms;
  for (const auto& s : suite) {
    EXPECT_TRUE(ids.insert(s.id).second) << "duplicate id " << s.id;
    EXPECT_TRUE(gemms.insert({s.m, s.n, s.k, s.trans_a, s.trans_b, s.precision, s.epilogue}).second)
        << "duplicate GEMM " << s.id;
    EXPECT_GT(s.m, 0);
    EXPECT_GT(s.n, 0);
    EXPECT_GT(s.k, 0);
  }
  const auto again = gemm_suite();
  ASSERT_EQ(again.size(), suite.size());
  for (std::size_t i = 0; i < suite.size(); ++i) EXPECT_EQ(again[i].id, suite[i].id);
  // Batch-major: batches never decrease along the suite.
  for (std::size_t i = 1; i < suite.size(); ++i) EXPECT_LE(suite[i - 1].batch, suite[i].batch) << suite[i].id;
}

TEST(GemmSuite, EveryPrecisionAndFp8OnlyWhereCublasLtRunsIt) {
  std::set<std::string> precisions;
  for (const auto& s : gemm_suite()) {
    precisions.insert(s.precision);
    if (s.precision != "fp8") continue;
    EXPECT_EQ(s.pass, GemmPass::forward) << s.id;
    EXPECT_TRUE(s.trans_b && !s.trans_a) << s.id;
    EXPECT_EQ(s.k % 16, 0) << s.id;
    EXPECT_EQ(s.n % 16, 0) << s.id;
  }
  EXPECT_EQ(precisions, (std::set<std::string>{"fp32", "tf32", "bf16", "fp16", "fp8"}));
}

TEST(GemmSuite, LayerShapesFollowTheEngine) {
  const DenseLayerShape layer{"m", "l", 479, 1024, true};
  const auto shapes = gemm_layer_shapes(layer, 4096, "bf16");
  ASSERT_EQ(shapes.size(), 3u);
  // forward y = x W^T, dgrad dx = dz W, wgrad dW = dz^T x (model/gpu/gpu_mlp.cpp).
  EXPECT_EQ(std::make_tuple(shapes[0].m, shapes[0].n, shapes[0].k, shapes[0].trans_a, shapes[0].trans_b),
            std::make_tuple(int64_t{4096}, int64_t{1024}, int64_t{479}, false, true));
  EXPECT_EQ(shapes[0].epilogue, "relu_bias");
  EXPECT_EQ(std::make_tuple(shapes[1].m, shapes[1].n, shapes[1].k, shapes[1].trans_a, shapes[1].trans_b),
            std::make_tuple(int64_t{4096}, int64_t{479}, int64_t{1024}, false, false));
  EXPECT_EQ(std::make_tuple(shapes[2].m, shapes[2].n, shapes[2].k, shapes[2].trans_a, shapes[2].trans_b),
            std::make_tuple(int64_t{1024}, int64_t{479}, int64_t{4096}, true, false));
  EXPECT_EQ(shapes[0].id, "m.l.fwd.b4096.bf16");
  EXPECT_TRUE(gemm_layer_shapes(layer, 4096, "fp8").empty());  // K = 479 is no multiple of 16
  EXPECT_THROW(gemm_layer_shapes(layer, 4096, "int8"), Error);
}

// Every dense GEMM of a config, from its model section (widths as the engine builds them).
std::vector<std::pair<int64_t, int64_t>> config_layers(const std::string& file) {
  const ModelConfig m = load_run_config(kConfigs + file).model;
  std::vector<std::pair<int64_t, int64_t>> layers;
  int64_t in = m.num_dense;
  for (int w : m.bottom_mlp) layers.emplace_back(in, w), in = w;
  if (m.arch == Arch::dcnv2 && m.cross_rank > 0) {
    layers.emplace_back(m.interaction_width(), m.cross_rank);
    layers.emplace_back(m.cross_rank, m.interaction_width());
  }
  in = m.interaction_width();
  for (int w : m.top_mlp) layers.emplace_back(in, w), in = w;
  return layers;
}

TEST(GemmSuite, ContainsEveryGemmOfTheShippedConfigs) {
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, std::string>;
  std::set<Key> have;
  for (const auto& s : gemm_suite()) have.insert({s.m, s.n, s.k, s.trans_a, s.trans_b, s.precision});
  for (const std::string file : {"demo.toml", "dlrm_dcnv2_mlperf.toml"}) {
    const auto layers = config_layers(file);
    ASSERT_FALSE(layers.empty());
    for (int64_t batch = 1024; batch <= 128 * 1024; batch *= 2) {
      for (const auto& [in, out] : layers) {
        const std::string where = file + " layer " + std::to_string(in) + "->" + std::to_string(out) + " batch " +
                                  std::to_string(batch);
        std::vector<std::string> precisions = {"bf16"};
        if (batch == 1024 || batch == 8192 || batch == 65536) precisions.insert(precisions.end(), {"tf32", "fp16"});
        if (batch == 1024 || batch == 8192) precisions.push_back("fp32");
        for (const auto& p : precisions) {
          EXPECT_TRUE(have.count({batch, out, in, false, true, p})) << where << " forward " << p;
          EXPECT_TRUE(have.count({batch, in, out, false, false, p})) << where << " dgrad " << p;
          EXPECT_TRUE(have.count({out, in, batch, true, false, p})) << where << " wgrad " << p;
        }
        if (in % 16 == 0 && out % 16 == 0) {
          EXPECT_TRUE(have.count({batch, out, in, false, true, "fp8"})) << where << " forward fp8";
        }
      }
    }
  }
}

}  // namespace
}  // namespace hetrec

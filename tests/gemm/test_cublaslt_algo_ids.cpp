// cuBLASLt's tile / stages / cluster ids as shapes, and an enumerated configuration in the
// model's GemmConfig terms (gemm/cublaslt_algo_ids.h). The numbers are the enumerator
// values of cublasLt.h (CUDA 13), e.g. CUBLASLT_MATMUL_TILE_128x256 = 23.
#include <gtest/gtest.h>

#include "gemm/cublaslt_algo_ids.h"

namespace hetrec::inline gemm::cublaslt {
namespace {

TEST(CublasLtAlgoIds, TileIds) {
  ASSERT_TRUE(tile_shape(23).has_value());  // CUBLASLT_MATMUL_TILE_128x256
  EXPECT_EQ(tile_shape(23)->a, 128);
  EXPECT_EQ(tile_shape(23)->b, 256);
  EXPECT_EQ(tile_text(20), "128x128");  // CUBLASLT_MATMUL_TILE_128x128
  EXPECT_EQ(tile_text(1), "8x8");
  EXPECT_EQ(tile_text(0), "auto");  // UNDEFINED
  EXPECT_FALSE(tile_shape(0).has_value());
  EXPECT_FALSE(tile_shape(tile_id_end()).has_value());
  // Every id below END maps to a positive shape whose sides are multiples of 8.
  for (int id = 1; id < tile_id_end(); ++id) {
    const auto s = tile_shape(id);
    ASSERT_TRUE(s.has_value()) << id;
    EXPECT_GT(s->a, 0);
    EXPECT_EQ(s->a % 8, 0) << id;
    EXPECT_EQ(s->b % 8, 0) << id;
  }
}

TEST(CublasLtAlgoIds, StagesAndClusterIds) {
  EXPECT_EQ(stages_text(16), "64x4");     // CUBLASLT_MATMUL_STAGES_64x4
  EXPECT_EQ(stages_text(35), "64xAUTO");  // CUBLASLT_MATMUL_STAGES_64xAUTO
  EXPECT_EQ(stages_shape(35)->b, 0);
  EXPECT_EQ(stages_shape(22)->a, 128);  // CUBLASLT_MATMUL_STAGES_128x4
  EXPECT_EQ(stages_shape(22)->b, 4);
  EXPECT_FALSE(stages_shape(29).has_value());  // no enumerator has the value 29
  EXPECT_EQ(cluster_text(3), "2x1x1");         // CUBLASLT_CLUSTER_SHAPE_2x1x1
  EXPECT_EQ(cluster_text(5), "1x2x1");
  EXPECT_EQ(cluster_text(0), "auto");
  EXPECT_GT(stages_id_end(), 38);
  EXPECT_GT(cluster_id_end(), 51);
}

TEST(CublasLtAlgoIds, ConfigInModelTerms) {
  AlgoConfig c;
  c.algo_id = 66;
  c.tile_id = 23;    // 128x256
  c.stages_id = 16;  // 64 x 4 stages
  c.split_k = 4;
  c.reduction = 2;
  c.swizzle = 1;
  c.cluster_id = 3;  // 2x1x1
  const GemmConfig g = gemm_config_of(c);
  EXPECT_EQ(g.tile_m, 128);
  EXPECT_EQ(g.tile_n, 256);
  EXPECT_EQ(g.tile_k, 64);
  EXPECT_EQ(g.stages, 4);
  EXPECT_EQ(g.cluster_m, 2);
  EXPECT_EQ(g.cluster_n, 1);
  EXPECT_EQ(g.split_k, 4);
  EXPECT_EQ(g.decomposition, GemmDecomposition::split_k);
  EXPECT_EQ(g.swizzle, 8);
  EXPECT_EQ(algo_key(c), "a66.t23.s16.k4.r2.w1.c3.o0");
  // The text form round-trips through the model's parser (what the oracle file stores).
  EXPECT_EQ(parse_gemm_config(to_string(g), "test"), g);

  AlgoConfig automatic;  // undefined tile, automatic stages and cluster
  const GemmConfig a = gemm_config_of(automatic);
  EXPECT_EQ(a.tile_m, 0);
  EXPECT_EQ(a.stages, 0);
  EXPECT_EQ(a.cluster_m, 0);
  EXPECT_EQ(a.decomposition, GemmDecomposition::data_parallel);
  EXPECT_EQ(a.swizzle, 1);
}

}  // namespace
}  // namespace hetrec::gemm::cublaslt

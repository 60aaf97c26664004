// The communication model against the formulas written out by hand, and its use of the
// shipped hardware files' link rates.
#include <gtest/gtest.h>

#include "core/error.h"
#include "plan/comm_model.h"
#include "plan_test_support.h"

namespace hetrec {
namespace {

TEST(CommModel, RingAllReduceAndAllToAllFollowTheirFormulas) {
  const LinkModel link{100e9, 5e-6};
  const double bytes = 3.7e8;
  EXPECT_EQ(ring_all_reduce_seconds(bytes, 1, link), 0.0);
  EXPECT_EQ(all_to_all_seconds(bytes, 1, link), 0.0);
  // N = 2: one exchange of half the buffer each way, twice (reduce-scatter, all-gather).
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(bytes, 2, link), 2.0 * 0.5 * bytes / 100e9 + 2.0 * 5e-6);
  // N = 8: 14 steps of bytes/8.
  EXPECT_DOUBLE_EQ(ring_all_reduce_seconds(bytes, 8, link), 14.0 * (bytes / 8.0) / 100e9 + 14.0 * 5e-6);
  EXPECT_DOUBLE_EQ(all_to_all_seconds(bytes, 8, link), 7.0 / 8.0 * bytes / 100e9 + 7.0 * 5e-6);
  EXPECT_DOUBLE_EQ(all_gather_seconds(bytes, 4, link), 3.0 * bytes / 100e9 + 3.0 * 5e-6);
  // The bandwidth term of a ring all-reduce approaches 2 S / bw as N grows.
  EXPECT_LT(ring_all_reduce_seconds(bytes, 64, LinkModel{100e9, 0.0}), 2.0 * bytes / 100e9);
  EXPECT_GT(ring_all_reduce_seconds(bytes, 64, LinkModel{100e9, 0.0}), 1.9 * bytes / 100e9);
  EXPECT_THROW(ring_all_reduce_seconds(bytes, 0, link), ConfigError);
  EXPECT_THROW(all_to_all_seconds(bytes, 2, LinkModel{0.0, 1e-6}), ConfigError);
}

TEST(CommModel, UsesTheHardwarePeerLink) {
  const Hardware h200 = load_hardware_by_name("h200_sxm", test::kHwDir);
  const LinkModel link = peer_link_model(h200);
  EXPECT_DOUBLE_EQ(link.bytes_per_s, h200.peer_gbs_per_direction * 1e9);
  EXPECT_DOUBLE_EQ(link.step_latency_s, kAssumedPeerStepLatencyS);
  // 1 GB all-reduced over 8 H200s (450 GB/s per direction): 2 * 7/8 GB / 450 GB/s
  // = 3.89 ms, plus 14 steps of latency.
  EXPECT_NEAR(ring_all_reduce_seconds(1e9, 8, link), 1.75 / 450.0 + 14 * kAssumedPeerStepLatencyS, 1e-12);
}

TEST(CommModel, DataParallelStepCountsPooledEmbeddingsAndDenseGradients) {
  const ModelConfig m = test::small_model(Arch::dcnv2);  // 2 tables, dim 8
  const LinkModel link{50e9, 2e-6};
  const DataParallelCommTimes t = data_parallel_comm_times(m, 10000, 4096, 4, link);
  const double pooled = 1024.0 * 2 * 8 * 4;  // local batch x tables x dim x fp32
  EXPECT_DOUBLE_EQ(t.embedding_forward_s, 0.75 * pooled / 50e9 + 3 * 2e-6);
  EXPECT_DOUBLE_EQ(t.embedding_backward_s, t.embedding_forward_s);
  EXPECT_DOUBLE_EQ(t.dense_all_reduce_s, 1.5 * 40000.0 / 50e9 + 6 * 2e-6);
  EXPECT_DOUBLE_EQ(t.total_s(), t.embedding_forward_s + t.embedding_backward_s + t.dense_all_reduce_s);
  EXPECT_EQ(data_parallel_comm_times(m, 10000, 4096, 1, link).total_s(), 0.0);
}

}  // namespace
}  // namespace hetrec

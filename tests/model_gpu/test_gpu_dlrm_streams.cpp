// The GPU step's second streams change no result: the weight-gradient GEMMs on the side
// lane beside the input-gradient chain (GpuModelOptions::overlap_weight_gradients), and
// on one device the embedding backward beside the bottom MLP's backward and the dense
// optimizer, each give the losses and every state tensor of the model that runs them
// in one stream, bit for bit, at full and low cross rank, for DLRM, fp32 and bf16 GEMMs.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "../gpu/device_test_support.h"
#include "dlrm_test_inputs.h"
#include "model/gpu/gpu_dlrm.h"

namespace hetrec {
namespace {

struct StreamCase {
  const char* name;
  Arch arch;
  int cross_rank;
  bool bf16_dense;
};

class GpuModelStreams : public ::testing::TestWithParam<StreamCase> {};

ModelConfig case_model(const StreamCase& c) {
  ModelConfig m = small_model(c.arch, DType::f32, c.cross_rank);
  if (c.bf16_dense) {
    m.dense_dtype = DType::bf16;
    m.cross_residual_16bit = c.arch == Arch::dcnv2;
  }
  return m;
}

// Trains `reference` and `other` on the same batches and rates (a partial batch
// included; model.dense_dtype picks the GEMM precision) and expects equal losses and state, bit for bit.
void expect_same_training(const ModelConfig& m, const GpuModelOptions& reference_opts, const GpuModelOptions& other_opts) {
  OptimConfig o;
  o.adagrad_initial_accumulator = 0.1;
  auto reference = make_gpu_model(m, o, reference_opts);
  auto other = make_gpu_model(m, o, other_opts);
  for (int step = 0; step < 6; ++step) {
    const int64_t size = step == 4 ? 53 : 256;
    const Batch b = make_batch(m, size, 4100 + static_cast<uint64_t>(step));
    const StepRates r{0.02f * static_cast<float>(step + 1), 0.03f};
    EXPECT_EQ(reference->train_step(b, r), other->train_step(b, r)) << "step " << step;
  }
  const auto a = reference->state(), b = other->state();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].tensor.nbytes(), b[i].tensor.nbytes()) << a[i].name;
    EXPECT_EQ(0, std::memcmp(a[i].tensor.raw(), b[i].tensor.raw(), a[i].tensor.nbytes())) << a[i].name;
  }
}

TEST_P(GpuModelStreams, WeightGradientsBesideTheChainEqualOneStream) {
  HETREC_REQUIRE_GPU();
  const StreamCase& c = GetParam();
  GpuModelOptions one_stream;
  one_stream.overlap_embedding_backward = false;
  GpuModelOptions side_lane = one_stream;
  side_lane.overlap_weight_gradients = true;
  expect_same_training(case_model(c), one_stream, side_lane);
}

TEST_P(GpuModelStreams, EmbeddingBackwardBesideTheBottomMlpEqualsOneStream) {
  HETREC_REQUIRE_GPU();
  const StreamCase& c = GetParam();
  // Profiling runs every phase in the compute stream, one after another, and eagerly.
  GpuModelOptions one_stream;
  one_stream.profile_phases = true;
  GpuModelOptions beside;
  beside.overlap_embedding_backward = true;
  beside.cuda_graph = false;
  expect_same_training(case_model(c), one_stream, beside);
  // Graph-captured, with the weight gradients on their lane too.
  beside.cuda_graph = true;
  beside.overlap_weight_gradients = true;
  expect_same_training(case_model(c), one_stream, beside);
}

INSTANTIATE_TEST_SUITE_P(
    Models, GpuModelStreams,
    ::testing::Values(StreamCase{"dcn_lowrank_fp32", Arch::dcnv2, 8, false},
                      StreamCase{"dcn_fullrank_fp32", Arch::dcnv2, 0, false},
                      StreamCase{"dcn_lowrank_bf16", Arch::dcnv2, 8, true},
                      StreamCase{"dcn_fullrank_bf16", Arch::dcnv2, 0, true},
                      StreamCase{"dlrm_bf16", Arch::dlrm, 0, true}),
    [](const ::testing::TestParamInfo<StreamCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace hetrec

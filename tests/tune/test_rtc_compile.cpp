// NVRTC compilation of the embedding forward's variants from the embedded sources. Needs
// the CUDA build (libnvrtc) but no device: the binaries are built for sm_90.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpu/rtc.h"
#include "tunable/cross_net/cross_net_tuned.h"
#include "tunable/dot_interaction/dot_interaction_backward_tuned.h"
#include "tunable/dot_interaction/dot_interaction_tuned.h"
#include "tunable/embedding_forward/embedding_forward_tuned.h"
#include "kernels/rtc_sources.h"
#include "tunable/sparse_update/sparse_update_tuned.h"

namespace hetrec::kernels {
namespace {

constexpr int kMajor = 9, kMinor = 0;  // the H200's compute capability

std::string read_source(const std::string& rel) {
  std::ifstream f(std::string(HETREC_SOURCE_DIR) + "/src/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(RtcCompile, EmbeddedSourcesAreTheFilesNvccCompiles) {
  ASSERT_FALSE(rtc_source_files().empty());
  for (const gpu::RtcHeader& h : rtc_source_files()) EXPECT_EQ(h.text, read_source(h.name)) << h.name;
  EXPECT_EQ(rtc_sources_hash().size(), 16u);
  EXPECT_NE(fnv1a_hex("a"), fnv1a_hex("b"));
}

TEST(RtcCompile, VariantsOfEveryRowTypeCompile) {
  const EmbeddingForwardShape shapes[] = {{DType::f32, DType::f32, 128}, {DType::bf16, DType::f32, 128},
                                          {DType::f16, DType::bf16, 64}};
  const EmbeddingForwardVariant variants[] = {kDefaultForwardVariant, {4, 8, 1, 64}, {8, 16, 8, 512}, {16, 4, 2, 128}};
  for (const auto& s : shapes)
    for (const auto& v : variants) {
      if (!forward_variant_problem(s, v, 32).empty()) continue;
      const gpu::RtcProgram p = embedding_forward_program(s, v);
      const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
      EXPECT_TRUE(b.ok) << s.key() << " " << p.name_expression << "\n" << b.log;
      EXPECT_FALSE(b.image.empty());
      EXPECT_NE(b.lowered_name.find("embedding_bag_forward_kernel"), std::string::npos) << b.lowered_name;
    }
}

TEST(RtcCompile, DotInteractionBackwardVariantsCompile) {
  bool embedded = false;
  for (const gpu::RtcHeader& h : rtc_source_files()) embedded |= h.name == "tunable/dot_interaction/dot_interaction_backward_kernel.cuh";
  EXPECT_TRUE(embedded);
  for (const DotBackwardVariant v : {kDefaultDotBackwardVariant, DotBackwardVariant{64, 8, 0, 8},
                                     DotBackwardVariant{512, 2, 1, 4}, DotBackwardVariant{128, 4, 0, 2}}) {
    const gpu::RtcProgram p = dot_backward_program(v);
    const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
    EXPECT_TRUE(b.ok) << p.name_expression << "\n" << b.log;
    EXPECT_NE(b.lowered_name.find("dot_backward_kernel"), std::string::npos) << b.lowered_name;
  }
  EXPECT_EQ(dot_backward_program({128, 4, 1, 2}).name_expression, "hetrec::kernels::dot_backward_kernel<128, 4, 1, 2>");
}

TEST(RtcCompile, DotInteractionVariantsCompile) {
  for (const DotForwardVariant v : {kDefaultDotForwardVariant, DotForwardVariant{64, 8, 0}, DotForwardVariant{512, 2, 1}}) {
    const gpu::RtcProgram p = dot_forward_program(v);
    const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
    EXPECT_TRUE(b.ok) << p.name_expression << "\n" << b.log;
    EXPECT_NE(b.lowered_name.find("dot_forward_kernel"), std::string::npos) << b.lowered_name;
  }
  EXPECT_EQ(dot_forward_program({128, 4, 1}).name_expression, "hetrec::kernels::dot_forward_kernel<128, 4, 1>");
}

TEST(RtcCompile, SparseUpdateVariantsOfEveryRowTypeAndOptimizerCompile) {
  const SparseUpdateShape shapes[] = {{DType::f32, 128, SparseOptimizerKind::rowwise_adagrad},
                                      {DType::bf16, 128, SparseOptimizerKind::rowwise_adagrad},
                                      {DType::f16, 64, SparseOptimizerKind::adagrad},
                                      {DType::f32, 64, SparseOptimizerKind::sgd}};
  const SparseUpdateVariant variants[] = {kDefaultSparseUpdateVariant, {4, 8, 1, 128, 1}, {8, 16, 8, 512, 2}};
  for (const auto& s : shapes)
    for (const auto& v : variants) {
      if (!sparse_update_variant_problem(s, v, 32).empty()) continue;
      const gpu::RtcProgram p = sparse_update_program(s, v);
      const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
      EXPECT_TRUE(b.ok) << s.key() << " " << p.name_expression << "\n" << b.log;
      EXPECT_NE(b.lowered_name.find("sparse_update_kernel"), std::string::npos) << b.lowered_name;
    }
  // 16-byte vectors of bf16 over a 128-wide row: 16 vectors, 16 lanes, one each.
  EXPECT_EQ(sparse_update_program({DType::bf16, 128, SparseOptimizerKind::rowwise_adagrad}, kDefaultSparseUpdateVariant)
                .name_expression,
            "hetrec::kernels::sparse_update_kernel<hetrec::kernels::Bf16Bits, 8, 1, "
            "hetrec::kernels::SparseOptimizerKind::rowwise_adagrad, 4, 256, 4>");
}

TEST(RtcCompile, CrossNetVariantsOfEveryOperandTypeCompile) {
  bool embedded = false;
  for (const gpu::RtcHeader& h : rtc_source_files()) embedded = embedded || h.name == kCrossNetKernelHeader;
  EXPECT_TRUE(embedded) << "the cross net's header is among the embedded sources (and so equals its file)";
  for (DType op : {DType::f32, DType::bf16, DType::f16}) {
    const CrossNetShape s{op, 3456};
    for (const CrossForwardVariant v : {kDefaultCrossForwardVariant, CrossForwardVariant{8, 4, 128},
                                        CrossForwardVariant{2, 2, 1024}}) {
      const gpu::RtcProgram p = cross_forward_program(s, v);
      const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
      EXPECT_TRUE(b.ok) << p.name_expression << "\n" << b.log;
      EXPECT_NE(b.lowered_name.find("cross_forward_kernel"), std::string::npos) << b.lowered_name;
    }
    for (const CrossBackwardVariant v : {kDefaultCrossBackwardVariant, CrossBackwardVariant{4, 32, 8, 1024},
                                         CrossBackwardVariant{2, 128, 2, 512}}) {
      const gpu::RtcProgram p = cross_backward_program(s, v);
      const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
      EXPECT_TRUE(b.ok) << p.name_expression << "\n" << b.log;
      EXPECT_NE(b.lowered_name.find("cross_backward_chunk_kernel"), std::string::npos) << b.lowered_name;
    }
  }
  EXPECT_EQ(cross_forward_program({DType::bf16, 3456}, {4, 2, 512}).name_expression,
            "hetrec::kernels::cross_forward_kernel<hetrec::kernels::Bf16Bits, 4, 2, 512>");
  EXPECT_EQ(cross_backward_program({DType::f32, 3456}, {2, 64, 4, 512}).name_expression,
            "hetrec::kernels::cross_backward_chunk_kernel<float, 2, 64, 4, 512>");
}

TEST(RtcCompile, BrokenSourceIsReportedNotThrown) {
  const gpu::RtcProgram p =
      embedding_forward_program({DType::f32, DType::f32, 128}, kDefaultForwardVariant, "this is not C++ ;\n");
  const gpu::RtcBinary b = gpu::rtc_compile(p, kMajor, kMinor);
  EXPECT_FALSE(b.ok);
  EXPECT_TRUE(b.image.empty());
  EXPECT_NE(b.log.find("error"), std::string::npos) << b.log;
}

TEST(RtcCompile, ProgramNamesTheInstantiation) {
  const gpu::RtcProgram p = embedding_forward_program({DType::bf16, DType::f32, 128}, {16, 8, 2, 128});
  // 8 bf16 per 16-byte vector, 16 vectors over 8 lanes: 2 per lane.
  EXPECT_EQ(p.name_expression,
            "hetrec::kernels::embedding_bag_forward_kernel<hetrec::kernels::Bf16Bits, float, 8, 2, 2, 128>");
  EXPECT_THROW(embedding_forward_program({DType::f32, DType::f32, 130}, kDefaultForwardVariant), ConfigError);
}

}  // namespace
}  // namespace hetrec::kernels

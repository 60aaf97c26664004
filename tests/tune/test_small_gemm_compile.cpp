// NVRTC compilation of the small-GEMM kernels from their embedded sources: every kind and
// operand type of the engine's shapes, and the reduce kind's second pass. Needs the CUDA
// build (libnvrtc) but no device: the binaries are built for sm_90.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gpu/rtc.h"
#include "kernels/rtc_sources.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "tunable/small_gemm/small_gemm_tuned.h"
#include "tunable/small_gemm/small_gemm_cost.h"

namespace hetrec::kernels {
namespace {

constexpr int kMajor = 9, kMinor = 0;  // the H200's compute capability

std::string read_source(const std::string& rel) {
  std::ifstream f(std::string(HETREC_SOURCE_DIR) + "/src/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(SmallGemmCompile, EmbeddedSourcesAreTheFilesAndHaveTheirOwnHash) {
  ASSERT_FALSE(small_gemm_source_files().empty());
  for (const gpu::RtcHeader& h : small_gemm_source_files()) EXPECT_EQ(h.text, read_source(h.name)) << h.name;
  EXPECT_EQ(small_gemm_sources_hash().size(), 16u);
  EXPECT_NE(small_gemm_sources_hash(), rtc_sources_hash());
  // The hash is FNV-1a over name, NUL, text of every file in order.
  std::string all;
  for (const gpu::RtcHeader& h : small_gemm_source_files()) all += h.name + std::string(1, '\0') + h.text;
  EXPECT_EQ(small_gemm_sources_hash(), fnv1a_hex(all));
}

TEST(SmallGemmCompile, EveryEngineShapeCompilesWithItsDefaultAndAnotherVariant) {
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (const auto& list : {tune::small_gemm_mlp_gemms("b", 13, {512, 256, 128}, true, true, t),
                             tune::small_gemm_mlp_gemms("t", 3456, {1024, 512, 256, 1}, false, true, t)})
      for (const auto& g : list) {
        SmallGemmVariant other = default_small_gemm_variant(g.shape);
        other.vec = 1;
        other.unroll = 4;
        if (g.shape.kind == SmallGemmKind::rows) other.lanes = 32;
        for (const SmallGemmVariant& v : {default_small_gemm_variant(g.shape), other}) {
          ASSERT_EQ(small_gemm_variant_problem(g.shape, v, 32, 227 * 1024), "") << g.shape.key();
          const gpu::RtcBinary b = gpu::rtc_compile(small_gemm_program(g.shape, v), kMajor, kMinor);
          EXPECT_TRUE(b.ok) << g.shape.key() << ":\n" << b.log;
          EXPECT_FALSE(b.image.empty());
        }
      }
  const gpu::RtcBinary finish = gpu::rtc_compile(small_gemm_finish_program(), kMajor, kMinor);
  EXPECT_TRUE(finish.ok) << finish.log;
}

TEST(SmallGemmCompile, ABrokenHeaderFailsToCompileWithItsLog) {
  SmallGemmShape s;
  const gpu::RtcBinary b = gpu::rtc_compile(small_gemm_program(s, default_small_gemm_variant(s), "garbage ("), kMajor,
                                            kMinor);
  EXPECT_FALSE(b.ok);
  EXPECT_FALSE(b.log.empty());
}

}  // namespace
}  // namespace hetrec::kernels

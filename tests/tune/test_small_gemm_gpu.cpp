// The small-GEMM kernels on the device: every kind, both operand layouts, fp32, bf16 and
// fp16 operands and every epilogue against the double-precision reference (C poisoned
// first, its row padding checked untouched), with sizes that are not multiples of the
// vector width, the rows per block or the unroll; a deliberately wrong kernel source
// (each output drops the last K term) is rejected and never stored; a short tuning run
// of one shape keeps only a winner that beat cuBLASLt, under the small-GEMM source hash.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <unistd.h>

#include "../gpu/device_test_support.h"
#include "gate_test_support.h"
#include "core/rng.h"
#include "gemm/cublaslt_gemm.h"
#include "gpu/caching_allocator.h"
#include "gpu/device.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "tunable/small_gemm/small_gemm_tuned.h"
#include "tune/gate.h"
#include "tunable/small_gemm/small_gemm_bench.h"
#include "tune/gpu/tune_session.h"
#include "tune/winners.h"

namespace hetrec::tune {
namespace {

using kernels::SmallGemmEpilogue;
using kernels::SmallGemmKind;
using kernels::SmallGemmShape;
using kernels::SmallGemmVariant;

// Row strides padded to 8 elements: 16-byte vectors of 16-bit operands stay aligned while
// the widths themselves leave tails.
constexpr int kLdMultiple = 8;
// 1003 rows: not a multiple of any rows per block x unroll.
constexpr int64_t kRows = 1003;

SmallGemmShape make(SmallGemmKind kind, int narrow, int wide, bool flag, DType t, SmallGemmEpilogue e) {
  SmallGemmShape s;
  s.kind = kind;
  s.narrow = narrow;
  s.wide = wide;
  s.flag = flag;
  s.operand = t;
  s.epilogue = e;
  return s;
}

SmallGemmLaunch launch_of(const kernels::TunedSmallGemm& k) {
  return [&k](const kernels::SmallGemmArgs& g, gpu::stream_t s) { k.launch(g, s); };
}

TEST(SmallGemmGpu, EveryKindLayoutTypeAndEpilogueMatchesTheReference) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  const SmallGemmEpilogue epilogues[] = {SmallGemmEpilogue::none, SmallGemmEpilogue::bias,
                                         SmallGemmEpilogue::relu_bias};
  int checked = 0;
  uint64_t seed = Rng(11).next_u64();
  int combination = 0;
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (bool flag : {true, false}) {
      // Over the six combinations each epilogue meets both layouts and two operand types.
      const SmallGemmEpilogue e = epilogues[combination++ % 3];
        for (SmallGemmKind kind : {SmallGemmKind::rows, SmallGemmKind::outer, SmallGemmKind::reduce}) {
          // rows: 3 outputs of a 259-long dot (tail of 3 after whole vectors); outer: 13
          // inputs to 509 outputs (a partial last vector); reduce: 5 x 509.
          const SmallGemmShape s = kind == SmallGemmKind::rows    ? make(kind, 3, 259, flag, t, e)
                                   : kind == SmallGemmKind::outer ? make(kind, 13, 509, flag, t, e)
                                                                  : make(kind, 5, 509, flag, t, SmallGemmEpilogue::none);
          SmallGemmBench bench(s, kRows, ++seed, 2, kLdMultiple);
          std::vector<SmallGemmVariant> variants = {kernels::default_small_gemm_variant(s)};
          // Scalar accesses with deep unrolls; for reduce also more chunks than rows.
          if (kind == SmallGemmKind::rows) variants.push_back({1, 32, 1, 4, 1});
          if (kind == SmallGemmKind::outer) variants.push_back({2, 1, 2, 4, 1});
          if (kind == SmallGemmKind::reduce) variants.insert(variants.end(), {{2, 1, 2, 4, 7}, {1, 1, 1, 1, 2000}});
          for (const SmallGemmVariant& v : variants) {
            // 32-lane warps, the 48 KB of shared memory a block gets without opting in.
            const std::string why = kernels::small_gemm_variant_problem(s, v, 32, 48 * 1024);
            ASSERT_EQ(why, "") << s.key();
            const kernels::TunedSmallGemm k(s, v, dev.compute_major, dev.compute_minor);
            const ForwardCheck c = bench.verify(launch_of(k), k.workspace_floats());
            EXPECT_TRUE(c.ok) << s.key() << " vec=" << v.vec << " lanes=" << v.lanes << " rows=" << v.rows_per_block
                              << " unroll=" << v.unroll << " split=" << v.split << ": " << c.reason;
            ++checked;
          }
          // The reference itself against cuBLASLt on the same operands.
          gpu::CachingDeviceAllocator allocator(gpu::current_device());
          cublaslt::Gemm gemm(allocator);
          if (gemm.supported(bench.cublas_problem())) {
            const ForwardCheck c = bench.verify([&](const kernels::SmallGemmArgs& g, gpu::stream_t st) {
              gemm.run(bench.cublas_problem(), bench.cublas_operands(g), st);
            });
            EXPECT_TRUE(c.ok) << "cuBLASLt on " << s.key() << ": " << c.reason;
          }
        }
    }
  EXPECT_EQ(checked, 6 * 7);
}

TEST(SmallGemmGpu, AWrongKernelIsRejectedAndNeverStored) {
  HETREC_REQUIRE_GPU();
  const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
  const SmallGemmShape s = make(SmallGemmKind::outer, 13, 512, true, DType::f32, SmallGemmEpilogue::relu_bias);
  SmallGemmBench bench(s, 4096, Rng(5).next_u64(), 2);
  const SmallGemmVariant v = kernels::default_small_gemm_variant(s);
  const kernels::TunedSmallGemm right(s, v, dev.compute_major, dev.compute_minor);
  ASSERT_TRUE(bench.verify(launch_of(right)).ok);

  // The wrong candidate: every output misses its last K term.
  std::string header;
  for (const gpu::RtcHeader& h : kernels::small_gemm_source_files())
    if (h.name == "tunable/small_gemm/small_gemm_kernel.cuh") header = h.text;
  const std::string sum = "for (int kk = 0; kk < K; ++kk) acc = fmaf(x[u][kk], w[kk][v], acc);";
  ASSERT_NE(header.find(sum), std::string::npos);
  header.replace(header.find(sum), sum.size(), "for (int kk = 0; kk < K - 1; ++kk) acc = fmaf(x[u][kk], w[kk][v], acc);");
  const kernels::TunedSmallGemm wrong(s, v, dev.compute_major, dev.compute_minor, header);
  const ForwardCheck c = bench.verify(launch_of(wrong));
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("differs from the reference"), std::string::npos) << c.reason;

  // It runs, and may even be fast: the gate must keep it out on its verdict.
  expect_never_stored(kSmallGemmKernel, s.key(), kernels::small_gemm_sources_hash(),
                      small_gemm_parameters(v), c, header,
                      bench.median_us(launch_of(wrong), 3));
}

TEST(SmallGemmGpu, ShortRunKeepsOnlyWinnersThatBeatCublasLt) {
  HETREC_REQUIRE_GPU();
  TuneOptions o;
  o.kernels = {kSmallGemmKernel};
  o.budget_minutes = 0.15;
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
  o.winners_path = (dir / "winners.json").string();
  o.small_gemm_shapes = {make(SmallGemmKind::rows, 1, 256, true, DType::f32, SmallGemmEpilogue::bias)};
  o.batch = 8192;
  o.reps = 5;
  o.rotations = 2;
  std::ostringstream progress;
  const nlohmann::json r = run_tuning(o, progress);
  ASSERT_EQ(r["shapes"].size(), 1u);
  const nlohmann::json& s = r["shapes"][0];
  EXPECT_EQ(s["kernel"], kSmallGemmKernel);
  EXPECT_TRUE(s["baseline_verified"].get<bool>()) << progress.str();
  EXPECT_GE(s["candidates_passed"].get<int>(), 1) << progress.str();
  const WinnersStore store = WinnersStore::load(o.winners_path);
  if (s.contains("winner_us")) {
    ASSERT_EQ(store.winners().size(), 1u);
    EXPECT_LT(s["winner_us"].get<double>(), s["default_us"].get<double>());
    EXPECT_EQ(store.winners()[0].key.source_hash, kernels::small_gemm_sources_hash());
  } else {
    EXPECT_TRUE(store.winners().empty());
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace hetrec::tune

// Replays a recorded run of bench/small_gemm_bench --all-variants (every small-GEMM
// variant and cuBLASLt's configurations timed on the narrow-layer GEMMs of the MLPerf
// DLRM-DCNv2 config, fp32, on an H200) through today's selection:
//   - the small-GEMM variant: the first of rank_small_gemm's order that was measured (a
//     variant whose registers forbid its block is skipped, as the engine skips it after
//     compiling);
//   - the kind of kernel: the small-GEMM kernel when its prediction is below the one the
//     recorded cuBLASLt model choice had, else that choice.
// The chosen kernel's measured time against the fastest measured for the GEMM (the
// oracle) gives the geomean the test holds at or above the recorded figure, so the
// small-GEMM model cannot silently get worse. It also checks that every variant the
// bench timed passed its verification. REPLAY_VERBOSE=1 prints, per GEMM, the model's first
// variants with their measured times and the measured best.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "tune/small_gemm_selection.h"

namespace hetrec::tune {
namespace {

using json = nlohmann::json;

const std::string kSource = HETREC_SOURCE_DIR;
// The records and the figures of today's model on them (docs/gemm_selection.md, "The
// small-GEMM kernels as candidates"): geomean of oracle / chosen over each record's GEMMs,
// and of our best variant / the variant picked. The first record's narrow GEMMs informed
// the model's fitted constants (kStagingStepClocks, kFinishClocksPerChunk); the bf16 and
// demo records did not.
struct RecordedReplay {
  const char* file;
  double selection_geomean;
  double pick_geomean;
};
constexpr RecordedReplay kRecords[] = {
    {"bench/results/small-gemm-20261130-selection-dcnv2-fp32-h200.json", 0.915, 0.910},   // DLRM-DCNv2 narrow layers, fp32
    {"bench/results/small-gemm-20261130-selection-dcnv2-bf16-h200.json", 0.793, 0.786},  // the same, bf16 operands
    {"bench/results/small-gemm-20261130-selection-demo-fp32-h200.json", 0.906, 0.915},  // configs/demo.toml, fp32
};

kernels::SmallGemmShape shape_of(const json& j) {
  kernels::SmallGemmShape s;
  const std::string kind = j.at("kind");
  s.kind = kind == "rows" ? kernels::SmallGemmKind::rows
           : kind == "outer" ? kernels::SmallGemmKind::outer
                             : kernels::SmallGemmKind::reduce;
  s.narrow = j.at("narrow");
  s.wide = j.at("wide");
  s.flag = j.at("flag");
  const std::string e = j.at("epilogue");
  s.epilogue = e == "none" ? kernels::SmallGemmEpilogue::none
               : e == "bias" ? kernels::SmallGemmEpilogue::bias
                             : kernels::SmallGemmEpilogue::relu_bias;
  s.operand = DType::f32;
  return s;
}

struct Replay {
  double selection_geomean = 0.0, pick_geomean = 0.0, heuristic_geomean = 0.0, cublaslt_model_geomean = 0.0;
  int gemms = 0, chose_ours = 0;
};

Replay replay(const json& record, const Hardware& hw, const GemmModelParams& params) {
  Replay out;
  double sel = 0.0, pick = 0.0, heur = 0.0, clm = 0.0;
  int picks = 0;
  for (const json& r : record.at("metrics").at("records")) {
    const json& s = r.at("selection");
    const SmallGemmWorkload w{shape_of(r.at("small_gemm_shape")), r.at("batch").get<int64_t>()};
    std::map<std::tuple<int, int, int, int, int>, double> measured;
    for (const json& v : s.at("ours_variants")) {
      const json& p = v.at("params");
      const auto key = std::make_tuple(p.at("vec").get<int>(), p.at("lanes").get<int>(),
                                       p.at("rows_per_block").get<int>(), p.at("unroll").get<int>(),
                                       p.at("split").get<int>());
      if (v.contains("median_us")) {
        EXPECT_TRUE(v.at("verified").get<bool>()) << r.at("role") << " " << p.dump();
        measured[key] = v.at("median_us");
      } else {
        // Only variants whose registers forbid their block may go untimed.
        EXPECT_EQ(v.value("reason", "").rfind("resources:", 0), 0u) << r.at("role") << " " << v.dump();
      }
    }
    std::optional<SmallGemmPick> ours;
    double ours_us = 0.0;
    for (const SmallGemmPick& p : rank_small_gemm(hw, small_gemm_problem(w), params)) {
      if (p.workload.shape != w.shape) continue;
      const auto it = measured.find(
          std::make_tuple(p.variant.vec, p.variant.lanes, p.variant.rows_per_block, p.variant.unroll, p.variant.split));
      if (it == measured.end()) continue;
      ours = p;
      ours_us = it->second;
      break;
    }
    if (std::getenv("REPLAY_VERBOSE")) {
      int shown = 0;
      for (const SmallGemmPick& p : rank_small_gemm(hw, small_gemm_problem(w), params)) {
        const auto it = measured.find(std::make_tuple(p.variant.vec, p.variant.lanes, p.variant.rows_per_block,
                                                      p.variant.unroll, p.variant.split));
        if (shown++ < 8)
          std::printf("   v%d l%d r%d u%d s%d pred %.1f meas %.1f\n", p.variant.vec, p.variant.lanes,
                      p.variant.rows_per_block, p.variant.unroll, p.variant.split, p.predicted_us,
                      it == measured.end() ? -1.0 : it->second);
      }
      std::vector<std::pair<double, std::string>> best;
      for (const json& v : s.at("ours_variants"))
        if (v.contains("median_us")) best.push_back({v.at("median_us").get<double>(), v.at("params").dump()});
      std::sort(best.begin(), best.end());
      for (std::size_t i = 0; i < best.size() && i < 4; ++i) std::printf("   best %.1f %s\n", best[i].first, best[i].second.c_str());
    }
    const double oracle = s.at("oracle_us");
    const bool has_model = s.contains("cublaslt_model") && s.at("cublaslt_model").contains("median_us");
    double chosen = 0.0;
    if (ours && (!has_model || ours->predicted_us < s.at("cublaslt_model").at("predicted_us").get<double>())) {
      chosen = ours_us;
      ++out.chose_ours;
    } else if (has_model) {
      chosen = s.at("cublaslt_model").at("median_us");
    } else {
      chosen = r.at("cublaslt_heuristic").at("median_us");  // neither: the engine's library path
    }
    if (ours) {
      pick += std::log(s.at("ours_best_us").get<double>() / ours_us);
      ++picks;
    }
    sel += std::log(oracle / chosen);
    heur += std::log(oracle / r.at("cublaslt_heuristic").at("median_us").get<double>());
    clm += std::log(oracle / (has_model ? s.at("cublaslt_model").at("median_us").get<double>()
                                        : r.at("cublaslt_heuristic").at("median_us").get<double>()));
    ++out.gemms;
    std::printf("%-34s %7lld  oracle %7.1f  chosen %7.1f (%s)  ours pick %7.1f  best %7.1f\n",
                r.at("role").get<std::string>().c_str(), static_cast<long long>(w.m), oracle, chosen,
                chosen == ours_us && ours ? "ours" : "cuBLASLt", ours ? ours_us : 0.0,
                s.value("ours_best_us", 0.0));
  }
  out.selection_geomean = std::exp(sel / out.gemms);
  out.pick_geomean = picks ? std::exp(pick / picks) : 0.0;
  out.heuristic_geomean = std::exp(heur / out.gemms);
  out.cublaslt_model_geomean = std::exp(clm / out.gemms);
  return out;
}

TEST(SmallGemmSelectionReplay, SelectionIsNoWorseThanRecorded) {
  const Hardware hw = load_hardware_by_name("h200_sxm", kSource + "/hw");
  for (const RecordedReplay& rec : kRecords) {
    std::ifstream f(kSource + "/" + rec.file);
    ASSERT_TRUE(f) << "missing " << rec.file;
    const json record = json::parse(f);
    const GemmModelParams params =
        load_gemm_params(kSource + "/" + record.at("metrics").at("model_params").get<std::string>());
    const Replay r = replay(record, hw, params);
    std::printf("%s: selection %.3f (ours chosen on %d of %d)  ours pick / ours best %.3f  cuBLASLt heuristic %.3f  "
                "cuBLASLt model choice %.3f\n",
                rec.file, r.selection_geomean, r.chose_ours, r.gemms, r.pick_geomean, r.heuristic_geomean,
                r.cublaslt_model_geomean);
    EXPECT_GE(r.gemms, 20) << rec.file;
    EXPECT_GE(r.selection_geomean, rec.selection_geomean - 1e-3) << rec.file;
    EXPECT_GE(r.pick_geomean, rec.pick_geomean - 1e-3) << rec.file;
  }
}

}  // namespace
}  // namespace hetrec::tune

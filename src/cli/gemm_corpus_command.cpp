#include "cli/gemm_corpus_command.h"

#include <algorithm>
#include <array>
#include <ctime>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/hw_dir.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "core/utc_time.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_calibration.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_merge.h"
#include "gemm_perf/gemm_ranker.h"
#include "gemm_perf/gemm_ranker_features.h"
#include "gemm_perf/gemm_selection_cache.h"

namespace hetrec::cli {

namespace {

struct CorpusOptions {
  std::string oracle, out, ranker, report, hw = "h200_sxm", hw_dir = default_hw_dir();
  std::vector<std::string> pieces;
};

// CPU time (this thread) per new shape of the router, of its ranker path (features and
// scoring) alone, and of a repeated shape's cache lookup. The heuristic's query, which needs
// the GPU, is not included.
struct SelectionCost {
  // Per shape the median of a few timings; then the mean and the largest over the corpus.
  double per_shape_us = 0.0, per_shape_max_us = 0.0;      // the router as the engine runs it
  double ranked_path_us = 0.0, ranked_path_max_us = 0.0;  // features and scoring on every shape
  double cache_hit_us = 0.0;  // a repeated shape: one GemmSelectionCache lookup
  std::size_t shapes = 0;
};

// Median CPU time of the heuristic's list query the oracle recorded per shape (0: none).
double heuristic_query_us(const GemmOracle& oracle) {
  std::vector<double> us;
  for (const OracleShape& s : oracle.shapes)
    if (s.heuristic_list_query_us > 0) us.push_back(s.heuristic_list_query_us);
  return percentile(us, 0.5);
}

double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e6 * static_cast<double>(t.tv_sec) + 1e-3 * static_cast<double>(t.tv_nsec);
}

SelectionCost selection_cost(const GemmRanker& ranker, const Hardware& hw, const GemmModelParams& params,
                             const std::vector<RankerShape>& shapes) {
  // A shape's cost is the median of a few timings, so one preempted run does not become the
  // corpus's largest.
  constexpr int kSelectionRepeats = 5;
  const auto median_us = [&](const auto& select) {
    std::array<double, kSelectionRepeats> t{};
    for (double& x : t) {
      const double t0 = thread_cpu_us();
      select();
      x = thread_cpu_us() - t0;
    }
    std::nth_element(t.begin(), t.begin() + kSelectionRepeats / 2, t.end());
    return t[kSelectionRepeats / 2];
  };
  SelectionCost c;
  for (const RankerShape& s : shapes) {
    const double router = median_us([&] {
      (void)select_gemm_by_ranker(ranker, hw, params, s.problem, s.candidates, s.heuristic_candidate);
    });
    const double ranked = median_us([&] {  // the ranker's path (features and scoring) on every shape
      (void)route_gemm_choice(ranker, gemm_ranker_rows(hw, params, s.problem, s.candidates), s.heuristic_candidate);
    });
    c.per_shape_us += router, c.per_shape_max_us = std::max(c.per_shape_max_us, router);
    c.ranked_path_us += ranked, c.ranked_path_max_us = std::max(c.ranked_path_max_us, ranked);
    ++c.shapes;
  }
  const double n = static_cast<double>(c.shapes ? c.shapes : 1);
  c.per_shape_us /= n;
  c.ranked_path_us /= n;
  GemmSelectionCache cache(make_gemm_cache_validators("gpu", "driver", "library", params));
  for (const RankerShape& s : shapes) cache.insert(s.problem, CachedGemmChoice{});
  constexpr int kLookupRounds = 100;
  const double lookups = thread_cpu_us();
  std::size_t hits = 0;
  for (int round = 0; round < kLookupRounds; ++round)
    for (const RankerShape& s : shapes) hits += cache.find(s.problem).has_value() ? 1 : 0;
  c.cache_hit_us = (thread_cpu_us() - lookups) / static_cast<double>(hits ? hits : 1);
  return c;
}

}  // namespace

void add_gemm_corpus_commands(CLI::App* gemm, Action& action) {
  auto o = std::make_shared<CorpusOptions>();
  CLI::App* merge = gemm->add_subcommand(
      "merge", "merge pieces of one oracle corpus (gemm bench --shard) measured alike into one results file");
  merge->add_option("pieces", o->pieces, "results files of gemm bench (.json or .json.xz)")->required();
  merge->add_option("--out", o->out, "the merged results file (JSON)")->required();
  merge->callback([o, &action] {
    action = [o] {
      write_file_atomically(o->out, merge_gemm_oracles(o->pieces));
      std::printf("merged %zu pieces -> %s\n", o->pieces.size(), o->out.c_str());
    };
  });

  CLI::App* features = gemm->add_subcommand(
      "features", "write the learned ranker's features of every candidate of an oracle (CSV, for training)");
  features->add_option("--oracle", o->oracle, "results of hetrec gemm bench (.json or .json.xz)")->required();
  features->add_option("--out", o->out, "the CSV file")->required();
  features->add_option("--hw", o->hw, "hardware description name")->capture_default_str();
  features->add_option("--hw-dir", o->hw_dir, "hardware descriptions directory")->capture_default_str();
  features->callback([o, &action] {
    action = [o] {
      const Hardware hw = load_hardware_by_name(o->hw, o->hw_dir);
      const GemmModelParams params = load_gemm_params_for(hw, o->hw_dir + "/params");
      const auto shapes = ranker_shapes(hw, load_gemm_oracle(o->oracle));
      write_file_atomically(o->out, gemm_ranker_csv(hw, params, shapes));
      std::printf("%zu shapes -> %s\n", shapes.size(), o->out.c_str());
    };
  });

  CLI::App* eval = gemm->add_subcommand(
      "ranker-eval", "judge a trained ranker on its corpus held out by family, beside cuBLASLt's heuristic");
  eval->add_option("--ranker", o->ranker, "the ranker file (tools/train_gemm_ranker.py)")->required();
  eval->add_option("--oracle", o->oracle, "the corpus it was trained on")->required();
  eval->add_option("--report", o->report, "write the results record (JSON) here");
  eval->add_option("--hw", o->hw, "hardware description name")->capture_default_str();
  eval->add_option("--hw-dir", o->hw_dir, "hardware descriptions directory")->capture_default_str();
  eval->callback([o, &action] {
    action = [o] {
      const Hardware hw = load_hardware_by_name(o->hw, o->hw_dir);
      const GemmModelParams params = load_gemm_params_for(hw, o->hw_dir + "/params");
      const GemmOracle oracle = load_gemm_oracle(o->oracle);
      const GemmRankerValidators device{oracle.gpu, oracle.driver, oracle.cublaslt_version, ""};
      const auto shapes = ranker_shapes(hw, oracle);
      const RankerEvaluation e = evaluate_ranker_held_out(o->ranker, device, hw, params, shapes);
      const SelectionCost cost = selection_cost(*load_gemm_ranker(o->ranker, device), hw, params, shapes);
      std::printf("%zu shapes held out by family: ranker geomean %.4f p5 %.4f time-weighted %.4f | routed %.4f p5 "
                  "%.4f time-weighted %.4f (%zu learned picks) | heuristic %.4f p5 %.4f time-weighted %.4f\n"
                  "selection cost per new shape: %.1f us of CPU mean, %.1f us largest (the ranker's path on every "
                  "shape: %.1f us mean, %.1f us largest) + the heuristic's query, %.1f us median as the oracle "
                  "recorded it; a repeated shape: %.2f us (cache lookup)\n",
                  e.shapes, e.ranker_geomean, e.ranker_p5, e.ranker_time_weighted, e.routed_geomean, e.routed_p5,
                  e.routed_time_weighted, e.routed_learned, e.heuristic_geomean, e.heuristic_p5,
                  e.heuristic_time_weighted, cost.per_shape_us, cost.per_shape_max_us, cost.ranked_path_us, cost.ranked_path_max_us, heuristic_query_us(oracle),
                  cost.cache_hit_us);
      std::printf("timed shortlist (of the ranker's top k and the heuristic's top-1, the fastest unless within %.0f%% of "
                  "the heuristic's):", 100.0 * kShortlistMargin);
      for (const ShortlistFigures& f : e.shortlist)
        std::printf(" | top-%d %.4f p5 %.4f time-weighted %.4f", f.k, f.geomean, f.p5, f.time_weighted);
      std::printf("\n");
      if (o->report.empty()) return;
      nlohmann::json shortlist = nlohmann::json::array();
      for (const ShortlistFigures& f : e.shortlist)
        shortlist.push_back({{"k", f.k}, {"geomean", f.geomean}, {"p5", f.p5}, {"time_weighted", f.time_weighted}});
      const nlohmann::json j{
          {"what", "GEMM selection by the learned ranker and its router, held out by layer family (every shape "
                   "predicted once by the fold model that never saw its family), beside cuBLASLt's heuristic top-1 "
                   "as returned; zero timing"},
          {"date", utc_time("%Y-%m-%d")},
          {"hardware", oracle.gpu + ", driver " + oracle.driver + ", cuBLASLt " + oracle.cublaslt_version},
          {"commit", std::getenv("HETREC_COMMIT") ? std::getenv("HETREC_COMMIT") : ""},
          {"command", "hetrec gemm ranker-eval --ranker " + o->ranker + " --oracle " + o->oracle + " --hw " + o->hw},
          {"hw", o->hw},
          {"oracle", o->oracle},
          {"ranker_file", o->ranker},
          {"floor", "n/a (a selection: the oracle, the fastest measured configuration, is the ceiling 1.0)"},
          {"shapes", e.shapes},
          {"ranker", {{"geomean", e.ranker_geomean}, {"p5", e.ranker_p5}, {"time_weighted", e.ranker_time_weighted}}},
          {"routed",
           {{"geomean", e.routed_geomean}, {"p5", e.routed_p5}, {"time_weighted", e.routed_time_weighted},
            {"learned_picks", e.routed_learned}}},
          {"heuristic",
           {{"geomean", e.heuristic_geomean}, {"p5", e.heuristic_p5}, {"time_weighted", e.heuristic_time_weighted}}},
          {"routed_over_heuristic_time_weighted", e.routed_time_weighted / e.heuristic_time_weighted},
          {"timed_shortlist",
           {{"what", "per shape, of the held-out ranker's k best-scored candidates and the heuristic's top-1 as "
                     "returned, the fastest measured unless the heuristic's top-1 is within the margin of it: what "
                     "timing those k + 1 once per new shape would choose (not zero timing)"},
            {"margin", kShortlistMargin},
            {"sizes", std::move(shortlist)}}},
          {"selection_cpu_us_per_new_shape",
           {{"router_mean", cost.per_shape_us},
            {"router_max", cost.per_shape_max_us},
            {"router_worst_total", cost.per_shape_max_us + heuristic_query_us(oracle)},
            {"ranker_path_mean", cost.ranked_path_us},
            {"ranker_path_max", cost.ranked_path_max_us},
            {"heuristic_query_median_recorded", heuristic_query_us(oracle)},
            {"total_worst", cost.ranked_path_max_us + heuristic_query_us(oracle)},
            {"repeats_per_shape", 5},
            {"note", "CPU time of this thread on the machine that ran the command, per shape the median of the "
                     "repeats; the heuristic's query needs the GPU, so its CPU time is the median the oracle "
                     "recorded on the host of its GPU (" + oracle.gpu + ")"}}},
          {"cache_hit_us", cost.cache_hit_us}};
      write_file_atomically(o->report, j.dump(2) + "\n");
    };
  });
}

}  // namespace hetrec::cli

// `hetrec hw list | show | probe`, `hetrec gemm select` and `hetrec gemm bench`: hardware
// descriptions, the analytical GEMM selector and the cuBLASLt oracle.
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>

#include "cli/commands.h"
#include "cli/gemm_corpus_command.h"
#include "cli/hw_dir.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "gemm/device_probe.h"
#include "gemm/gemm_bench.h"
#include "gemm_perf/gemm_corpus.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_calibration_run.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_problem.h"
#include "gemm_perf/gemm_report.h"
#include "gemm_perf/gemm_selector.h"
#include "tune/gemm_select_text.h"

namespace hetrec::cli {

void add_hw_command(CLI::App& app, Action& action) {
  auto dir = std::make_shared<std::string>(default_hw_dir());
  CLI::App* hw = app.add_subcommand("hw", "hardware descriptions the performance model and planner use");
  hw->require_subcommand(1);
  hw->add_option("--hw-dir", *dir, "folder of hardware description files")->capture_default_str();
  CLI::App* list = hw->add_subcommand("list", "list the described accelerators");
  list->callback([dir, &action] {
    action = [dir] {
      for (const auto& name : list_hardware(*dir)) {
        const Hardware h = load_hardware_by_name(name, *dir);
        std::printf("%-10s %-22s %4d %s, %6.1f GB HBM at %.2f TB/s, bf16 %.0f TFLOP/s\n", h.name.c_str(),
                    h.display_name.c_str(), h.compute_units, h.vendor == Vendor::nvidia ? "SMs" : "CUs", h.hbm_gb,
                    h.hbm_tbs, h.dense_tflops.bf16);
      }
    };
  });
  auto name = std::make_shared<std::string>();
  CLI::App* show = hw->add_subcommand("show", "print one description with the source of every number");
  show->add_option("name", *name, "e.g. h200_sxm")->required();
  show->callback([dir, name, &action] {
    action = [dir, name] {
      const Hardware h = load_hardware_by_name(*name, *dir);
      std::printf("%s (%s, %s) from %s\n", h.display_name.c_str(), h.name.c_str(), h.arch.c_str(), h.path.c_str());
      for (const auto& [key, source] : h.sources) std::printf("  %-40s %s\n", key.c_str(), source.c_str());
    };
  });
  struct ProbeOptions {
    int device = 0;
    std::string cache;
    bool refresh = false;
  };
  auto po = std::make_shared<ProbeOptions>();
  CLI::App* probe = hw->add_subcommand(
      "probe", "measure the local GPU's copy bandwidth and peak GEMM rates once, kept in a cache file");
  probe->add_option("--device", po->device, "GPU index")->capture_default_str();
  probe->add_option("--cache", po->cache, "cache file (default: device-probe-<index>.json under the user's cache folder)");
  probe->add_flag("--refresh", po->refresh, "measure even when the cache file matches this device");
  probe->callback([po, &action] {
    action = [po] {
      const std::string path = po->cache.empty() ? default_device_probe_path(po->device) : po->cache;
      const DeviceProbe p = probe_device(po->device, path, po->refresh, Logger{});
      std::printf("%s (driver %s, runtime %s, %s), measured %s\n", p.validators.gpu.c_str(),
                  p.validators.driver.c_str(), p.validators.runtime.c_str(), p.validators.blas_library.c_str(),
                  p.date.c_str());
      std::printf("  device-to-device copy %.2f TB/s (read + write, %.0f MiB buffer)\n", p.copy_tbs,
                  p.copy_bytes / (1 << 20));
      for (const auto& [precision, tflops] : p.gemm_tflops)
        std::printf("  %-5s GEMM %d^3: %.1f TFLOP/s\n", precision.c_str(), p.gemm_size, tflops);
      for (const kernels::ClusterUnits& u : p.cluster_units)
        std::printf("  clusters of %2d CTAs at %d CTA(s) per SM: %3d co-resident, on %.0f SMs\n", u.cluster_size,
                    u.ctas_per_unit, u.max_active_clusters, u.units());
      if (!path.empty()) std::printf("cache: %s\n", path.c_str());
    };
  });
}

void add_gemm_command(CLI::App& app, Action& action) {
  struct Options {
    std::string hw = "h200_sxm", hw_dir = default_hw_dir();
    tune::GemmSelectRequest request;
  };
  auto o = std::make_shared<Options>();
  CLI::App* gemm = app.add_subcommand("gemm", "the analytical GEMM model and selector");
  gemm->require_subcommand(1);
  CLI::App* select = gemm->add_subcommand("select", "choose a kernel configuration for a GEMM, with no warm-up runs");
  select->add_option("--hw", o->hw, "hardware description name")->capture_default_str();
  select->add_option("--hw-dir", o->hw_dir, "folder of hardware description files")->capture_default_str();
  select->add_option("--m", o->request.m, "rows of C")->required()->check(CLI::PositiveNumber);
  select->add_option("--n", o->request.n, "columns of C")->required()->check(CLI::PositiveNumber);
  select->add_option("--k", o->request.k, "reduction depth")->required()->check(CLI::PositiveNumber);
  select->add_option("--batch", o->request.batch, "batched GEMMs")->check(CLI::PositiveNumber);
  select->add_option("--dtype", o->request.dtype, "A and B type: fp32, bf16, fp16, fp8_e4m3")->capture_default_str();
  select->add_option("--out-dtype", o->request.out_dtype, "C type (default: fp32 for fp32 inputs, bf16 otherwise)");
  select->add_option("--epilogue", o->request.epilogue, "none, bias or bias_relu")->capture_default_str();
  select->add_flag("--trans-a", o->request.trans_a, "A is stored K x M");
  select->add_flag("--trans-b", o->request.trans_b, "B is stored N x K");
  select->add_flag("--tf32", o->request.tf32, "fp32 inputs may use the TF32 matrix pipe");
  select->callback([o, &action] {
    action = [o] {
      const Hardware hw = load_hardware_by_name(o->hw, o->hw_dir);
      const GemmModelParams params = load_gemm_params_for(hw, o->hw_dir + "/params");
      const GemmProblem p = tune::gemm_problem_of(o->request, "--");
      std::fputs(tune::gemm_select_text(hw, p, params).c_str(), stdout);
    };
  });

  auto b = std::make_shared<GemmBenchOptions>();
  CLI::App* bench = gemm->add_subcommand(
      "bench", "time every valid cuBLASLt algorithm configuration on the GEMM shape suite (needs a GPU)");
  bench->add_option("--suite", b->suite,
                    "all, one model (demo, dlrm_mlperf, dcnv2_mlperf, wide, narrow), or corpus (the broad families)")
      ->capture_default_str();
  bench->add_option("--filter", b->filter, "only shapes whose id matches this regular expression");
  bench->add_option("--out", b->out, "results file (JSON)")->required();
  bench->add_option("--launches", b->launches, "timed launches per candidate (>= 20)")->capture_default_str();
  bench->add_option("--warmup", b->warmup, "untimed launches before them")->capture_default_str();
  bench->add_option("--max-candidates-per-shape", b->max_candidates_per_shape,
                    "time at most this many configurations per shape, evenly spaced (0: all)")
      ->capture_default_str();
  bench->add_option("--time-budget", b->time_budget_s, "start no shape after this many seconds (0: no limit)")
      ->capture_default_str();
  bench->add_option("--families", b->families, "--suite corpus: only these families (comma-separated)")
      ->delimiter(',');
  auto shard = std::make_shared<std::string>("0/1");
  bench->add_option("--shard", *shard, "i/n: every n-th selected shape from the i-th (0-based), for runs in pieces")
      ->capture_default_str();
  bench->callback([b, shard, &action] {
    std::string families;
    for (const auto& f : b->families) families += (families.empty() ? "" : ",") + f;
    // The command as the results record it: every option with the value it took.
    b->command = "hetrec gemm bench --suite " + b->suite + (b->filter.empty() ? "" : " --filter '" + b->filter + "'") +
                 " --out " + b->out + " --launches " + std::to_string(b->launches) + " --warmup " +
                 std::to_string(b->warmup) + " --max-candidates-per-shape " +
                 std::to_string(b->max_candidates_per_shape) + " --time-budget " + std::to_string(b->time_budget_s) +
                 (families.empty() ? "" : " --families " + families) + " --shard " + *shard;
    action = [b, shard] {
      parse_shard(*shard, "--shard", b->shard_index, b->shard_count);
      run_gemm_bench(*b);
    };
  });

  add_gemm_corpus_commands(gemm, action);

  struct CalibrateOptions {
    std::string oracle, hw = "h200_sxm", hw_dir = default_hw_dir(), params_out, report, heuristic_lists, repeat_oracle,
        judge;
    double fraction = 0.05;
    int folds = 1;
  };
  auto cal = std::make_shared<CalibrateOptions>();
  CLI::App* calibrate = gemm->add_subcommand(
      "calibrate", "fit the GEMM model's parameters to `gemm bench` results and judge its selection on held-out shapes");
  calibrate->add_option("--oracle", cal->oracle, "results of hetrec gemm bench (.json or .json.xz)")->required();
  calibrate->add_option("--hw", cal->hw, "hardware description of the GPU the oracle ran on")->capture_default_str();
  calibrate->add_option("--hw-dir", cal->hw_dir, "folder of hardware description files")->capture_default_str();
  calibrate->add_option("--fraction", cal->fraction, "largest share of the shapes used for the fit")
      ->check(CLI::Range(0.001, 0.5))
      ->capture_default_str();
  calibrate->add_option("--folds", cal->folds,
                        "repeat the fit on this many disjoint calibration samples in all and report the spread of "
                        "the held-out figures (the parameters written are the first sample's)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  calibrate->add_option("--judge", cal->judge,
                        "no fit: judge these fitted parameters (a --params-out file) on every shape of the oracle, "
                        "e.g. an oracle of shapes they were not fitted to");
  calibrate->add_option("--params-out", cal->params_out, "write the fitted parameters here (hw/params/<arch>.toml)");
  calibrate->add_option("--report", cal->report, "write the results record (JSON) here");
  calibrate->add_option("--heuristic-lists", cal->heuristic_lists,
                        "a gemm bench record of the same GPU that lists the heuristic's first choices per shape: "
                        "report the best of each list on the held-out shapes");
  calibrate->add_option("--repeat-oracle", cal->repeat_oracle,
                        "a second gemm bench record of the same shapes and GPU: report how far it reproduces the "
                        "oracle's own choices (the ceiling of any selection judged on one run)");
  calibrate->callback([cal, &action] {
    action = [cal] {
      const Hardware hw = load_hardware_by_name(cal->hw, cal->hw_dir);
      const GemmModelParams start = load_gemm_params_for(hw, cal->hw_dir + "/params");
      const GemmOracle oracle = load_gemm_oracle(cal->oracle);
      if (!cal->judge.empty() && (cal->folds > 1 || !cal->params_out.empty()))
        throw ConfigError("gemm calibrate: --judge fits nothing, so --folds and --params-out do not apply");
      GemmCalibrationRun r = cal->judge.empty() ? run_gemm_calibration(hw, oracle, start, cal->fraction, cal->folds)
                                                : judge_gemm_params(hw, oracle, load_gemm_params(cal->judge));
      const auto line = [](const char* name, const SelectionSummary& s) {
        std::printf("%-28s %4zu shapes  oracle/selected geomean %.4f  p5 %.4f  min %.4f  | heuristic geomean %.4f  p5 %.4f"
                    "  | Spearman mean %.3f  | |log err| %.3f\n",
                    name, s.shapes, s.geomean_ratio, s.p5_ratio, s.min_ratio, s.heuristic_geomean_ratio,
                    s.heuristic_p5_ratio, s.mean_spearman, s.mean_abs_log_error);
      };
      std::printf("oracle %s: %zu shapes (%zu skipped by the oracle, %zu without a describable kernel), %zu used; "
                  "%zu of %zu timed kernels not describable, %zu described as kernel-chosen tiles; fastest "
                  "candidate not describable on %zu shapes; heuristic's own timing faster than every candidate "
                  "on %zu\n",
                  cal->oracle.c_str(), oracle.shapes.size(), r.conversion.skipped_shapes,
                  r.conversion.undescribed_shapes, r.conversion.shapes.size(), r.conversion.undescribed,
                  r.conversion.candidates, r.conversion.kernel_chosen_tiles, r.conversion.oracle_undescribed,
                  r.conversion.heuristic_faster);
      if (r.judged_only) {
        line("all shapes, judged params", r.held_out_after);
      } else {
        std::printf("fit on %zu shapes (%.1f s, %d evaluations): loss %.4f -> %.4f\n", r.calibration_ids.size(),
                    r.fit_seconds, r.fit.evaluations, r.fit.loss_before, r.fit.loss_after);
        line("held out, starting params", r.held_out_before);
        line("held out, fitted params", r.held_out_after);
        line("calibration shapes, fitted", r.calibration_after);
      }
      for (const auto& [name, t] : {std::pair{"oracle under", &r.short_kernels}, std::pair{"oracle from", &r.longer_kernels}})
        std::printf("%s, %s %2.0f us %4zu shapes  oracle/selected geomean %.4f  p5 %.4f  | heuristic geomean %.4f  "
                    "p5 %.4f\n",
                    r.judged_only ? "all shapes" : "held out", name, kShortKernelUs, t->shapes, t->model_geomean,
                    t->model_p5, t->heuristic_geomean,
                    t->heuristic_p5);
      if (r.folds.size() > 1) {
        for (const GemmCalibrationRun::Fold& f : r.folds)
          std::printf("fold at position %.2f: %zu calibration shapes, held out geomean %.4f  p5 %.4f  | heuristic "
                      "geomean %.4f  p5 %.4f\n",
                      f.position, f.calibration_ids.size(), f.held_out.geomean_ratio, f.held_out.p5_ratio,
                      f.held_out.heuristic_geomean_ratio, f.held_out.heuristic_p5_ratio);
        const FoldSpread sp = fold_spread(r.folds);
        std::printf("over %zu folds: held out geomean %.4f (%.4f to %.4f), p5 %.4f (%.4f to %.4f) | heuristic geomean "
                    "%.4f\n",
                    r.folds.size(), sp.geomean_mean, sp.geomean_min, sp.geomean_max, sp.p5_mean, sp.p5_min, sp.p5_max,
                    sp.heuristic_geomean_mean);
      }
      std::printf("selection cost per new shape: %.2f us of CPU over %zu configurations\n", r.selection_us_per_shape,
                  r.selection_pool);
      if (!cal->repeat_oracle.empty()) {
        r.reproducibility = oracle_reproducibility(oracle, load_gemm_oracle(cal->repeat_oracle), cal->repeat_oracle);
        const OracleReproducibility& rep = *r.reproducibility;
        std::printf("the oracle's own choices on its repeat: geomean %.4f  p5 %.4f (%zu shapes); best under %.0f us "
                    "%.4f / %.4f (%zu), longer %.4f / %.4f (%zu); one configuration's |log ratio| median %.3f, "
                    "p90 %.3f\n",
                    rep.all.geomean, rep.all.p5, rep.all.shapes, kShortKernelUs, rep.short_kernels.geomean,
                    rep.short_kernels.p5, rep.short_kernels.shapes, rep.longer_kernels.geomean, rep.longer_kernels.p5,
                    rep.longer_kernels.shapes, rep.median_abs_log_ratio, rep.p90_abs_log_ratio);
      }
      if (!cal->heuristic_lists.empty()) {
        compare_heuristic_lists(r, oracle, load_gemm_oracle(cal->heuristic_lists), cal->heuristic_lists);
        const GemmCalibrationRun::HeuristicLists& h = *r.heuristic_lists;
        std::printf("heuristic's lists (%zu held-out shapes, %.1f configurations each, %.1f timed): best of the list "
                    "geomean %.4f  p5 %.4f  | its query %.1f us of CPU (median), %.1f (p90)\n",
                    h.shapes, h.mean_listed, h.mean_timed, h.best_of_list_geomean, h.best_of_list_p5,
                    h.query_us_median, h.query_us_p90);
      }
      if (!cal->params_out.empty()) {
        save_gemm_params(r.fitted, cal->params_out);
        std::printf("parameters -> %s\n", cal->params_out.c_str());
      }
      if (!cal->report.empty()) {
        const char* commit = std::getenv("HETREC_COMMIT");
        char date[32];
        const std::time_t now = std::time(nullptr);
        std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
        const std::string command = "hetrec gemm calibrate --oracle " + cal->oracle + " --hw " + cal->hw +
                                    (cal->judge.empty() ? " --fraction " + std::to_string(cal->fraction) : "") +
                                    (cal->folds > 1 ? " --folds " + std::to_string(cal->folds) : "") +
                                    (cal->judge.empty() ? "" : " --judge " + cal->judge) +
                                    (cal->params_out.empty() ? "" : " --params-out " + cal->params_out) +
                                    (cal->heuristic_lists.empty() ? "" : " --heuristic-lists " + cal->heuristic_lists) +
                                    (cal->repeat_oracle.empty() ? "" : " --repeat-oracle " + cal->repeat_oracle) +
                                    " --report " + cal->report;
        write_file_atomically(cal->report,
                              gemm_calibration_json(r, oracle, cal->oracle, command, commit ? commit : "unknown", date));
        std::printf("report -> %s\n", cal->report.c_str());
      }
    };
  });
}

}  // namespace hetrec::cli

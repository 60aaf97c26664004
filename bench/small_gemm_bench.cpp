// small_gemm_bench: the MLPs' narrow-layer GEMMs of a config (tunable/small_gemm/small_gemm_cost.h
// small_gemm_mlp_gemms: forward, weight gradient and input gradient of every layer with
// in <= 16 or out <= 16) at several batches and operand types, each timed in one run as
//   ours default  the small-GEMM kernel with its starting parameters
//   ours tuned    the stored winner of `hetrec tune --kernel small_gemm` (if any)
//   cuBLASLt heuristic   the library's first choice, as the engine runs the GEMM
//   cuBLASLt best        the fastest of every algorithm configuration it accepts
//                        (gemm/cublaslt_algos.h), up to --max-candidates of them
// with the floor (the operands and C through HBM once at the description's bandwidth).
// With --all-variants it also times every variant of the kernel's tuning space that passes
// the static rules (compiled once per GEMM, in parallel), which makes the measured best of
// both kernel kinds an exhaustive oracle for the selection between them
// (tune/small_gemm_selection.h): the small-GEMM variant the model picks, cuBLASLt's
// configuration the engine's model selection picks (gemm/cublaslt_model_choice.h), and the
// one of the two with the lower prediction, each against that best.
// Every time is the median of --launches launches, each between two events, rotating
// through four operand sets; every timed configuration is first verified against the
// double-precision reference on a poisoned C.
#include <algorithm>
#include <chrono>
#include <atomic>
#include <map>
#include <memory>
#include <thread>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/utc_time.h"
#include "gemm/cublaslt_algos.h"
#include "gemm/cublaslt_gemm.h"
#include "gemm/cublaslt_model_choice.h"
#include "gpu/blaslt.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "hw/hardware.h"
#include "tunable/small_gemm/small_gemm_sources.h"
#include "tunable/small_gemm/small_gemm_tuned.h"
#include "train/config.h"
#include "gemm_perf/gemm_model_params.h"
#include "tunable/small_gemm/small_gemm_bench.h"
#include "tunable/small_gemm/small_gemm_cost.h"
#include "tune/small_gemm_selection.h"
#include "tune/winners.h"

namespace {

using namespace hetrec;
using json = nlohmann::json;

// 32 MiB: the workspace cuBLAS's documentation recommends for Hopper (as cublaslt::Gemm).
constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;
// Operand sets the timing rotates through: each set of the wide operand is larger than
// the H200's 50 MB L2 at the batches benched here, or close to it.
constexpr int kRotations = 4;

struct Options {
  std::string config = "configs/dlrm_dcnv2_mlperf.toml";
  std::vector<int64_t> batches = {16384, 65536, 131072};
  std::vector<std::string> operands = {"fp32", "bf16"};
  std::string winners = "tune/winners.json";
  std::string hw = "h200_sxm";
  std::string hw_dir = "hw";
  std::string out = "bench/results/small-gemm.json";
  std::string params;  // the GEMM model's parameters ("" = hw/params/<arch>.toml)
  int launches = 25;
  int max_candidates = 64;
  bool all_variants = false;
  int compile_threads = 0;  // 0: the machine's hardware threads
};

// Every variant of a shape's space that passes the static rules at some batch, compiled
// once (the kernels do not depend on the batch).
struct CompiledVariants {
  std::vector<kernels::SmallGemmVariant> variants;
  std::vector<std::unique_ptr<kernels::TunedSmallGemm>> kernels;  // null where the compile failed
  std::vector<std::string> errors;
  double compile_s = 0.0;
};

CompiledVariants compile_variants(const Hardware& hw, const kernels::SmallGemmShape& shape,
                                  const std::vector<int64_t>& batches, const gpu::DeviceProperties& dev,
                                  int threads) {
  CompiledVariants c;
  for (const kernels::SmallGemmVariant& v : tune::small_gemm_variants(shape.kind)) {
    bool runs = false;
    for (int64_t m : batches) runs = runs || tune::small_gemm_static_problem(hw, {shape, m}, v).empty();
    if (runs) c.variants.push_back(v);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<gpu::RtcBinary> binaries(c.variants.size());
  const gpu::RtcBinary finish = shape.kind == kernels::SmallGemmKind::reduce
                                    ? gpu::rtc_compile(kernels::small_gemm_finish_program(), dev.compute_major,
                                                       dev.compute_minor)
                                    : gpu::RtcBinary{};
  {
    const unsigned n = threads > 0 ? static_cast<unsigned>(threads) : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    std::atomic<std::size_t> next{0};
    for (unsigned t = 0; t < n; ++t)
      pool.emplace_back([&] {
        for (std::size_t i = next++; i < c.variants.size(); i = next++)
          binaries[i] = gpu::rtc_compile(kernels::small_gemm_program(shape, c.variants[i]), dev.compute_major,
                                         dev.compute_minor);
      });
    for (auto& t : pool) t.join();
  }
  c.compile_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c.kernels.resize(c.variants.size());
  c.errors.resize(c.variants.size());
  for (std::size_t i = 0; i < c.variants.size(); ++i) {
    if (!binaries[i].ok || (shape.kind == kernels::SmallGemmKind::reduce && !finish.ok)) {
      c.errors[i] = "compile: " + (binaries[i].ok ? finish.log : binaries[i].log).substr(0, 400);
      continue;
    }
    c.kernels[i] = std::make_unique<kernels::TunedSmallGemm>(shape, c.variants[i], binaries[i], finish);
  }
  return c;
}

// One cuBLASLt configuration of the bench's problem, launched on rotation i's operands.
class CublasRunner {
 public:
  CublasRunner(cublasLtHandle_t handle, tune::SmallGemmBench& bench, void* workspace)
      : handle_(handle), bench_(bench), workspace_(workspace), problem_(bench.cublas_problem()),
        desc_(cublaslt::make_descriptors(problem_)) {
    cublaslt::set_operand_pointers(problem_, bench_.cublas_operands(bench_.args(0)), desc_->desc);
  }
  const cublaslt::MatmulDescriptors& desc() const { return *desc_; }
  const cublaslt::Problem& problem() const { return problem_; }
  tune::SmallGemmLaunch launch(const cublasLtMatmulAlgo_t& algo) const {
    return [this, algo](const kernels::SmallGemmArgs& g, gpu::stream_t s) {
      const cublaslt::Operands o = bench_.cublas_operands(g);
      const float alpha = 1.0f, beta = 0.0f;
      // Column-major A is our B and column-major B our A (gemm/cublaslt_gemm.h).
      HETREC_BLAS_CHECK(cublasLtMatmul(handle_, desc_->desc, &alpha, o.b, desc_->a, o.a, desc_->b, &beta, o.d,
                                       desc_->d, o.d, desc_->d, &algo, workspace_, kWorkspaceBytes, s));
    };
  }

 private:
  cublasLtHandle_t handle_;
  tune::SmallGemmBench& bench_;
  void* workspace_;
  cublaslt::Problem problem_;
  std::unique_ptr<cublaslt::MatmulDescriptors> desc_;
};

json time_compiled(tune::SmallGemmBench& bench, const kernels::TunedSmallGemm& k, int launches) {
  const kernels::SmallGemmVariant& v = k.variant();
  if (!k.launchable())
    return {{"params", tune::to_json(tune::small_gemm_parameters(v))},
            {"verified", false},
            {"reason", "resources: " + std::to_string(k.resources().registers) + " registers per thread allow " +
                           std::to_string(k.resources().max_threads_per_block) + " threads per block, the variant needs " +
                           std::to_string(kernels::small_gemm_block_threads(k.shape(), v))}};
  const tune::SmallGemmLaunch launch = [&k](const kernels::SmallGemmArgs& g, gpu::stream_t s) { k.launch(g, s); };
  const tune::ForwardCheck c = bench.verify(launch, k.workspace_floats());
  json j = {{"params", tune::to_json(tune::small_gemm_parameters(v))}, {"verified", c.ok}};
  if (!c.ok) {
    j["reason"] = c.reason;
    return j;
  }
  j["median_us"] = bench.median_us(launch, launches, k.workspace_floats());
  return j;
}

json time_ours(tune::SmallGemmBench& bench, const kernels::SmallGemmVariant& v, const gpu::DeviceProperties& dev,
               int launches) {
  const kernels::TunedSmallGemm k(bench.workload().shape, v, dev.compute_major, dev.compute_minor);
  return time_compiled(bench, k, launches);
}

// The selection between the two kinds of kernel against the measured best of both
// (every small-GEMM variant, and the cuBLASLt configurations timed).
json selection_record(const Options& o, const Hardware& hw, const cublaslt::ModelSelection& selection,
                      tune::SmallGemmBench& bench, const CompiledVariants& compiled, const CublasRunner& cublas,
                      cublasLtHandle_t handle, void* workspace, json& r) {
  const tune::SmallGemmWorkload& w = bench.workload();
  json variants = json::array();
  std::optional<double> best_ours;
  std::optional<double> pick_us;
  // The engine's pick: the first of the model's ranking whose kernel compiles and launches.
  std::optional<tune::SmallGemmPick> pick;
  std::size_t pick_rank = 0;
  for (const tune::SmallGemmPick& p : tune::rank_small_gemm(hw, tune::small_gemm_problem(w), selection.params)) {
    ++pick_rank;
    if (p.workload.shape != w.shape) continue;  // another kind of the same GEMM: not compiled here
    const auto it = std::find(compiled.variants.begin(), compiled.variants.end(), p.variant);
    const std::size_t i = static_cast<std::size_t>(it - compiled.variants.begin());
    if (it != compiled.variants.end() && compiled.kernels[i] && compiled.kernels[i]->launchable()) {
      pick = p;
      break;
    }
  }
  for (std::size_t i = 0; i < compiled.variants.size(); ++i) {
    const kernels::SmallGemmVariant& v = compiled.variants[i];
    if (!tune::small_gemm_static_problem(hw, w, v).empty()) continue;
    json j;
    if (!compiled.kernels[i]) {
      j = {{"params", tune::to_json(tune::small_gemm_parameters(v))}, {"verified", false}, {"reason", compiled.errors[i]}};
    } else {
      j = time_compiled(bench, *compiled.kernels[i], o.launches);
    }
    j["predicted_us"] = tune::price_small_gemm(hw, w, v, selection.params).predicted_us;
    if (j.contains("median_us")) {
      const double us = j["median_us"].get<double>();
      if (!best_ours || us < *best_ours) best_ours = us;
      if (pick && v == pick->variant) pick_us = us;
    }
    variants.push_back(j);
  }
  json sel = {{"ours_variants", variants}};
  if (best_ours) sel["ours_best_us"] = *best_ours;
  if (pick) {
    sel["ours_pick"] = {{"params", tune::to_json(tune::small_gemm_parameters(pick->variant))},
                        {"predicted_us", pick->predicted_us},
                        {"rank", pick_rank}};
    if (pick_us) sel["ours_pick"]["median_us"] = *pick_us;
  }
  const auto model = cublaslt::choose_algo_by_model(handle, cublas.problem(), cublas.desc(), kWorkspaceBytes,
                                                    cublaslt::Alignment{}, selection);
  std::optional<double> model_us;
  if (model) {
    const tune::ForwardCheck mc = bench.verify(cublas.launch(model->algo.algo));
    sel["cublaslt_model"] = {{"config", to_string(model->config)}, {"predicted_us", model->predicted_us},
                             {"verified", mc.ok}};
    if (mc.ok) {
      model_us = bench.median_us(cublas.launch(model->algo.algo), o.launches);
      sel["cublaslt_model"]["median_us"] = *model_us;
    } else {
      sel["cublaslt_model"]["reason"] = mc.reason;
    }
  }
  (void)workspace;
  // The oracle: the fastest of everything measured for this GEMM.
  std::optional<double> oracle = best_ours;
  const auto take = [&](std::optional<double> v) {
    if (v && (!oracle || *v < *oracle)) oracle = v;
  };
  take(model_us);
  for (const char* k : {"cublaslt_heuristic", "cublaslt_best"})
    if (r[k].contains("median_us") && r[k].value("verified", true)) take(r[k]["median_us"].get<double>());
  if (oracle) sel["oracle_us"] = *oracle;
  // The rule the engine follows: the lower prediction wins.
  if (pick && (!model || pick->predicted_us < model->predicted_us)) {
    sel["chosen"] = "small_gemm";
    if (pick_us) sel["chosen_us"] = *pick_us;
  } else if (model) {
    sel["chosen"] = "cublaslt";
    if (model_us) sel["chosen_us"] = *model_us;
  }
  if (oracle && sel.contains("chosen_us")) sel["oracle_over_chosen"] = *oracle / sel["chosen_us"].get<double>();
  if (oracle && pick_us) sel["oracle_over_ours_pick"] = *oracle / *pick_us;
  if (best_ours && pick_us) sel["ours_best_over_ours_pick"] = *best_ours / *pick_us;
  if (oracle && r["cublaslt_heuristic"].contains("median_us"))
    sel["oracle_over_cublaslt_heuristic"] = *oracle / r["cublaslt_heuristic"]["median_us"].get<double>();
  if (oracle && model_us) sel["oracle_over_cublaslt_model"] = *oracle / *model_us;
  return sel;
}

json bench_one(const Options& o, const Hardware& hw, const gpu::DeviceProperties& dev, const tune::WinnersStore& store,
               cublasLtHandle_t handle, void* workspace, const tune::SmallGemmLayerGemm& g, int64_t batch,
               uint64_t seed, const cublaslt::ModelSelection& selection, const CompiledVariants* compiled) {
  tune::SmallGemmBench bench(g.shape, batch, seed, kRotations);
  const tune::SmallGemmWorkload w = bench.workload();
  json r = {{"role", g.role},
            {"shape", g.shape.key()},
            {"small_gemm_shape",
             {{"kind", kernels::small_gemm_kind_name(g.shape.kind)},
              {"narrow", g.shape.narrow},
              {"wide", g.shape.wide},
              {"flag", g.shape.flag},
              {"epilogue", g.shape.epilogue == kernels::SmallGemmEpilogue::none   ? "none"
                           : g.shape.epilogue == kernels::SmallGemmEpilogue::bias ? "bias"
                                                                                  : "relu_bias"}}},
            {"batch", batch},
            {"operand", std::string(dtype_name(g.shape.operand))},
            {"bytes", tune::small_gemm_bytes(w)},
            {"flops", tune::small_gemm_flops(w)},
            {"flops_per_byte", tune::small_gemm_intensity(w)},
            {"floor_us", tune::small_gemm_floor_us(hw, w)}};
  r["ours_default"] = time_ours(bench, kernels::default_small_gemm_variant(g.shape), dev, o.launches);
  tune::WinnerKey key{tune::kSmallGemmKernel, g.shape.key(), dev.name,
                      std::to_string(dev.compute_major) + "." + std::to_string(dev.compute_minor),
                      gpu::driver_version(), kernels::small_gemm_sources_hash()};
  if (const auto win = store.find(key)) r["ours_tuned"] = time_ours(bench, tune::to_small_gemm_variant(win->params), dev, o.launches);
  else r["ours_tuned"] = {{"missing", store.stale(key).empty() ? "no winner" : "stale winner(s) only"}};

  const CublasRunner cublas(handle, bench, workspace);
  const auto heuristic = cublaslt::select_algo(handle, cublas.desc().desc, cublas.desc().a, cublas.desc().b,
                                               cublas.desc().d, kWorkspaceBytes, cublaslt::Alignment{}, false);
  if (!heuristic) {
    r["cublaslt_heuristic"] = {{"missing", "no algorithm for this problem"}};
    return r;
  }
  const tune::ForwardCheck hc = bench.verify(cublas.launch(*heuristic));
  r["cublaslt_heuristic"] = {{"verified", hc.ok},
                             {"config", cublaslt::algo_key(cublaslt::read_algo_config(*heuristic))},
                             {"median_us", bench.median_us(cublas.launch(*heuristic), o.launches)}};
  if (!hc.ok) r["cublaslt_heuristic"]["reason"] = hc.reason;

  const cublaslt::AlgoEnumeration e = cublaslt::enumerate_algos(handle, cublas.problem(), cublas.desc(), kWorkspaceBytes);
  // An even sample of the enumeration when it is larger than the cap.
  const std::size_t n = e.valid.size();
  const std::size_t take = o.max_candidates > 0 ? std::min<std::size_t>(n, static_cast<std::size_t>(o.max_candidates)) : n;
  double best = 0.0;
  std::optional<std::size_t> best_index;
  int failed = 0;
  for (std::size_t t = 0; t < take; ++t) {
    const std::size_t i = t * n / take;
    try {
      const double us = bench.median_us(cublas.launch(e.valid[i].algo), o.launches);
      if (!best_index || us < best) {
        best = us;
        best_index = i;
      }
    } catch (const Error&) {
      ++failed;
    }
  }
  json b = {{"enumerated", n}, {"timed", take}, {"failed", failed}};
  if (!best_index) {
    // The enumeration lists no configuration (the logit layer's bias epilogue with N = 1):
    // the heuristic's is the only candidate.
    b["verified"] = hc.ok;
    b["median_us"] = r["cublaslt_heuristic"]["median_us"];
    b["heuristic_is_best"] = true;
  } else {
    // The heuristic's own time counts too: it is one of the library's candidates.
    const double h = r["cublaslt_heuristic"]["median_us"].get<double>();
    const tune::ForwardCheck bc = bench.verify(cublas.launch(e.valid[*best_index].algo));
    b["verified"] = bc.ok;
    b["config"] = cublaslt::algo_key(e.valid[*best_index].config);
    b["median_us"] = std::min(best, h);
    b["heuristic_is_best"] = h <= best;
  }
  r["cublaslt_best"] = b;
  if (compiled) r["selection"] = selection_record(o, hw, selection, bench, *compiled, cublas, handle, workspace, r);

  const auto us = [&](const char* what) -> std::optional<double> {
    if (r[what].contains("median_us") && r[what].value("verified", true)) return r[what]["median_us"].get<double>();
    return std::nullopt;
  };
  json ratios;
  const auto ours = us("ours_tuned") ? us("ours_tuned") : us("ours_default");
  if (ours) {
    if (us("cublaslt_heuristic")) ratios["cublaslt_heuristic_over_ours"] = *us("cublaslt_heuristic") / *ours;
    if (us("cublaslt_best")) ratios["cublaslt_best_over_ours"] = *us("cublaslt_best") / *ours;
    ratios["floor_over_ours"] = r["floor_us"].get<double>() / *ours;
    ratios["ours_is"] = us("ours_tuned") ? "tuned" : "default";
  }
  if (us("cublaslt_heuristic")) ratios["floor_over_cublaslt_heuristic"] = r["floor_us"].get<double>() / *us("cublaslt_heuristic");
  r["ratios"] = ratios;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"time the small-GEMM kernel against cuBLASLt on a config's narrow MLP layers"};
  app.add_option("--config,-c", o.config, "config whose MLPs give the GEMMs")->capture_default_str();
  app.add_option("--batches", o.batches, "batch rows")->capture_default_str();
  app.add_option("--operands", o.operands, "operand dtypes: fp32 bf16 fp16")->capture_default_str();
  app.add_option("--winners", o.winners, "winners file of `hetrec tune --kernel small_gemm`")->capture_default_str();
  app.add_option("--hw", o.hw, "hardware description (the floor's bandwidth)")->capture_default_str();
  app.add_option("--hw-dir", o.hw_dir, "folder of hardware descriptions")->capture_default_str();
  app.add_option("--out", o.out, "results file")->capture_default_str();
  app.add_option("--launches", o.launches, "timed launches per configuration (median)")
      ->check(CLI::Range(20, 1000))
      ->capture_default_str();
  app.add_option("--max-candidates", o.max_candidates, "cuBLASLt configurations timed per GEMM (0: all)")
      ->capture_default_str();
  app.add_option("--params", o.params, "GEMM model parameters for the selection (default: the architecture's)");
  app.add_flag("--all-variants", o.all_variants,
               "also time every small-GEMM variant and the model's selection between the two kernels");
  app.add_option("--compile-threads", o.compile_threads, "threads compiling the variants (0: all)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    if (!gpu::has_device()) throw DeviceError("small_gemm_bench: no GPU is visible");
    const gpu::DeviceProperties dev = gpu::device_properties(gpu::current_device());
    const Hardware hw = load_hardware_by_name(o.hw, o.hw_dir);
    const RunConfig run = load_run_config(o.config);
    const ModelConfig& model = run.model;
    const tune::WinnersStore store = tune::WinnersStore::load(o.winners);  // absent: empty
    cublasLtHandle_t handle = nullptr;
    HETREC_BLAS_CHECK(cublasLtCreate(&handle));
    gpu::DeviceBuffer workspace(kWorkspaceBytes);
    const GemmModelParams params =
        o.params.empty() ? load_gemm_params_for(hw, o.hw_dir + "/params") : load_gemm_params(o.params);
    const cublaslt::ModelSelection selection = cublaslt::make_model_selection(handle, hw, params);
    std::mt19937_64 seeds(std::random_device{}());
    json records = json::array();
    const char* commit = std::getenv("HETREC_COMMIT");
    std::ostringstream cmd;
    for (int i = 0; i < argc; ++i) cmd << (i ? " " : "") << argv[i];
    // Written after every GEMM, so that a run stopped early keeps what it measured.
    const auto write = [&] {
      const json results = {{"benchmark", "small-gemm"},
                            {"date", utc_time("%Y-%m-%dT%H:%M:%SZ")},
                            {"gpu", dev.name},
                            {"commit", commit ? commit : "unknown"},
                            {"command", cmd.str()},
                            {"metrics",
                             {{"config", o.config},
                              {"hardware", o.hw},
                              {"launches_per_median", o.launches},
                              {"rotations", kRotations},
                              {"max_cublaslt_candidates", o.max_candidates},
                              {"all_variants", o.all_variants},
                              {"model_params", o.params.empty() ? "architecture default" : o.params},
                              {"small_gemm_source_hash", kernels::small_gemm_sources_hash()},
                              {"records", records}}}};
      std::ofstream f(o.out);
      f << results.dump(2) << "\n";
      if (!f) throw IoError("small_gemm_bench: cannot write " + o.out);
    };
    for (const std::string& t : o.operands) {
      const DType operand = parse_dtype(t, "--operands");
      std::vector<tune::SmallGemmLayerGemm> gemms =
          tune::small_gemm_mlp_gemms("bottom_mlp", model.num_dense, model.bottom_mlp, true, true, operand);
      for (const auto& g : tune::small_gemm_mlp_gemms("top_mlp", model.interaction_width(), model.top_mlp, false, true,
                                                      operand))
        gemms.push_back(g);
      for (const auto& g : gemms) {
        std::optional<CompiledVariants> compiled;
        if (o.all_variants) {
          compiled = compile_variants(hw, g.shape, o.batches, dev, o.compile_threads);
          std::cerr << g.role << ": " << compiled->variants.size() << " variants compiled in " << compiled->compile_s
                    << " s\n";
        }
        for (int64_t batch : o.batches) {
          json r = bench_one(o, hw, dev, store, handle, workspace.get(), g, batch, seeds(), selection,
                             compiled ? &*compiled : nullptr);
          if (g.layer == 0 && g.role.rfind("bottom_mlp", 0) == 0 && g.role.find("input gradient") != std::string::npos)
            r["engine_runs_it"] = false;  // the bottom MLP's input is the dense features: no gradient
          json brief = r;
          if (brief.contains("selection")) brief["selection"].erase("ours_variants");
          std::cerr << brief.dump() << "\n";
          records.push_back(r);
          write();
        }
      }
    }
    (void)cublasLtDestroy(handle);
    std::printf("results %s\n", o.out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "small_gemm_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

// small_gemm_bench: the MLPs' narrow-layer GEMMs of a config (tune/small_gemm_model.h
// small_gemm_mlp_gemms: forward, weight gradient and input gradient of every layer with
// in <= 16 or out <= 16) at several batches and operand types, each timed in one run as
//   ours default  the small-GEMM kernel with its starting parameters
//   ours tuned    the stored winner of `hetrec tune --kernel small_gemm` (if any)
//   cuBLASLt heuristic   the library's first choice, as the engine runs the GEMM
//   cuBLASLt best        the fastest of every algorithm configuration it accepts
//                        (gemm/cublaslt_algos.h), up to --max-candidates of them
// with the floor (the operands and C through HBM once at the description's bandwidth).
// Every time is the median of --launches launches, each between two events, rotating
// through four operand sets; every timed configuration is first verified against the
// double-precision reference on a poisoned C.
#include <algorithm>
#include <chrono>
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
#include "gpu/blaslt.h"
#include "gpu/device.h"
#include "gpu/device_buffer.h"
#include "hw/hardware.h"
#include "kernels/small_gemm_sources.h"
#include "kernels/small_gemm_tuned.h"
#include "train/config.h"
#include "tune/gpu/small_gemm_bench.h"
#include "tune/small_gemm_model.h"
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
  int launches = 25;
  int max_candidates = 64;
};

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

json time_ours(tune::SmallGemmBench& bench, const kernels::SmallGemmVariant& v, const gpu::DeviceProperties& dev,
               int launches) {
  const kernels::TunedSmallGemm k(bench.workload().shape, v, dev.compute_major, dev.compute_minor);
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

json bench_one(const Options& o, const Hardware& hw, const gpu::DeviceProperties& dev, const tune::WinnersStore& store,
               cublasLtHandle_t handle, void* workspace, const tune::SmallGemmLayerGemm& g, int64_t batch,
               uint64_t seed) {
  tune::SmallGemmBench bench(g.shape, batch, seed, kRotations);
  const tune::SmallGemmWorkload w = bench.workload();
  json r = {{"role", g.role},
            {"shape", g.shape.key()},
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
      for (const auto& g : gemms)
        for (int64_t batch : o.batches) {
          json r = bench_one(o, hw, dev, store, handle, workspace.get(), g, batch, seeds());
          if (g.layer == 0 && g.role.rfind("bottom_mlp", 0) == 0 && g.role.find("input gradient") != std::string::npos)
            r["engine_runs_it"] = false;  // the bottom MLP's input is the dense features: no gradient
          std::cerr << r.dump() << "\n";
          records.push_back(r);
          write();
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

// End-to-end training-step benchmark of the GPU model: median step time over N steps on
// synthetic batches of a config file's model, optional per-phase device times, and the
// analytical floor of the step. Writes one JSON results file (bench/README.md "Results
// files", benchmark "e2e"); bench/e2e_compare.py adds the PyTorch baseline.
//
//   e2e_bench --config configs/dlrm_dcnv2_capped.toml --batch 65536 --steps 20 --precision tf32
//
// Under `mpirun -np N` it benchmarks the data-parallel engine instead: one GPU per rank,
// --batch the global batch, the tables sharded as the recipe's [recipe.sharding] (or
// --sharding) says; the step time is the slowest rank's median, rank 0 writes the file.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/utc_time.h"
#include "data/make_source.h"
#include "dist/nccl_process_group.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "gemm/device_probe.h"
#include "gpu/device.h"
#include "model/gpu/gpu_dlrm.h"
#include "train/config.h"

namespace hetrec {
namespace {

// Fixed-hotness bags with skewed ids (id = rows * u^3: a few rows are hot, a flatter law
// than the synthetic dataset's Zipf ids), dense features log(1 + x) of uniform x.
Batch power3_batch(const ModelConfig& m, int64_t size, uint64_t seed) {
  Batch b;
  b.reset(size, m.num_dense, m.num_tables());
  Rng rng(seed);
  for (float& x : b.dense) x = static_cast<float>(std::log1p(100.0 * rng.uniform()));
  for (float& y : b.labels) y = rng.uniform() < 0.25 ? 1.0f : 0.0f;
  for (int t = 0; t < m.num_tables(); ++t) {
    const auto rows = static_cast<double>(m.tables[static_cast<std::size_t>(t)].rows);
    for (int64_t s = 0; s < size; ++s) {
      for (int k = 0; k < m.tables[static_cast<std::size_t>(t)].hotness; ++k) {
        const double u = rng.uniform();
        b.ids.push_back(static_cast<int32_t>(std::min(rows - 1, std::floor(rows * u * u * u))));
      }
      b.offsets[static_cast<std::size_t>(t * size + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  }
  return b;
}

struct Floor {
  double flops = 0, bytes = 0;
  double gemm_ms = 0, memory_ms = 0, ms = 0;
  double peak_tflops = 0, copy_tbs = 0;
  std::string precision;
};

// The least time a step can take: its GEMM arithmetic at the GPU's measured peak rate for
// the step's GEMM precision plus its embedding traffic at the measured copy bandwidth
// (gemm/device_probe.h).
Floor step_floor(const ModelConfig& m, int64_t batch, const std::string& gemm_precision, const DeviceProbe& probe) {
  double fwd = 0;  // multiply-adds x 2 per sample, forward
  int in = m.num_dense;
  for (int w : m.bottom_mlp) fwd += 2.0 * in * w, in = w;
  const int f = m.num_tables() + 1;
  const double n = static_cast<double>(m.interaction_width());
  if (m.arch == Arch::dlrm) {
    fwd += 2.0 * f * f / 2.0 * m.embedding_dim;
  } else {
    fwd += m.cross_layers * (m.cross_rank > 0 ? 4.0 * n * m.cross_rank : 2.0 * n * n);
  }
  in = m.interaction_width();
  for (int w : m.top_mlp) fwd += 2.0 * in * w, in = w;
  Floor fl;
  fl.flops = 3.0 * fwd * static_cast<double>(batch);  // forward + two backward GEMMs
  double ids = 0;
  for (const TableConfig& t : m.tables) ids += t.hotness;
  const double row = static_cast<double>(m.embedding_dim) * static_cast<double>(dtype_size(m.row_dtype));
  // Forward: every id's row. Backward: the pooled gradient, then each touched row read
  // and written once (at most one per id) with its row-wise accumulator.
  fl.bytes = static_cast<double>(batch) * (ids * row + m.num_tables() * m.embedding_dim * 4.0 + ids * (2 * row + 8));
  fl.precision = gemm_precision;
  fl.peak_tflops = probe_gemm_tflops(probe, gemm_precision);
  fl.copy_tbs = probe.copy_tbs;
  fl.gemm_ms = 1e3 * fl.flops / (fl.peak_tflops * 1e12);
  fl.memory_ms = 1e3 * fl.bytes / (fl.copy_tbs * 1e12);
  fl.ms = fl.gemm_ms + fl.memory_ms;
  return fl;
}

int run(int argc, char** argv) {
  CLI::App app{"hetrec GPU end-to-end training-step benchmark"};
  std::string config = "configs/dlrm_dcnv2_capped.toml", precision = "tf32", rows, json_out, commit = "unknown", tag,
              tuned_kernels, recipe, sharding, exchange_dtype, ids = "power3", probe_cache;
  std::vector<std::string> overrides;
  int64_t batch = 65536;
  int steps = 20, warmup = 3;
  bool no_graph = false, profile = false, no_overlap = false, no_model_small_gemms = false, overlap_weight_gradients = false,
       no_overlap_embedding_backward = false;
  app.add_option("--config", config, "hetrec config file (its [model] and [optim] are used)");
  app.add_option("--batch", batch, "samples per step");
  app.add_option("--steps", steps, "timed steps (the median is reported)");
  app.add_option("--warmup", warmup, "untimed steps first");
  app.add_option("--precision", precision, "GEMM precision: fp32 | tf32");
  app.add_option("--rows", rows, "embedding row dtype: fp32 | fp16 | bf16 (default: the config's)");
  app.add_option("--set", overrides, "override a config key, e.g. --set 'model.arch=\"dlrm\"' (repeatable; recorded)");
  app.add_flag("--no-graph", no_graph, "run every step eagerly");
  app.add_flag("--profile", profile,
               "per-phase device times and each cuBLASLt GEMM's time (steps run eagerly, in one stream)");
  app.add_flag("--no-overlap", no_overlap,
               "under mpirun: run the embedding lookups, exchanges and update in the compute stream, not beside "
               "the dense layers (GpuModelOptions::overlap_exchanges)");
  app.add_flag("--no-model-small-gemms", no_model_small_gemms,
               "with model.gemm_selection = \"model\": cuBLASLt runs the narrow layers' GEMMs too "
               "(GpuModelOptions::model_small_gemms)");
  app.add_flag("--overlap-weight-gradients", overlap_weight_gradients,
               "run the weight-gradient GEMMs on a second stream beside the input-gradient chain "
               "(GpuModelOptions::overlap_weight_gradients)");
  app.add_flag("--no-overlap-embedding-backward", no_overlap_embedding_backward,
               "one device: run the embedding backward after the bottom MLP's backward and the dense optimizer, "
               "not beside them (GpuModelOptions::overlap_embedding_backward, on by default)");
  app.add_option("--json-out", json_out, "results file (default bench/results/e2e-<date>[-<tag>].json)");
  app.add_option("--commit", commit, "commit the binary was built from");
  app.add_option("--tag", tag, "suffix of the default results file name");
  app.add_option("--tuned-kernels", tuned_kernels, "winners file of `hetrec tune` (default: built-in kernel variants)");
  app.add_option("--recipe", recipe, "recipe file applied to the config (its [recipe.sharding] places the tables)");
  app.add_option("--exchange-dtype", exchange_dtype,
                 "under mpirun: the embedding exchanges' element type, fp32 or bf16 (overrides the recipe's "
                 "[recipe.sharding] exchange_dtype)");
  app.add_option("--sharding", sharding,
                 "under mpirun: every table's sharding type (table_wise | row_wise | column_wise | replicated), "
                 "overriding the recipe's default");
  app.add_option("--ids", ids,
                 "id law of the batches: power3 (id = rows * u^3) or data (the config's own [data] source, e.g. "
                 "the synthetic dataset's Zipf ids)")
      ->capture_default_str();
  app.add_option("--probe-cache", probe_cache,
                 "cache file of the measured copy bandwidth and GEMM peaks used for the floor (hetrec hw probe; "
                 "default: the user's cache folder)");
  CLI11_PARSE(app, argc, argv);
  if (ids != "power3" && ids != "data") throw ConfigError("--ids: expected power3 or data, got \"" + ids + "\"");

  if (gpu::device_count() == 0) {
    std::fprintf(stderr, "e2e_bench: no GPU device\n");
    return 2;
  }
  RunConfig cfg = load_run_config(config, overrides, recipe);
  if (!sharding.empty()) cfg.sharding.default_type = dist::parse_sharding_type(sharding, "--sharding");
  if (!exchange_dtype.empty()) {
    cfg.sharding.exchange_dtype = parse_dtype(exchange_dtype, "--exchange-dtype");
    if (cfg.sharding.exchange_dtype != DType::f32 && cfg.sharding.exchange_dtype != DType::bf16)
      throw ConfigError("--exchange-dtype: expected fp32 or bf16, got \"" + exchange_dtype + "\"");
  }
  ModelConfig m = cfg.model;
  if (!rows.empty()) m.row_dtype = parse_dtype(rows, "--rows");
  const OptimConfig& o = cfg.optim;
  GpuModelOptions opts;
  if (precision == "tf32") opts.precision = cublaslt::Precision::tf32;
  else if (precision != "fp32") throw ConfigError("--precision: expected fp32 or tf32, got \"" + precision + "\"");
  opts.cuda_graph = !no_graph;
  opts.profile_phases = profile;
  opts.overlap_exchanges = !no_overlap;
  opts.model_small_gemms = !no_model_small_gemms;
  opts.overlap_weight_gradients = overlap_weight_gradients;
  opts.overlap_embedding_backward = !no_overlap_embedding_backward;
  opts.tuned_kernels_file = tuned_kernels;

  // Data parallel under mpirun: the ranks on the host (MPI) and on the GPUs (NCCL).
  constexpr double kCollectiveTimeoutS = 300.0;
  std::unique_ptr<dist::ProcessGroup> host;
  std::unique_ptr<dist::NcclProcessGroup> devices;
  std::unique_ptr<GpuModel> single;
  std::unique_ptr<DistributedGpuModel> distributed;
  std::string placement;
  DType exchanged = DType::f32;
  const auto t0 = std::chrono::steady_clock::now();
  if (dist::launched_by_mpi()) {
    host = dist::make_process_group(kCollectiveTimeoutS);
    devices = std::make_unique<dist::NcclProcessGroup>(*host, kCollectiveTimeoutS);
    const dist::ShardingPlan plan = dist::plan_sharding(cfg.sharding, m.tables, m.embedding_dim, host->size());
    for (std::size_t t = 0; t < plan.tables.size(); ++t) {
      const dist::TableShard& ts = plan.tables[t];
      placement += (t ? ", " : "") + m.tables[t].name + ":" + dist::sharding_type_name(ts.type) +
                   (ts.type == dist::ShardingType::table_wise ? "@" + std::to_string(ts.owner) : "");
      // Row blocks the recipe chose (row_bounds), as "[0 b1 ... rows]".
      const auto choice = cfg.sharding.tables.find(m.tables[t].name);
      if (ts.type == dist::ShardingType::row_wise && choice != cfg.sharding.tables.end() &&
          !choice->second.row_bounds.empty()) {
        placement += "[";
        for (std::size_t r = 0; r < ts.row_begin.size(); ++r) placement += std::to_string(ts.row_begin[r]) + " ";
        placement += std::to_string(ts.row_end.back()) + "]";
      }
    }
    exchanged = plan.exchange_dtype;
    distributed = make_distributed_gpu_model(m, o, opts, plan, *host, *devices);
  } else {
    single = make_gpu_model(m, o, opts);
  }
  Model* model = single ? static_cast<Model*>(single.get()) : distributed.get();
  const int ranks = host ? host->size() : 1;
  const bool rank0 = !host || host->rank() == 0;
  const double init_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rank0) std::printf("%s\ninit %.2f s\n", model->describe().c_str(), init_s);

  constexpr int kBatchSets = 3;  // rotate inputs so repeated steps do not replay one batch
  std::vector<Batch> batches(kBatchSets);
  if (ids == "power3") {
    for (int i = 0; i < kBatchSets; ++i)
      batches[static_cast<std::size_t>(i)] = power3_batch(m, batch, 1000 + static_cast<uint64_t>(i));
  } else {
    const auto source = make_source(cfg.data, m, Split::train);
    for (Batch& b : batches)
      if (!source->next(b, batch))
        throw ConfigError("--ids data: " + source->describe() + " has fewer than " + std::to_string(kBatchSets) +
                          " batches of " + std::to_string(batch));
  }
  const StepRates rates{static_cast<float>(o.lr), static_cast<float>(o.sparse_lr)};

  std::vector<double> step_ms;
  std::vector<std::vector<double>> phases;
  std::vector<std::string> phase_names;
  std::vector<std::vector<cublaslt::Gemm::Timing>> gemm_steps;  // --profile, one GPU: each timed step's GEMMs
  double loss = 0;
  for (int i = 0; i < warmup + steps; ++i) {
    const auto s0 = std::chrono::steady_clock::now();
    model->prepare_next(batches[static_cast<std::size_t>((i + 1) % kBatchSets)]);
    loss = model->train_step(batches[static_cast<std::size_t>(i % kBatchSets)], rates);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count();
    if (i < warmup) continue;
    step_ms.push_back(ms);
    if (profile) {
      const auto p = single ? single->phase_ms() : distributed->phase_ms();
      if (phases.empty()) {
        phases.resize(p.size());
        for (const auto& [name, v] : p) phase_names.push_back(name);
      }
      for (std::size_t k = 0; k < p.size(); ++k) phases[k].push_back(p[k].second);
      if (single) gemm_steps.push_back(single->gemm_timings());
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  double step = median(step_ms);
  // Data parallel: the slowest rank's median (the collectives keep the ranks in step).
  std::vector<double> rank_step_ms(static_cast<std::size_t>(ranks), step);
  if (host) {
    host->all_gather(&step, sizeof step, rank_step_ms.data(), "all_gather(median step time)");
    step = *std::max_element(rank_step_ms.begin(), rank_step_ms.end());
  }
  // Every rank's median phases (rank-major), so the slow rank of a step shows.
  std::vector<double> my_phases;
  for (const auto& samples : phases) my_phases.push_back(median(samples));
  std::vector<double> rank_phases(my_phases.size() * static_cast<std::size_t>(ranks));
  if (host && !my_phases.empty())
    host->all_gather(my_phases.data(), static_cast<int64_t>(my_phases.size() * sizeof(double)), rank_phases.data(),
                     "all_gather(median phase times)");
  else
    rank_phases = my_phases;
  if (!rank0) return 0;
  // Floor: one GPU's share of the batch (the exchanges come on top), at this GPU's
  // measured rates for the step's GEMM precision.
  const std::string gemm_precision = m.dense_dtype == DType::bf16  ? "bf16"
                                     : m.dense_dtype == DType::f16 ? "fp16"
                                                                   : precision;
  const std::string probe_path = probe_cache.empty() ? default_device_probe_path(gpu::current_device()) : probe_cache;
  const DeviceProbe probe = probe_device(gpu::current_device(), probe_path, false, Logger{});
  const Floor fl = step_floor(m, batch / ranks, gemm_precision, probe);
  const double samples_per_s = static_cast<double>(batch) / (step / 1e3);
  std::printf("batch %lld: median step %.3f ms (min %.3f, max %.3f), %.0f samples/s, last loss %.5f\n",
              static_cast<long long>(batch), step, *std::min_element(step_ms.begin(), step_ms.end()),
              *std::max_element(step_ms.begin(), step_ms.end()), samples_per_s, loss);
  std::printf("floor %.3f ms = %.1f GFLOP at %.0f TFLOP/s (%s, measured) + %.2f GB at %.2f TB/s (measured copy): "
              "step / floor = %.2f\n",
              fl.ms, fl.flops / 1e9, fl.peak_tflops, fl.precision.c_str(), fl.bytes / 1e9, fl.copy_tbs, step / fl.ms);
  nlohmann::json phase_json = nlohmann::json::object();
  nlohmann::json rank_phase_json = nlohmann::json::array();
  for (int r = 0; r < ranks; ++r) rank_phase_json.push_back(nlohmann::json::object());
  for (std::size_t k = 0; k < phases.size(); ++k) {
    phase_json[phase_names[k]] = my_phases[k];
    std::printf("  %-24s", phase_names[k].c_str());
    for (int r = 0; r < ranks; ++r) {
      const double v = rank_phases[static_cast<std::size_t>(r) * my_phases.size() + k];
      rank_phase_json[static_cast<std::size_t>(r)][phase_names[k]] = v;
      std::printf(" %8.3f", v);
    }
    std::printf(" ms%s\n", k == 0 && ranks > 1 ? " (per rank)" : "");
  }

  // Each GEMM call of the profiled steps: its median time over the timed steps, and its
  // rate against the measured peak of the step's GEMM precision.
  nlohmann::json gemm_calls = nlohmann::json::array();
  double gemm_ms_total = 0.0, gemm_flops_total = 0.0;
  if (!gemm_steps.empty()) {
    std::printf("cuBLASLt GEMMs of a profiled step (median of %zu steps; peak %.0f TFLOP/s):\n", gemm_steps.size(),
                fl.peak_tflops);
    for (std::size_t c = 0; c < gemm_steps.front().size(); ++c) {
      std::vector<double> ms;
      for (const auto& step_calls : gemm_steps)
        if (c < step_calls.size()) ms.push_back(step_calls[c].ms);
      const cublaslt::Gemm::Timing& t = gemm_steps.front()[c];
      const double med = median(ms);
      const double tflops = med > 0 ? t.flops / (med * 1e9) : 0.0;
      gemm_ms_total += med;
      gemm_flops_total += t.flops;
      std::printf("  %3zu %-64s %s %8.3f ms %6.0f TFLOP/s (%3.0f%% of peak)\n", c, t.shape.c_str(),
                  t.accumulates ? "+=" : "= ", med, tflops, 100.0 * tflops / fl.peak_tflops);
      gemm_calls.push_back(
          {{"shape", t.shape}, {"flops", t.flops}, {"accumulates", t.accumulates}, {"ms", med}, {"tflops", tflops}});
    }
    std::printf("  all %zu GEMMs: %.3f ms, %.1f GFLOP (%.3f ms at peak)\n", gemm_calls.size(), gemm_ms_total,
                gemm_flops_total / 1e9, gemm_flops_total / (fl.peak_tflops * 1e9));
  }

  const cublaslt::Gemm::SelectionCounts gemm_counts =
      single ? single->gemm_selection_counts() : distributed->gemm_selection_counts();
  std::printf("GEMM configurations: %zu chosen by the model (%zu of them from the selections file; predicted %.1f us "
              "in all), %zu by cuBLASLt's heuristic\n",
              gemm_counts.by_model, gemm_counts.from_cache, gemm_counts.predicted_us, gemm_counts.by_library);
  if (!gemm_counts.ranker.empty())
    std::printf("  learned ranker %s: %zu learned picks, %zu of the heuristic's list run as returned; %zu shortlists "
                "timed (%zu kept another than the router's pick)\n",
                gemm_counts.ranker.c_str(), gemm_counts.learned, gemm_counts.as_returned, gemm_counts.timed,
                gemm_counts.timed_other);

  const std::vector<gpu_model::SmallGemmDecision> small_gemms =
      single ? single->small_gemm_decisions() : distributed->small_gemm_decisions();
  nlohmann::json small_gemm_json = nlohmann::json::array();
  for (const auto& d : small_gemms) {
    char measured[96] = "";
    if (d.small_gemm_measured_us && d.cublaslt_measured_us)
      std::snprintf(measured, sizeof measured, "; measured %.1f us against %.1f us", *d.small_gemm_measured_us,
                    *d.cublaslt_measured_us);
    std::printf("  %-30s batch %lld: %s (predicted small-GEMM %.1f us, cuBLASLt %s%s)\n", d.gemm.c_str(),
                static_cast<long long>(d.batch), d.small_gemm ? "small-GEMM kernel" : "cuBLASLt", d.small_gemm_us,
                d.cublaslt_us ? (std::to_string(*d.cublaslt_us) + " us").c_str() : "its heuristic's choice, unpriced",
                measured);
    const auto optional_us = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    small_gemm_json.push_back({{"gemm", d.gemm},
                               {"batch", d.batch},
                               {"runs", d.small_gemm ? "small_gemm" : "cublaslt"},
                               {"small_gemm_predicted_us", d.small_gemm_us},
                               {"cublaslt_predicted_us", optional_us(d.cublaslt_us)},
                               {"small_gemm_measured_us", optional_us(d.small_gemm_measured_us)},
                               {"cublaslt_measured_us", optional_us(d.cublaslt_measured_us)}});
  }

  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  nlohmann::json out;
  out["benchmark"] = "e2e";
  out["date"] = utc_time("%Y-%m-%d");
  out["gpu"] = gpu::device_properties(0).name;
  out["commit"] = commit;
  out["command"] = command;
  out["model"] = model->describe();
  out["world_size"] = ranks;
  out["tuned_kernels"] = tuned_kernels;
  out["metrics"] = {{"config", config},
                    {"batch", batch},
                    {"precision", precision},
                    {"row_dtype", rows},
                    {"overrides", overrides},
                    {"cuda_graph", !no_graph && !profile},
                    {"hetrec_samples_per_s", samples_per_s},
                    {"torch_eager_samples_per_s", nullptr},
                    {"torch_compile_samples_per_s", nullptr},
                    {"ids", ids},
                    {"floor_ms", fl.ms},
                    {"floor",
                     {{"rule", "GEMM FLOPs / measured peak of the GEMM precision + embedding bytes / measured copy bandwidth"},
                      {"gemm_flops", fl.flops},
                      {"embedding_bytes", fl.bytes},
                      {"gemm_precision", fl.precision},
                      {"peak_tflops", fl.peak_tflops},
                      {"copy_tbs", fl.copy_tbs},
                      {"gemm_ms", fl.gemm_ms},
                      {"memory_ms", fl.memory_ms},
                      {"probe_date", probe.date}}},
                    {"step_ms", step},
                    {"step_ms_all", step_ms},
                    {"init_s", init_s},
                    {"world_size", ranks},
                    {"sharding", placement},
                    {"exchange_dtype", dtype_name(exchanged)},
                    {"overlap_exchanges", ranks > 1 && !no_overlap && !profile},
                    {"model_small_gemms", !no_model_small_gemms},
                    {"relu_backward", relu_backward_name(m.relu_backward)},
                    {"unaligned_gemms", m.unaligned_tf32 ? "tf32" : "fp32"},
                    {"overlap_weight_gradients", overlap_weight_gradients},
                    {"overlap_embedding_backward", ranks == 1 && !no_overlap_embedding_backward && !profile},
                    {"batch_copied_ahead", true},  // every step announces the next (prepare_next)
                    {"samples_per_s_per_gpu", samples_per_s / ranks},
                    {"rank_step_ms", rank_step_ms},
                    {"phase_ms", phase_json},
                    {"gemm_selection",
                     {{"mode", m.gemm_selection == GemmSelection::model ? "model" : "library"},
                      {"by_model", gemm_counts.by_model},
                      {"from_selections_file", gemm_counts.from_cache},
                      {"by_library", gemm_counts.by_library},
                      {"model_predicted_us", gemm_counts.predicted_us},
                      {"ranker", gemm_counts.ranker},
                      {"learned_picks", gemm_counts.learned},
                      {"run_as_returned", gemm_counts.as_returned},
                      {"timed_shortlist", m.gemm_timed_shortlist},
                      {"timed", gemm_counts.timed},
                      {"timed_other", gemm_counts.timed_other},
                      {"small_gemm_decisions", small_gemm_json}}},
                    {"rank_phase_ms", rank_phase_json},
                    {"gemm_calls", gemm_calls},
                    {"gemm_ms", gemm_ms_total}};
  if (json_out.empty())
    json_out = "bench/results/e2e-" + utc_time("%Y%m%d") + (tag.empty() ? "" : "-" + tag) + ".json";
  std::ofstream f(json_out);
  if (!f) throw IoError("cannot write " + json_out);
  f << out.dump(2) << "\n";
  std::printf("wrote %s\n", json_out.c_str());
  return 0;
}

}  // namespace
}  // namespace hetrec

int main(int argc, char** argv) {
  try {
    return hetrec::run(argc, argv);
  } catch (const hetrec::Error& e) {
    std::fprintf(stderr, "e2e_bench: %s\n", e.what());
    return 1;
  }
}

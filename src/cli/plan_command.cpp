// `hetrec plan`: the co-design planner. For each accelerator named with --hw it searches
// the recipes of a config's model (batch, precisions, table placement), prints the chosen
// ones side by side with their predicted phases (with --gpus N: for N GPUs of one host, each
// table sharded), and writes the recipe TOML and an SVG of
// the step breakdown. The step model is calibrated first on the recorded measurements
// (bench/results/e2e-*.json and planner-*.json) of every architecture that has some.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/hw_dir.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "core/install_paths.h"
#include "hw/hardware.h"
#include "hw/toml_reader.h"
#include "gemm_perf/gemm_model_params.h"
#include "plan/breakdown_svg.h"
#include "plan/calibration.h"
#include "plan/constraints_toml.h"
#include "plan/e2e_record.h"
#include "plan/evaluation_json.h"
#include "plan/planner_record.h"
#include "plan/port_comparison.h"
#include "plan/recipe_toml.h"
#include "plan/report.h"
#include "plan/revise.h"
#include "plan/search.h"
#include "train/config.h"
#include "train/plan_targets.h"

namespace hetrec::cli {
namespace {

struct PlanOptions {
  std::string config;
  std::vector<std::string> overrides;
  std::vector<std::string> hardware = {"h200_sxm"};
  std::string hw_dir = default_hw_dir();
  std::string out;
  std::string svg;
  double headroom = kDefaultHeadroom;
  int64_t max_batch = 0;  // 0: the config's train.batch_size
  int64_t min_batch = kDefaultMinBatch;
  std::vector<std::string> dense = {"fp32", "tf32", "bf16"};
  std::vector<std::string> rows = {"fp32", "fp16", "bf16"};
  bool allow_host_tables = false;
  double lower_precision_gain = kDefaultLowerPrecisionGain;
  std::string port_from;
  std::string ids;
  std::string measurements = data_dir() + "/bench/results";  // core/install_paths.h
  bool no_calibration = false;
  std::string tuned_kernels;  // a winners file the runs load (--tuned-kernels); "" = the built-in kernels
  std::size_t candidates = 0;
  int gpus = 0;          // GPUs of one host (0: one, or with --evaluate the recipe's own gpus)
  std::string evaluate;  // a recipe file to predict instead of searching
  std::string json_out;  // where --evaluate writes its JSON (empty: stdout)
  std::string constraints_file;  // a [plan] table of quality constraints (plan/constraints_toml.h)
  bool revise = false;           // propose model revisions (plan/revise.h)
  std::string revised_config;    // where --revise writes the revised config
  // The constraint flags given on the command line (they override the constraints file).
  bool given_headroom = false, given_max_batch = false, given_min_batch = false, given_dense = false,
       given_rows = false, given_gain = false;
};

std::string fmt_list(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ",") + i;
  return s;
}

// The precisions the search allows, as the constraints hold them (the flags or the file).
std::string fmt_dense(const std::vector<DensePrecision>& items) {
  std::vector<std::string> names;
  for (DensePrecision p : items) names.emplace_back(dense_precision_name(p));
  return fmt_list(names);
}
std::string fmt_rows(const std::vector<DType>& items) {
  std::vector<std::string> names;
  for (DType t : items) names.emplace_back(dtype_name(t));
  return fmt_list(names);
}

// The batch is the config's own unless a constraints file, --min-batch or --max-batch says
// otherwise (bind_batch_to_config); a flag given on the command line overrides the file.
PlanConstraints constraints_of(const PlanOptions& o, int64_t config_batch) {
  PlanConstraints c;
  bind_batch_to_config(c, config_batch);
  if (!o.constraints_file.empty()) apply_constraints_file(o.constraints_file, c);
  const bool file = !o.constraints_file.empty();
  if (!file || o.given_headroom) c.headroom = o.headroom;
  apply_batch_range(c, config_batch, o.given_min_batch ? std::optional<int64_t>(o.min_batch) : std::nullopt,
                    o.given_max_batch ? std::optional<int64_t>(o.max_batch) : std::nullopt, "--min-batch", "--max-batch");
  if (!file || o.given_dense) {
    c.dense.clear();
    for (const std::string& d : o.dense) c.dense.push_back(parse_dense_precision(d, "--dense"));
  }
  if (!file || o.given_rows) {
    c.rows.clear();
    for (const std::string& r : o.rows) {
      const DType t = parse_dtype(r, "--rows");
      if (t != DType::f32 && t != DType::f16 && t != DType::bf16)
        throw ConfigError("--rows: expected fp32, fp16 or bf16, got '" + r + "'");
      c.rows.push_back(t);
    }
  }
  if (!file || o.given_gain) c.lower_precision_gain = o.lower_precision_gain;
  c.allow_host_tables = c.allow_host_tables || o.allow_host_tables;
  c.gpus = o.gpus > 0 ? o.gpus : 1;
  validate_constraints(c);
  return c;
}

// Through an exclusively created temporary, renamed into place (core/exclusive_file.h): a
// link planted at the temporary's name cannot redirect the write.
void write_file(const std::string& path, const std::string& text, const char* what) {
  try {
    write_file_atomically(path, text);
  } catch (const IoError& e) {
    throw IoError(std::string(what) + ": " + e.what());
  }
  std::printf("wrote %s\n", path.c_str());
}

// plan.toml -> plan-h100_sxm.toml when several recipes are written.
std::string per_hardware_path(const std::string& path, const std::string& hw, bool several) {
  if (!several) return path;
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "-" + hw + p.extension().string())).string();
}

// --evaluate: the prediction for one given recipe (the config with the recipe file
// applied, as `hetrec train --recipe` runs it) on one hardware, as JSON.
void run_evaluate(const PlanOptions& o) {
  if (o.hardware.size() != 1)
    throw ConfigError("--evaluate: expected exactly one --hw, got " + std::to_string(o.hardware.size()));
  const RunConfig cfg = load_run_config(o.config, o.overrides, o.evaluate);
  PlanConstraints constraints;
  constraints.headroom = o.headroom;
  validate_constraints(constraints);
  Workload w{cfg.model, cfg.optim, IdDistribution{IdLaw::zipf, cfg.data.synthetic.zipf_exponent}};
  if (!o.ids.empty()) w.ids = parse_id_distribution(o.ids, "--ids");
  const std::map<std::string, StepModelParams> fitted = calibrate_from_records(o.measurements, o.hw_dir, o.no_calibration);
  PlanTarget target = make_plan_target(o.hardware.front(), o.hw_dir, fitted);
  price_tuned_kernels(target, o.tuned_kernels, "--tuned-kernels");
  const Hardware& hw = target.hw();
  Recipe recipe = recipe_of_model(cfg.model, cfg.train.batch_size, hw.name);
  // The GPUs: --gpus, else the recipe's own `gpus`, else one. Their sharding is the
  // config's and recipe's [recipe.sharding], resolved as `mpirun -np N hetrec train` does.
  const int gpus = o.gpus > 0 ? o.gpus : cfg.recipe_gpus > 0 ? cfg.recipe_gpus : 1;
  apply_sharding(recipe, cfg.model, cfg.sharding, gpus);
  const std::string unsupported = gpu_sharding_unsupported(recipe, cfg.model, cfg.optim);
  if (!unsupported.empty()) throw ConfigError(o.evaluate + ": " + unsupported);
  const RecipeEvaluation e = evaluate_recipe(w, recipe, target, constraints);
  nlohmann::json j = evaluation_to_json(e, cfg.model, constraints.headroom);
  j["config"] = o.config;
  j["recipe_file"] = o.evaluate;
  std::printf("%s on %s: %s; predicted %.3f ms per step, %.0f samples/s, %.2f GiB of device memory\n",
              o.evaluate.c_str(), hw.name.c_str(), describe_recipe(recipe, cfg.model).c_str(), e.step.step_ms,
              e.step.samples_per_s, e.memory.device_bytes() / (1024.0 * 1024.0 * 1024.0));
  for (std::size_t r = 0; gpus > 1 && r < e.rank_memory.size(); ++r)
    std::printf("  rank %zu: %.3f ms, %.2f GiB of device memory\n", r, e.step.rank_step_ms[r],
                e.rank_memory[r].device_bytes() / (1024.0 * 1024.0 * 1024.0));
  if (!e.fits) std::printf("does not fit: %s\n", e.refusal.c_str());
  if (o.json_out.empty()) std::printf("%s\n", j.dump(1).c_str());
  else write_file(o.json_out, j.dump(1) + "\n", "evaluation file");
}

// The config file with the revision's model changes applied (table rows, cross rank, the
// synthetic data's raw ids per row, so that the raw id space stays the same).
std::string revised_config_text(const std::string& config, const ModelRevision& r, const std::string& changes) {
  toml::table doc = parse_toml_file(config);
  toml::table* model = doc["model"].as_table();
  if (!model || !model->contains("table_rows"))
    throw ConfigError(config + ": --revise writes model.table_rows; the config has no such key");
  toml::array rows;
  for (const TableConfig& t : r.model.tables) rows.push_back(t.rows);
  model->insert_or_assign("table_rows", rows);
  if (r.model.arch == Arch::dcnv2) model->insert_or_assign("cross_rank", r.model.cross_rank);
  if (toml::table* syn = doc["data"]["synthetic"].as_table()) syn->insert_or_assign("raw_ids_per_row", r.raw_ids_per_row);
  std::ostringstream text;
  text << "# Revised by hetrec plan --revise from " << config << ": " << changes << ".\n" << doc << "\n";
  return text.str();
}

void run_revise(const PlanOptions& o, const RunConfig& cfg, const Workload& w, const PlanConstraints& constraints,
                const std::map<std::string, StepModelParams>& fitted) {
  if (o.hardware.size() != 1) throw ConfigError("--revise: expected exactly one --hw, got " + std::to_string(o.hardware.size()));
  const PlanTarget target = make_plan_target(o.hardware.front(), o.hw_dir, fitted);
  RevisionOptions ro;
  ro.raw_ids_per_row = cfg.data.format == DataFormat::synthetic ? cfg.data.synthetic.raw_ids_per_row : 1;
  const std::vector<ModelRevision> revisions = propose_revisions(w, target, constraints, ro);
  std::printf("\nmodel revisions for %s (each at most %.0f%% of the samples/s):\n", target.hw().name.c_str(),
              100.0 * ro.max_cost);
  if (revisions.empty()) std::printf("  none: no resource is in excess for a change the model allows\n");
  for (const ModelRevision& r : revisions)
    std::printf("  %s\n    why: %s\n    predicted: %.0f -> %.0f samples/s (cost %.1f%%), %.1f -> %.1f GiB; %s\n",
                r.change.c_str(), r.reason.c_str(), r.before.step.samples_per_s, r.after.step.samples_per_s,
                100.0 * r.cost, r.before.memory.device_bytes() / (1024.0 * 1024.0 * 1024.0),
                r.after.memory.device_bytes() / (1024.0 * 1024.0 * 1024.0),
                describe_recipe(r.after.recipe, r.model).c_str());
  std::string changes;
  for (const ModelRevision& r : revisions) changes += (changes.empty() ? "" : "; ") + r.change;
  if (!revisions.empty() && !o.revised_config.empty())
    write_file(o.revised_config, revised_config_text(o.config, revisions.back(), changes), "revised config");
}

void run_plan(const PlanOptions& o) {
  if (!o.evaluate.empty()) return run_evaluate(o);
  const RunConfig cfg = load_run_config(o.config, o.overrides);
  const PlanConstraints constraints = constraints_of(o, cfg.train.batch_size);
  Workload w{cfg.model, cfg.optim, IdDistribution{IdLaw::zipf, cfg.data.synthetic.zipf_exponent}};
  if (!o.ids.empty()) w.ids = parse_id_distribution(o.ids, "--ids");
  std::vector<std::string> names;
  for (const std::string& n : o.hardware)
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  if (!o.port_from.empty() && std::find(names.begin(), names.end(), o.port_from) == names.end())
    names.insert(names.begin(), o.port_from);
  if (names.empty()) throw ConfigError("--hw: expected at least one hardware name (see `hetrec hw list`)");

  const std::map<std::string, StepModelParams> fitted = calibrate_from_records(o.measurements, o.hw_dir, o.no_calibration);
  std::vector<std::unique_ptr<PlanTarget>> targets;
  for (const std::string& name : names) {
    targets.push_back(std::make_unique<PlanTarget>(make_plan_target(name, o.hw_dir, fitted)));
    price_tuned_kernels(*targets.back(), o.tuned_kernels, "--tuned-kernels");
  }
  std::vector<PlanResult> plans;
  std::vector<const PlanTarget*> target_list;
  for (const auto& t : targets) {
    plans.push_back(plan_recipes(w, *t, constraints));
    target_list.push_back(t.get());
  }

  std::printf("\nhetrec plan: %s; headroom %.0f%%, batch %lld..%lld%s, GEMMs %s, rows %s, %s\n\n", o.config.c_str(),
              100.0 * constraints.headroom, static_cast<long long>(constraints.min_batch),
              static_cast<long long>(constraints.max_batch),
              constraints.gpus > 1 ? (" (global) on " + std::to_string(constraints.gpus) + " GPUs of one host").c_str() : "",
              fmt_dense(constraints.dense).c_str(), fmt_rows(constraints.rows).c_str(),
              constraints.allow_host_tables ? "tables may move to host memory" : "every table in HBM");
  std::fputs(format_plan_table(w, plans, target_list).c_str(), stdout);
  if (constraints.min_batch == cfg.train.batch_size && constraints.max_batch == cfg.train.batch_size &&
      !o.given_min_batch && !o.given_max_batch)
    std::printf("(batch the config's train.batch_size %lld, which its learning rates are tuned for; "
                "--min-batch and --max-batch look elsewhere)\n",
                static_cast<long long>(cfg.train.batch_size));
  for (const PlanResult& p : plans) {
    const std::string note = p.ranked.empty() ? std::string() : batch_quality_note(p.best().recipe.batch, cfg.train.batch_size);
    if (!note.empty()) std::printf("%s: %s\n", p.hardware.c_str(), note.c_str());
  }
  for (std::size_t i = 0; i < plans.size() && o.candidates > 0; ++i)
    std::printf("\n%s: best candidates\n%s", plans[i].hardware.c_str(),
                format_candidates(w, plans[i], o.candidates).c_str());

  if (!o.port_from.empty()) {
    const auto from = std::find_if(plans.begin(), plans.end(), [&](const PlanResult& p) { return p.hardware == o.port_from; });
    if (from->ranked.empty()) {
      std::printf("\ndirect port: %s has no recipe to port\n", o.port_from.c_str());
    } else {
      std::vector<PortComparison> ports;
      for (std::size_t i = 0; i < plans.size(); ++i)
        if (plans[i].hardware != o.port_from)
          ports.push_back(compare_direct_port(w, *from, plans[i], *targets[i], constraints));
      std::printf("\ndirect port of the %s recipe\n%s", o.port_from.c_str(), format_port_comparisons(w, ports).c_str());
    }
  }

  std::printf("\n");
  std::vector<ChartBar> bars;
  std::size_t planned = 0;
  for (const PlanResult& p : plans) planned += p.ranked.empty() ? 0 : 1;
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const PlanResult& p = plans[i];
    if (p.ranked.empty()) continue;
    const RecipeEvaluation& best = p.best();
    bars.push_back({targets[i]->hw().display_name +
                        (best.recipe.gpus > 1 ? " x" + std::to_string(best.recipe.gpus) : std::string()),
                    p.hardware + ", batch " + std::to_string(best.recipe.batch) + ", " +
                        std::string(dense_precision_name(best.recipe.dense)) + ", " +
                        std::string(dtype_name(best.recipe.row_dtype)) + " rows",
                    best.step, best.memory.device_bytes(), best.memory.usable_bytes});
    if (!o.out.empty())
      write_file(per_hardware_path(o.out, p.hardware, planned > 1), recipe_to_toml(best.recipe, best.step, w.model),
                 "recipe file");
  }
  if (!o.svg.empty()) write_file(o.svg, breakdown_svg(o.config, bars), "chart file");
  if (o.revise) run_revise(o, cfg, w, constraints, fitted);
  std::string unplanned;
  for (const PlanResult& p : plans)
    if (p.ranked.empty()) unplanned += (unplanned.empty() ? "" : ", ") + p.hardware;
  if (!unplanned.empty())
    throw ConfigError("no recipe of " + o.config + " fits " + unplanned +
                      " within the constraints (the refusal above names the largest consumers)");
}

}  // namespace

void add_plan_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "plan the training recipe of a model for each accelerator");
  cmd->add_option("--config,-c", o->config, "model config (TOML); its [model] and [optim] are planned")->required();
  cmd->add_option("--set", o->overrides, "override a config key, e.g. --set model.embedding_dim=64 (repeatable)");
  cmd->add_option("--hw", o->hardware, "hardware names, comma separated (see `hetrec hw list`)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--hw-dir", o->hw_dir, "folder of hardware description files")->capture_default_str();
  cmd->add_option("--out", o->out, "write the recipe TOML here (plan-<hw>.toml style names for several)");
  cmd->add_option("--svg", o->svg, "write an SVG chart of the predicted step breakdown here");
  cmd->add_option("--headroom", o->headroom, "fraction of device memory kept free")->capture_default_str();
  cmd->add_option("--max-batch", o->max_batch,
                  "largest batch size tried (default: the config's train.batch_size, which its learning rates are "
                  "tuned for)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--min-batch", o->min_batch, "smallest batch size tried")->capture_default_str();
  cmd->add_option("--dense", o->dense, "allowed GEMM precisions: fp32, tf32, bf16, fp16")->delimiter(',')->capture_default_str();
  cmd->add_option("--rows", o->rows, "allowed embedding row precisions: fp32, fp16, bf16")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_flag("--allow-host-tables", o->allow_host_tables,
                "let tables move to page-locked host memory when they do not fit");
  cmd->add_option("--lower-precision-gain", o->lower_precision_gain,
                  "throughput gain a step down in precision must bring")
      ->capture_default_str();
  cmd->add_option("--port-from", o->port_from, "compare this hardware's recipe run unchanged on the others");
  cmd->add_option("--ids", o->ids,
                  "id distribution: uniform, zipf:<s> or power:<a> (default: zipf with data.synthetic.zipf_exponent)");
  cmd->add_option("--measurements", o->measurements, "folder of recorded e2e results to calibrate the step model on")
      ->capture_default_str();
  cmd->add_flag("--no-calibration", o->no_calibration, "use the generic step-model factors");
  cmd->add_option("--tuned-kernels", o->tuned_kernels,
                  "price the runs as loading this `hetrec tune` winners file (its entries fresh on each --hw's GPU)");
  cmd->add_option("--candidates", o->candidates, "also list this many best candidates per hardware");
  cmd->add_option("--gpus", o->gpus,
                  "plan for this many GPUs of one host (the --hw hardware; the batch is the global batch and each "
                  "table gets a sharding); with --evaluate: overrides the recipe's gpus")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--evaluate", o->evaluate,
                  "predict this recipe file (a [recipe] table applied to --config) on the one --hw instead of searching");
  cmd->add_option("--json", o->json_out, "with --evaluate: write the prediction JSON here instead of stdout");
  cmd->add_option("--constraints", o->constraints_file,
                  "quality constraints file: a [plan] table with max_batch, min_batch, rows, dense, headroom, "
                  "allow_host_tables, lower_precision_gain (flags given on the command line override it)");
  cmd->add_flag("--revise", o->revise,
                "also propose model changes that spend what the one --hw has in excess (rows of hashed tables, "
                "DCN rank), each with its predicted cost");
  cmd->add_option("--revised-config", o->revised_config, "with --revise: write the revised config here");
  cmd->callback([o, cmd, &action] {
    o->given_headroom = cmd->count("--headroom") > 0;
    o->given_max_batch = cmd->count("--max-batch") > 0;
    o->given_min_batch = cmd->count("--min-batch") > 0;
    o->given_dense = cmd->count("--dense") > 0;
    o->given_rows = cmd->count("--rows") > 0;
    o->given_gain = cmd->count("--lower-precision-gain") > 0;
    action = [o] { run_plan(*o); };
  });
}

}  // namespace hetrec::cli

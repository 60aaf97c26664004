// hetrec.hardware_list, hetrec.plan and hetrec.gemm_select: the hardware descriptions,
// the co-design planner and the analytical GEMM selector, as `hetrec hw list`,
// `hetrec plan` and `hetrec gemm select` run them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/install_paths.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "plan/recipe_toml.h"
#include "plan/report.h"
#include "plan/search.h"
#include "python/bindings.h"
#include "python/py_config.h"
#include "train/plan_targets.h"
#include "tune/gemm_select_text.h"

namespace py = pybind11;

namespace hetrec::python {
namespace {

std::string hw_dir_or_default(const std::optional<std::string>& hw_dir) {
  return hw_dir ? *hw_dir : default_hardware_dir();
}

// The best recipe of the config's model for `hardware`; the step model calibrated on the
// recorded measurements as `hetrec plan` does (`calibrate`: false, its generic factors).
py::dict plan(const py::object& config, const std::string& hardware, const py::object& overrides, int gpus,
              const std::optional<std::string>& hw_dir, double headroom, std::optional<int64_t> min_batch, std::optional<int64_t> max_batch,
              const std::vector<std::string>& dense, const std::vector<std::string>& rows, bool allow_host_tables,
              double lower_precision_gain, bool calibrate, const std::optional<std::string>& measurements) {
  const RunConfig cfg = load_config(config, overrides, "");
  PlanConstraints c;
  c.gpus = gpus;
  c.headroom = headroom;
  // min_batch and max_batch None: the config's train.batch_size (bind_batch_to_config).
  bind_batch_to_config(c, cfg.train.batch_size);
  apply_batch_range(c, cfg.train.batch_size, min_batch, max_batch, "min_batch", "max_batch");
  c.dense.clear();
  for (const std::string& d : dense) c.dense.push_back(parse_dense_precision(d, "dense"));
  c.rows.clear();
  for (const std::string& r : rows) c.rows.push_back(parse_dtype(r, "rows"));
  c.allow_host_tables = allow_host_tables;
  c.lower_precision_gain = lower_precision_gain;
  validate_constraints(c);
  const std::string dir = hw_dir_or_default(hw_dir);
  const Workload w{cfg.model, cfg.optim, IdDistribution{IdLaw::zipf, cfg.data.synthetic.zipf_exponent}};
  const auto fitted =
      calibrate_from_records(measurements ? *measurements : data_dir() + "/bench/results", dir, !calibrate);
  const PlanTarget target = make_plan_target(hardware, dir, fitted);
  const Hardware& hw = target.hw();
  PlanResult result;
  {
    py::gil_scoped_release nogil;
    result = plan_recipes(w, target, c);
  }
  const RecipeEvaluation& best = result.best();  // ConfigError when nothing fits
  py::dict d;
  d["hardware"] = hw.name;
  d["gpus"] = best.recipe.gpus;
  d["batch"] = best.recipe.batch;
  d["dense"] = std::string(dense_precision_name(best.recipe.dense));
  d["rows"] = std::string(dtype_name(best.recipe.row_dtype));
  d["step_ms"] = best.step.step_ms;
  d["samples_per_s"] = best.step.samples_per_s;
  d["device_gib"] = best.memory.device_bytes() / (1024.0 * 1024.0 * 1024.0);
  d["description"] = describe_recipe(best.recipe, cfg.model);
  d["recipe_toml"] = recipe_to_toml(best.recipe, best.step, cfg.model);
  d["table"] = format_plan_table(w, {result}, {&target});
  d["note"] = batch_quality_note(best.recipe.batch, cfg.train.batch_size);  // empty at the config's batch
  return d;
}

std::string gemm_select(int64_t m, int64_t n, int64_t k, const std::string& hardware, int64_t batch,
                        const std::string& dtype, const std::string& out_dtype, const std::string& epilogue,
                        bool trans_a, bool trans_b, bool tf32, const std::optional<std::string>& hw_dir) {
  const std::string dir = hw_dir_or_default(hw_dir);
  const Hardware hw = load_hardware_by_name(hardware, dir);
  const GemmModelParams params = load_gemm_params_for(hw, dir + "/params");
  tune::GemmSelectRequest r;
  r.m = m;
  r.n = n;
  r.k = k;
  r.batch = batch;
  r.dtype = dtype;
  r.out_dtype = out_dtype;
  r.epilogue = epilogue;
  r.trans_a = trans_a;
  r.trans_b = trans_b;
  r.tf32 = tf32;
  return tune::gemm_select_text(hw, tune::gemm_problem_of(r, ""), params);
}

}  // namespace

void bind_planning(py::module_& m) {
  m.def(
      "hardware_list", [](const std::optional<std::string>& hw_dir) { return list_hardware(hw_dir_or_default(hw_dir)); },
      py::arg("hw_dir") = py::none(), "names of the hardware descriptions (hw/*.toml), as `hetrec hw list`");
  m.def("hardware_dir", [] { return default_hardware_dir(); }, "the folder hardware descriptions are read from");
  const PlanConstraints defaults;  // the planner's own (plan/search.h)
  std::vector<std::string> dense_names, row_names;
  for (DensePrecision d : defaults.dense) dense_names.emplace_back(dense_precision_name(d));
  for (DType t : defaults.rows) row_names.emplace_back(dtype_name(t));
  m.def("plan", &plan, py::arg("config"), py::arg("hardware") = "h200_sxm", py::arg("overrides") = py::none(),
        py::arg("gpus") = 1, py::arg("hw_dir") = py::none(), py::arg("headroom") = defaults.headroom,
        py::arg("min_batch") = py::none(), py::arg("max_batch") = py::none(),
        py::arg("dense") = dense_names, py::arg("rows") = row_names, py::arg("allow_host_tables") = false,
        py::arg("lower_precision_gain") = defaults.lower_precision_gain, py::arg("calibrate") = true,
        py::arg("measurements") = py::none(),
        "the best recipe of the config's model on the named hardware, as `hetrec plan` plans it");
  m.def("gemm_select", &gemm_select, py::arg("m"), py::arg("n"), py::arg("k"), py::arg("hardware") = "h200_sxm",
        py::arg("batch") = 1, py::arg("dtype") = "bf16", py::arg("out_dtype") = "", py::arg("epilogue") = "none",
        py::arg("trans_a") = false, py::arg("trans_b") = false, py::arg("tf32") = false, py::arg("hw_dir") = py::none(),
        "what `hetrec gemm select` prints for this GEMM");
}

}  // namespace hetrec::python

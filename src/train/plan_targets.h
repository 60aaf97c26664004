#pragma once
// What `hetrec plan`, `hetrec bench port` and the Python module's plan share: the step
// model calibrated on the recorded measurements (bench/results/e2e-*.json and
// planner-*.json) of every architecture that has some, and the planning target of one
// hardware description. Here rather than in plan/ because a record names the config it ran,
// read through train/config.h.
#include <map>
#include <string>

#include "plan/step_model_params.h"
#include "plan/workload.h"

namespace hetrec::inline train {

// Step-model parameters per architecture (Hardware::arch), fitted to the records in
// `measurements`; empty with `no_calibration` or without the folder. Prints the fit and
// every record it leaves out (with the reason).
std::map<std::string, StepModelParams> calibrate_from_records(const std::string& measurements, const std::string& hw_dir,
                                                            bool no_calibration);

// The target for hardware `name` (hw/<name>.toml): its GEMM selector and its
// architecture's fitted step parameters, or the generic ones.
PlanTarget make_plan_target(const std::string& name, const std::string& hw_dir,
                            const std::map<std::string, StepModelParams>& fitted);

// Prices the target's runs as loading the winners of `winners_file` (`hetrec tune`'s) that
// the engine would load on its GPU: those under this build's kernel sources
// (plan/tuned_kernel_ratios.h, fresh_tuned_ratios), and prints each family's ratio. Nothing
// for an empty name. Throws ConfigError naming `option` for a missing or invalid file, and
// in a build without a GPU backend, which has no kernel sources to tell fresh winners from
// stale ones.
void price_tuned_kernels(PlanTarget& target, const std::string& winners_file, const std::string& option);

}  // namespace hetrec::train::train

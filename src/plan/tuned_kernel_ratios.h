#pragma once
// The tuned kernels in the step model. A run that loads `hetrec tune`'s winners
// (tune/winners.json) runs a tuned variant of some kernel families in place of the built-in
// kernel; the step model prices that family's work (StepTerm::kernel) at the built-in
// kernel's rate times the winner's time over the built-in's, both measured by the tuner on
// that GPU at the tuned shape (Winner::time_us / default_us). The ratio carries the
// variant's speed to the other batches and tables of the same kernel; the calibrated
// factors stay those of the built-in kernels, so records with and without tuned kernels
// fit one set of factors.
#include <map>
#include <string>

#include "plan/step_model.h"
#include "hw/hardware.h"
#include "tune/winners.h"

namespace hetrec::inline plan {

// Tuned time over built-in time, by kernel family name (tune/kernel_families.h): the type
// of PlanTarget::tuned.
using TunedKernelRatios = std::map<std::string, double>;

// The tuned variants a GPU model's description names, by kernel family: for each family
// whose label is followed by ": tuned variant ", the parameters that follow ("k=v k=v",
// as tune::describe writes them). The description is what the engine prints and e2e_bench
// records (metrics "model").
std::map<std::string, std::string> described_tuned_variants(const std::string& description);

// The ratio of each variant a recorded run on `gpu` loaded whose family does work in the
// run's step `work` (the fp32 stream's cross forward does none beside the 16-bit stream):
// the winners of `store` measured on that GPU for that family with exactly those parameters
// (the geometric mean when the same variant was measured more than once, e.g. under several
// source hashes). Throws ConfigError naming `winners_path`, the family and the parameters
// when none is there: the run's variant was never timed against the built-in kernel there.
TunedKernelRatios recorded_tuned_ratios(const std::map<std::string, std::string>& variants, const std::string& gpu,
                                        const StepWork& work, const tune::WinnersStore& store,
                                        const std::string& winners_path);

// The ratios of the winners the engine loads on the hardware `hw` describes: those of its
// GPU (hw/hardware.h describes_device) under kernel sources of `source_hash`
// (kernels::rtc_sources_hash of the build that runs them; other entries are stale and the
// engine runs the built-in kernel), the geometric mean over a family's shapes and drivers.
// The small GEMMs are left out: the GEMM dispatch prices them.
TunedKernelRatios fresh_tuned_ratios(const tune::WinnersStore& store, const Hardware& hw, const std::string& source_hash);

// Sets the ratio of every term of `work` whose kernel has one (the others stay at 1).
void apply_tuned_ratios(StepWork& work, const TunedKernelRatios& ratios);

}  // namespace hetrec::plan::plan

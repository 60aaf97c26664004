#pragma once
// What is planned for: the model, its optimizers and how its ids are distributed; and
// where: one accelerator with its GEMM model and step-model factors.
#include <map>
#include <string>

#include "model/model_config.h"
#include "gemm_perf/gemm_selector.h"
#include "plan/id_distribution.h"
#include "plan/step_model_params.h"

namespace hetrec::inline plan {

struct Workload {
  ModelConfig model;
  OptimConfig optim;
  IdDistribution ids;
};

struct PlanTarget {
  GemmSelector gemm;  // holds the hardware description and its GEMM-model parameters
  StepModelParams step;
  // The tuned kernels the run loads, as their time over the built-in kernel's by family
  // (plan/tuned_kernel_ratios.h); empty: the built-in kernels.
  std::map<std::string, double> tuned = {};

  const Hardware& hw() const { return gemm.hardware(); }
};

}  // namespace hetrec::plan::plan

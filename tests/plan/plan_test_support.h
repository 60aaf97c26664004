#pragma once
// Shared helpers of the planner tests: the reference workloads (configs/dlrm_dcnv2_mlperf.toml and the capped variant, "Reference
// workload") built in code (the plan layer sits below the config parser), the shipped
// hardware files and a target for each.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hw/hardware.h"
#include "model/model_config.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_selector.h"
#include "plan/workload.h"

namespace hetrec::test {

inline const std::string kHwDir = std::string(HETREC_SOURCE_DIR) + "/hw";
inline const std::string kParamsDir = kHwDir + "/params";
inline const std::string kResultsDir = std::string(HETREC_SOURCE_DIR) + "/bench/results/";

// MLPerf DLRM-DCNv2 (configs/dlrm_dcnv2_mlperf.toml); `cap` > 0 caps every table at that
// many rows (configs/dlrm_dcnv2_capped.toml: 2,000,000); `arch` dlrm swaps the cross net
// for the dot interaction (e2e_bench's former mlperf-dlrm-capped preset).
// DCNv2: 3 dense features, tables of 1000 and 300 rows (hotness 2 and 3), dim 8, bottom
// MLP 3-16-8, two cross layers of rank 4 on the 24-wide concatenation, top MLP 24-32-1.
inline ModelConfig small_model(Arch arch = Arch::dcnv2) {
  ModelConfig m;
  m.arch = arch;
  m.num_dense = 3;
  m.embedding_dim = 8;
  m.tables = {TableConfig{"a", 1000, 2, false, Pooling::sum}, TableConfig{"b", 300, 3, false, Pooling::sum}};
  m.bottom_mlp = {16, 8};
  m.top_mlp = {32, 1};
  m.cross_layers = 2;
  m.cross_rank = 4;
  return m;
}

inline ModelConfig mlperf_model(int64_t cap = 0, Arch arch = Arch::dcnv2) {
  const int64_t rows[] = {40000000, 39060, 17295, 7424,  20265,    3,        7122,     1543,   63,
                          40000000, 3067956, 405282, 10, 2209,     11938,    155,      4,      976,
                          14,       40000000, 40000000, 40000000, 590152, 12973, 108, 36};
  const int hotness[] = {3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};
  ModelConfig m;
  m.arch = arch;
  m.num_dense = 13;
  m.embedding_dim = 128;
  for (int t = 0; t < 26; ++t) {
    TableConfig c;
    c.name = "t" + std::to_string(t);
    c.rows = cap > 0 ? std::min(rows[t], cap) : rows[t];
    c.hotness = hotness[t];
    m.tables.push_back(c);
  }
  m.bottom_mlp = {512, 256, 128};
  m.top_mlp = {1024, 1024, 512, 256, 1};
  m.cross_layers = 3;
  m.cross_rank = 512;
  return m;
}

// The recorded planner benchmark on the H200 (bench/plan_recipes.py, docs/planner.md) of
// the current engine, with the direct ports from the H100 and the A100: calibration input.
inline const std::string kPlannerRecordFile = "planner-20261130-h200-port.json";

// The model of a config bench/plan_recipes.py trains (the plan layer reads no configs).
inline ModelConfig planner_config_model(const std::string& config) {
  if (config == "configs/dlrm_dcnv2_capped.toml") return mlperf_model(2000000);
  if (config == "configs/dlrm_dcnv2_mlperf.toml") return mlperf_model(0);
  ADD_FAILURE() << "no model for config " << config;
  return mlperf_model(0);
}

inline OptimConfig mlperf_optim() {
  OptimConfig o;
  o.dense = OptimizerKind::adagrad;
  o.sparse = OptimizerKind::rowwise_adagrad;
  return o;
}

inline Hardware shipped_hardware(const std::string& name) { return load_hardware_by_name(name, kHwDir); }

inline PlanTarget shipped_target(const std::string& name) {
  const Hardware hw = shipped_hardware(name);
  return PlanTarget{GemmSelector::for_hardware(hw, load_gemm_params_for(hw, kParamsDir)),
                    default_step_model_params(hw)};
}

}  // namespace hetrec::test

#pragma once
// Recorded end-to-end measurements (bench/results/e2e-*.json, written by bench/e2e_bench
// and bench/e2e_compare.py) read back as step-model measurements, for calibration and
// for replay tests.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "gemm_perf/gemm_selector.h"
#include "plan/calibration.h"
#include "plan/id_distribution.h"

namespace hetrec::inline plan {

// The ids of e2e_bench's synthetic batches: id = floor(rows * u^3) (bench/e2e_bench.cpp,
// synthetic_batch).
inline const IdDistribution kE2eBenchIds{IdLaw::power, 3.0};

struct E2eRecord {
  std::string path;
  std::string gpu;        // as the driver reports it, e.g. "NVIDIA H200"
  std::string date;
  std::string config;     // config file (or the benchmark's preset name in older records)
  std::string precision;  // GEMM precision: "fp32" or "tf32"
  std::string row_dtype;  // "" = the config's
  // "key=value" config overrides the run was made with, and its model.relu_backward (the
  // record's own, else "epilogue") and model.unaligned_gemms (the record's own, else
  // "fp32") unless they name them.
  std::vector<std::string> overrides;
  int64_t batch = 0;
  double step_ms = 0.0;   // median step
  bool cuda_graph = true;
  std::map<std::string, double> phase_ms;  // profiled phases (empty unless --profile)
  // Data-parallel runs (mpirun -np N e2e_bench): the GPUs and every table's placement as
  // e2e_bench writes it, "t0:table_wise@0, t1:row_wise, ..." (empty with one GPU).
  int world_size = 1;
  std::string sharding;
  // The embedding exchanges' element type ("fp32" or "bf16"; older records: fp32).
  std::string exchange_dtype = "fp32";
  // Whether the embedding work ran on its own stream (GpuModelOptions::overlap_exchanges;
  // never in profiled runs). Records written before it existed ran in one stream.
  bool overlap_exchanges = false;
  // Whether announced batches were copied to the device during the step before theirs
  // (batch_copied_ahead); records written before it existed uploaded before each step.
  bool batch_copied_ahead = false;
  // The winners file the run was given (--tuned-kernels; "" for the built-in kernels) and
  // the tuned variants its model description says it loaded, by kernel family
  // (plan/tuned_kernel_ratios.h: described_tuned_variants).
  std::string tuned_kernels;
  std::map<std::string, std::string> tuned_variants;
};

// Throws IoError when the file cannot be read, ConfigError naming the file and key when
// it is not an e2e record (benchmark != "e2e", missing or mistyped metrics).
E2eRecord read_e2e_record(const std::string& path);

// The record as a measurement of `model` / `optim` on the selector's hardware: its batch
// (the global batch), GEMM precision and row dtype, every table in HBM, ids as e2e_bench
// draws them, and with several GPUs the recorded sharding. Throws ConfigError naming the
// file for an unknown precision, row dtype, phase name or sharding entry.
StepMeasurement e2e_measurement(const E2eRecord& record, const ModelConfig& model, const OptimConfig& optim,
                                const GemmSelector& gemm);

}  // namespace hetrec::plan::plan

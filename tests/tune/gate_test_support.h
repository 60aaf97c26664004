#pragma once
// Shared pieces of the tuning loop's GPU tests: scratch folders, and the check
// that a candidate which failed verification goes to the attempt log and never
// to the winners.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "gpu/device.h"
#include "tune/gate.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"
#include "tune/variant_space.h"
#include "tune/winners.h"

namespace hetrec::tune {

// An empty scratch folder of this process, named after `name`.
inline std::filesystem::path tune_temp_dir(const std::string &name) {
  auto d = std::filesystem::temp_directory_path() /
           ("hetrec_tune_gpu_" + std::to_string(::getpid()) + "_" + name);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// Records the attempt of a candidate whose verification gave `check` (the
// rewritten `header`, `params`, timed at `time_us`) through the gate as the
// loop does, against no baseline time (any timed candidate that passed would be
// stored), and expects it in neither the store nor the winners file the store
// writes.
inline void expect_never_stored(const std::string &kernel,
                                const std::string &shape,
                                const std::string &source_hash,
                                const ParameterSet &params,
                                const ForwardCheck &check,
                                const std::string &header, double time_us) {
  const gpu::DeviceProperties dev =
      gpu::device_properties(gpu::current_device());
  const auto dir = tune_temp_dir(kernel + "_gate");
  AttemptLog log((dir / "attempts.jsonl").string());
  WinnersStore store;
  Gate gate(log, store);
  GateContext ctx;
  ctx.key = {kernel, shape, dev.name, "9.0", 1, source_hash};
  ctx.kernel_header = header;
  Attempt a;
  a.kernel = kernel;
  a.shape = shape;
  a.origin = "model";
  a.params = params;
  a.compiled = true;
  a.source_hash = source_hash;
  a.verdict = check.ok ? Verdict::passed : Verdict::wrong;
  a.reason = check.reason;
  a.time_us = time_us;
  EXPECT_FALSE(gate.record(a, ctx)) << kernel << " [" << shape << "]";
  EXPECT_TRUE(store.winners().empty());
  store.save((dir / "winners.json").string());
  EXPECT_TRUE(
      WinnersStore::load((dir / "winners.json").string()).winners().empty());
  std::filesystem::remove_all(dir);
}

} // namespace hetrec::tune

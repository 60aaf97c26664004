#pragma once
// The tuner's search over one kernel and shape (propose, prune, order by the kernel's
// model, compile with NVRTC, check resources, verify, time, keep the winner) and the
// registry of tunable kernel families it runs. Each family's adapter
// (tunable/<folder>/*_tuning.cpp) binds its kernel, variant space, cost model and bench into a KernelProblem and says
// which shapes of a run it tunes; `hetrec tune` iterates tunable_families(), in the order
// of the one list of families (tune/kernel_families.h).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu/device.h"
#include "gpu/rtc.h"
#include "hw/hardware.h"
#include "tune/attempt.h"
#include "tune/gate.h"
#include "tunable/embedding_forward/embedding_forward_bench.h"  // ForwardCheck, what every bench's verification returns
#include "tune/gpu/tune_session.h"
#include "tune/variant_space.h"
#include "tune/winners.h"

namespace hetrec::tune {

using Clock = std::chrono::steady_clock;

std::string fmt_us(double us);
uint64_t fresh_seed();

struct DeviceFacts {
  gpu::DeviceProperties props;
  int driver = 0;
  std::string cc() const { return std::to_string(props.compute_major) + "." + std::to_string(props.compute_minor); }
};

// A compiled candidate loaded on the device, bound to its workload.
class LoadedCandidate {
 public:
  virtual ~LoadedCandidate() = default;
  virtual gpu::KernelResources resources() const = 0;
  virtual ForwardCheck verify() = 0;
  virtual double median_us(int reps) = 0;
};

// What the search needs of one kernel and shape.
struct KernelProblem {
  std::string kernel;
  std::string shape;
  std::string workload;
  std::string header;     // the kernel header a model candidate rewrites
  std::string signature;  // what a rewrite must keep
  std::string source_hash;  // the winners' validator: empty for kernels::rtc_sources_hash()
  double floor_us = 0.0;
  double default_us = 0.0;
  ParameterSet default_params;
  VariantSpace space;
  std::function<std::string(const ParameterSet&)> static_problem;
  std::function<std::pair<double, double>(const ParameterSet&)> rank;  // (prediction, tie-break), lower first
  std::function<int(const ParameterSet&)> block_threads;
  std::function<std::size_t(const ParameterSet&)> dynamic_shared_bytes;
  std::function<gpu::RtcProgram(const ParameterSet&, const std::string& header)> program;
  std::function<std::unique_ptr<LoadedCandidate>(const ParameterSet&, const gpu::RtcBinary&)> load;
  // A model candidate's extra verification (tune/gate.h verification_sets): the compiled
  // candidate on a fresh bench of one input set; reads_bags adds the edge shapes.
  bool reads_bags = false;
  std::function<ForwardCheck(const ParameterSet&, const gpu::RtcBinary&, const VerificationSet&)> verify_set;
};

inline SetCheck set_check(const ForwardCheck& c) { return {c.ok, c.reason, c.max_abs_error}; }
// Proposes, compiles, checks, verifies, times and keeps, for one kernel and shape, for at
// most `budget` from its call (the workload and the built-in time are ready by then).
nlohmann::json search(const TuneOptions& o, const DeviceFacts& dev, const KernelProblem& k, WinnersStore& store,
                      AttemptLog& log, Clock::duration budget, std::ostream& progress);

// What a family's jobs share: the run's options, the device, the winners and the log.
struct TuningContext {
  const TuneOptions& options;
  const DeviceFacts& device;
  WinnersStore& store;
  AttemptLog& log;
  std::ostream& progress;
};
// One (kernel, shape): its workload prepared and its built-in kernel timed, then a search of
// at most `budget`; returns its results JSON.
using TuningJob = std::function<nlohmann::json(Clock::duration budget)>;

// A tunable kernel: its name (as --kernel and the winners file give it) and the jobs of a run.
struct TunableFamily {
  std::string kernel;
  std::function<std::vector<TuningJob>(const TuningContext&)> jobs;
};

// The families' adapters, one registry: each tunable folder's add_<folder>_tuning (in its
// <folder>_tuning.cpp; tune/kernel_families.h), in the order of kernel_families(). Throws
// InternalError when an adapter names a family that list lacks or a family has no adapter.
const std::vector<TunableFamily>& tunable_families();

}  // namespace hetrec::tune

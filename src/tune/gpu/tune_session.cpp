#include "tune/gpu/tune_session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/utc_time.h"
#include "gpu/device.h"
#include "kernels/rtc_sources.h"
#include "tune/attempt.h"
#include "tune/gpu/kernel_search.h"
#include "tune/llm_proposer.h"
#include "tune/winners.h"

namespace hetrec::tune {

std::vector<std::string> tunable_kernels() {
  std::vector<std::string> names;
  for (const TunableFamily& f : tunable_families()) names.push_back(f.kernel);
  return names;
}

nlohmann::json run_tuning(const TuneOptions& o, std::ostream& progress) {
  std::vector<std::string> kernels = o.kernels;
  if (std::find(kernels.begin(), kernels.end(), "all") != kernels.end()) kernels = tunable_kernels();
  const std::vector<std::string> known = tunable_kernels();
  for (const std::string& k : kernels)
    if (std::find(known.begin(), known.end(), k) == known.end()) {
      std::string names;
      for (const std::string& n : known) names += n + ", ";
      throw ConfigError("--kernel " + k + ": no variant space for this kernel; tunable: " + names + "all");
    }
  // Configuration first, so that a bad endpoint or winners file is reported as such on
  // any machine: the proposer's URL and key rule (tune/llm_proposer.h), the winners
  // file's schema, hashes and bounds (tune/winners.h).
  (void)llm_endpoint_from_env();
  WinnersStore store = WinnersStore::load(o.winners_path);
  if (gpu::device_count() == 0) throw DeviceError("hetrec tune: no GPU is visible; tuning measures on the device");
  const auto start = Clock::now();
  const auto budget = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.budget_minutes * 60.0));
  DeviceFacts dev{gpu::device_properties(gpu::current_device()), gpu::driver_version()};
  // The description must be this device's (h200_sxm for "NVIDIA H200"): its bandwidth makes
  // the floors and its limits the occupancy.
  if (!describes_device(o.hw, dev.props.name))
    throw ConfigError("--hw " + o.hw.name + " describes '" + o.hw.display_name + "', but the device is '" +
                      dev.props.name + "': name its description (hetrec hw list)");
  if (dev.props.warp_size != o.hw.warp_size)
    throw ConfigError("hardware description '" + o.hw.name + "' has warp size " + std::to_string(o.hw.warp_size) +
                      ", the device " + std::to_string(dev.props.warp_size));

  // One job per (kernel, shape); each searches for an equal share of the budget, after
  // preparing its workload and timing its built-in kernel (which the budget does not count:
  // on a full MLPerf table set that takes longer than a short budget's share).
  std::vector<TuningJob> jobs;
  std::filesystem::create_directories(o.out_dir);
  const std::string stamp = utc_time("%Y%m%d-%H%M%S");
  AttemptLog log(o.out_dir + "/tune-attempts-" + stamp + ".jsonl");
  const TuningContext context{o, dev, store, log, progress};
  for (const std::string& k : kernels)
    for (const TunableFamily& f : tunable_families())
      if (f.kernel == k)
        for (TuningJob& job : f.jobs(context)) jobs.push_back(std::move(job));
  nlohmann::json shapes = nlohmann::json::array();
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    shapes.push_back(jobs[i](budget / static_cast<long>(jobs.size())));
    if (!o.winners_path.empty()) {
      const auto parent = std::filesystem::path(o.winners_path).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent);
      store.save(o.winners_path);
    }
  }
  const char* commit = std::getenv("HETREC_COMMIT");
  nlohmann::json results = {
      {"date", utc_time("%Y-%m-%dT%H:%M:%SZ")},
      {"gpu", dev.props.name},
      {"compute_capability", dev.cc()},
      {"driver_version", dev.driver},
      {"hardware", o.hw.name},
      {"commit", commit ? commit : "unknown"},
      {"command", o.command_line},
      {"budget_minutes", o.budget_minutes},
      {"elapsed_s", std::chrono::duration<double>(Clock::now() - start).count()},
      {"stop_fraction", o.stop_fraction},
      {"min_occupancy", o.min_occupancy},
      {"source_hash", kernels::rtc_sources_hash()},
      {"attempt_log", log.path()},
      {"winners_file", o.winners_path},
      {"kernels_without_space",
       "embedding backward's preparation (sort keys, segments, chunk sums of long rows), "
       "BCE loss, dense optimizer, radix sort, scan: not declared"},
      {"shapes", shapes}};
  const std::string results_path = o.out_dir + "/tune-" + stamp + ".json";
  results["results_file"] = results_path;
  std::ofstream f(results_path);
  f << results.dump(2) << '\n';
  if (!f) throw IoError("hetrec tune: cannot write " + results_path);
  return results;
}

}  // namespace hetrec::tune

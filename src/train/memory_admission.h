#pragma once
// Memory admission: before the engine makes its first large allocation, the bytes the run
// will hold are added up, consumer by consumer, and compared with the memory the process
// can actually get. A run that does not fit stops at once with an OutOfMemoryError (exit
// code 6) naming its largest consumers and the memory available, instead of allocating,
// touching pages and thrashing until the kernel's OOM killer ends it without a word.
//
// Host memory available to the process is the least of
//   - MemAvailable of /proc/meminfo (what the kernel can give without swapping),
//   - the memory cgroup's limit less its usage, at every level from the process's cgroup
//     up to the root of the mounted hierarchy (v2: memory.max - memory.current; v1:
//     memory.limit_in_bytes - memory.usage_in_bytes), the inactive file cache of
//     memory.stat not counted as used (the kernel reclaims it first),
//   - the address-space limit (RLIMIT_AS, `ulimit -v`) less what is mapped already.
// The check allocates nothing and reads a handful of small kernel files.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/log.h"
#include "plan/memory_model.h"
#include "train/config.h"

namespace hetrec::inline train {

// One bound on the memory this process can still get.
struct MemoryLimit {
  std::string source;  // "MemAvailable (/proc/meminfo)", "cgroup v2 /sys/fs/cgroup/x (memory.max 4.00 GiB less 1.20 GiB used)"
  double bytes = 0.0;
};

// Every bound found (none on a system that reports none) and the one that applies.
struct AvailableMemory {
  std::vector<MemoryLimit> limits;
  // The smallest bound, or nullopt when no bound is known (then nothing is refused).
  std::optional<MemoryLimit> binding() const;
};

// Reads /proc/meminfo, /proc/self/cgroup, /proc/self/mountinfo, the cgroup's files and
// the address-space limit of this process.
AvailableMemory available_host_memory();

// ---- The kernel's files, parsed (pure functions of their text) ----

// MemAvailable in bytes ("MemAvailable:   23741716 kB"), or nullopt when absent.
std::optional<double> meminfo_available_bytes(std::string_view meminfo);
// A cgroup limit file (memory.max, memory.limit_in_bytes): nullopt for "max" and for
// cgroup v1's "no limit" (a page-rounded 2^63 - 1), else the bytes.
std::optional<double> cgroup_limit_bytes(std::string_view text);
// A counter of a cgroup's memory.stat ("inactive_file 123456"), in bytes.
std::optional<double> memory_stat_bytes(std::string_view memory_stat, std::string_view key);

struct CgroupMemoryDir {
  int version = 2;   // 1 or 2
  std::string path;  // the process's memory cgroup directory
  std::string root;  // the mount point of its hierarchy (the walk up stops here)
};
// The memory cgroup directory of the process from the text of /proc/self/cgroup and
// /proc/self/mountinfo: the v1 memory hierarchy when /proc/self/cgroup binds the memory
// controller to one (a hybrid system), else the unified (v2) hierarchy; nullopt when the
// hierarchy is not mounted or the cgroup lies outside the mount.
std::optional<CgroupMemoryDir> cgroup_memory_dir(std::string_view proc_self_cgroup, std::string_view mountinfo);

// ---- What a run needs ----

// Host bytes the CPU engine holds for this run (model/dlrm.cpp, nn/, optim/, data/pipeline.h,
// train/trainer.cpp's evaluation), consumer by consumer: each table's rows and sparse
// optimizer state, the dense parameters with their gradients and optimizer slots, the
// per-batch workspaces at the largest batch the run uses, the pipeline's batches and the
// evaluation buffers. Every consumer has MemorySpace::host.
std::vector<MemoryConsumer> cpu_engine_host_memory(const RunConfig& cfg);

// What is kept free beyond the estimate, for what it does not count: the program, its
// libraries and thread stacks (an OpenMP team, the pipeline's producer and readers at 8 MiB
// of stack each by default on Linux), OpenBLAS's per-thread GEMM buffers (32 MiB each by
// default), malloc's arenas and fragmentation, small allocations (metrics, names, logs).
inline constexpr double kHostFixedMarginBytes = 256.0 * 1024.0 * 1024.0;
// ... and in proportion to the estimate: vectors that grow by doubling (a batch's ids as
// a source appends them, the evaluation's scores) hold up to twice their size for a moment;
// 5% covers that for the per-batch buffers, which are a small part of any large run.
inline constexpr double kHostRelativeMargin = 0.05;

// Throws OutOfMemoryError when `consumers` (plus the margins) exceed the binding limit of
// `available`: the bytes needed and available, the limit's source, the three largest
// consumers with their sizes and what to change. Does nothing when no limit is known.
void admit_host_memory(const std::vector<MemoryConsumer>& consumers, const AvailableMemory& available,
                       const RunConfig& cfg);

// The CPU engine's check, before make_cpu_model: estimate, available memory, admit; logs
// the figures at debug level.
void admit_cpu_model(const RunConfig& cfg, const Logger& log);

// ---- The single-GPU engine ----

// Host bytes of the data pipeline and the evaluation (either engine): the pipeline's
// batches, the evaluation batch and the scores.
std::vector<MemoryConsumer> data_host_memory(const RunConfig& cfg);

// The planner's memory model of the recipe the config describes (plan::recipe_of_model:
// its batch, precisions, host tables), for `device_name`. Its host consumers leave out the
// checkpoint mirrors when the run writes no checkpoints.
MemoryEstimate gpu_engine_memory(const RunConfig& cfg, const std::string& device_name);

// Throws OutOfMemoryError when the estimate's device consumers exceed `device_free_bytes`
// (cudaMemGetInfo's free memory once the runtime context exists: the context's own
// consumer is left out). No margin: the memory model counts the allocator's rounding and
// matches what the engine allocates (tests/plan/test_memory_model.cpp), so a refusal is
// a run that would fail.
void admit_device_memory(const MemoryEstimate& estimate, double device_free_bytes, const std::string& device_name,
                         const RunConfig& cfg);

// The GPU engine's check, before make_gpu_model: device memory against `device_free_bytes`,
// then host memory (page-locked staging, host tables, mirrors, the data pipeline).
void admit_gpu_model(const RunConfig& cfg, const std::string& device_name, double device_free_bytes,
                     const Logger& log);

}  // namespace hetrec::train::train

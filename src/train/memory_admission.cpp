#include "train/memory_admission.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "core/dtype.h"
#include "core/error.h"
#include "optim/sparse_update.h"
#include "plan/recipe.h"

namespace hetrec::inline train {
namespace {

constexpr double kFloatBytes = 4.0;   // fp32 activations, gradients, dense parameters, labels
constexpr double kIndexBytes = 4.0;   // int32 ids and offsets (data/batch.h)
constexpr double kSortKeyBytes = 8.0; // uint64 (id << 32 | sample) keys and int64 run starts (nn/embedding_collection.h)
constexpr double kKiB = 1024.0;
// cgroup v1 reports "no limit" as PAGE_COUNTER_MAX pages (2^63 - 1 rounded down to a
// page: 9223372036854771712); anything from 2^62 up is taken for it.
constexpr double kCgroupV1Unlimited = 4611686018427387904.0;
// Consumers named by a refusal.
constexpr std::size_t kNamedConsumers = 3;
// Consumers of the planner's memory model (plan/memory_model.cpp) that the admission
// treats apart: the runtime context, already made when the free memory is measured, and
// the host mirrors of the model state, made only by a checkpoint.
constexpr std::string_view kRuntimeContextPrefix = "runtime context";
constexpr std::string_view kCheckpointMirrorsPrefix = "host mirrors";

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<double> parse_number(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return std::nullopt;
  return static_cast<double>(v);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> lines(std::string_view s) {
  std::vector<std::string_view> out = split(s, '\n');
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

bool has_option(std::string_view options, std::string_view name) {
  for (std::string_view o : split(options, ','))
    if (o == name) return true;
  return false;
}

// "/a/b" relative to a mount whose hierarchy root is `root`: the part below it, or
// nullopt when the cgroup lies outside what is mounted.
std::optional<std::string> below(std::string_view path, std::string_view root) {
  if (root == "/") return std::string(path == "/" ? "" : path);
  if (path == root) return std::string();
  if (path.starts_with(root) && path.size() > root.size() && path[root.size()] == '/')
    return std::string(path.substr(root.size()));
  return std::nullopt;
}

// The tightest cgroup bound from the process's directory up to the mount point. The
// usage counts the page cache charged to the cgroup; its inactive file pages are
// reclaimed before the cgroup runs out, so they are not taken as used (the "working set"
// of container runtimes).
std::optional<MemoryLimit> cgroup_limit(const CgroupMemoryDir& dir) {
  const std::string limit_file = dir.version == 2 ? "memory.max" : "memory.limit_in_bytes";
  const std::string usage_file = dir.version == 2 ? "memory.current" : "memory.usage_in_bytes";
  const std::string inactive_key = dir.version == 2 ? "inactive_file" : "total_inactive_file";
  std::optional<MemoryLimit> best;
  std::string at = dir.path;
  for (;;) {
    const std::optional<double> limit = cgroup_limit_bytes(slurp(at + "/" + limit_file));
    if (limit) {
      const double usage = parse_number(slurp(at + "/" + usage_file)).value_or(0.0);
      const double inactive = memory_stat_bytes(slurp(at + "/memory.stat"), inactive_key).value_or(0.0);
      const double used = std::max(0.0, usage - inactive);
      const double left = std::max(0.0, *limit - used);
      if (!best || left < best->bytes)
        best = MemoryLimit{"cgroup v" + std::to_string(dir.version) + " " + at + " (" + limit_file + " " +
                               format_bytes(*limit) + " less " + format_bytes(used) +
                               " in use, reclaimable file cache not counted)",
                           left};
    }
    if (at.size() <= dir.root.size()) break;
    const auto slash = at.rfind('/');
    if (slash == std::string::npos || slash < dir.root.size()) break;
    at.resize(slash);
  }
  return best;
}

// RLIMIT_AS less the address space mapped now (/proc/self/statm's first field, in pages).
std::optional<MemoryLimit> address_space_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  const std::optional<double> pages = parse_number(slurp("/proc/self/statm"));
  const double mapped = pages.value_or(0.0) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  const double cap = static_cast<double>(limit.rlim_cur);
  return MemoryLimit{"the address-space limit (RLIMIT_AS, ulimit -v: " + format_bytes(cap) + " less " +
                         format_bytes(mapped) + " mapped)",
                     std::max(0.0, cap - mapped)};
}

void add_host(std::vector<MemoryConsumer>& out, std::string name, double bytes) {
  if (bytes > 0.0) out.push_back({std::move(name), MemorySpace::host, bytes});
}

std::string bytes_text(double bytes) {
  return format_bytes(bytes) + " (" + std::to_string(static_cast<uint64_t>(bytes)) + " bytes)";
}

// ---- The CPU engine's buffers ----

// Ids in one batch of `samples`: the bags' mean lengths (variable bags are drawn in
// [1, 2 hotness - 1], whose mean is the hotness).
double ids_per_batch(const ModelConfig& m, double samples) {
  double ids = 0.0;
  for (const TableConfig& t : m.tables) ids += static_cast<double>(t.hotness);
  return ids * samples;
}

// One Batch (data/batch.h) of `samples`.
double batch_bytes(const ModelConfig& m, double samples) {
  return samples * m.num_dense * kFloatBytes + samples * kFloatBytes +
         (samples * m.num_tables() + 1) * kIndexBytes + ids_per_batch(m, samples) * kIndexBytes;
}

// Parameters of an MLP (nn/mlp.h: Linear layers, weight out x in and bias out).
double mlp_parameters(int in, const std::vector<int>& widths) {
  double n = 0.0;
  for (int w : widths) {
    n += static_cast<double>(w) * in + w;
    in = w;
  }
  return n;
}

// An MLP's workspace for `b` samples (nn/mlp.cpp, reserve): every layer's output and two
// gradient buffers as wide as the widest layer.
double mlp_workspace(const std::vector<int>& widths, double b) {
  double n = 0.0;
  int widest = 0;
  for (int w : widths) {
    n += b * w;
    widest = std::max(widest, w);
  }
  return (n + 2.0 * b * widest) * kFloatBytes;
}

// Dense optimizer slots per parameter (optim/dense_optimizer.h, state(): Adagrad "sum",
// Adam "exp_avg" and "exp_avg_sq", SGD none).
int dense_slots(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adagrad: return 1;
    case OptimizerKind::adam: return 2;
    default: return 0;
  }
}

const char* sparse_state_name(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adagrad: return "Adagrad accumulator";
    case OptimizerKind::rowwise_adagrad: return "row-wise Adagrad accumulator";
    default: return "optimizer state";
  }
}

// Samples the evaluation scores: train.eval_samples, or the synthetic evaluation set;
// 0 when it is not known before the files are read.
double eval_samples(const RunConfig& cfg) {
  const int64_t cap = cfg.train.eval_samples;
  if (cfg.data.format == DataFormat::synthetic) {
    const int64_t set = cfg.data.synthetic.eval_samples;
    return static_cast<double>(cap > 0 ? std::min(cap, set) : set);
  }
  if (cfg.data.eval_path.empty()) return 0.0;
  return static_cast<double>(std::max<int64_t>(cap, 0));
}

}  // namespace

std::optional<MemoryLimit> AvailableMemory::binding() const {
  std::optional<MemoryLimit> best;
  for (const MemoryLimit& l : limits)
    if (!best || l.bytes < best->bytes) best = l;
  return best;
}

std::optional<double> meminfo_available_bytes(std::string_view meminfo) {
  constexpr std::string_view key = "MemAvailable:";
  for (std::string_view line : lines(meminfo)) {
    if (!line.starts_with(key)) continue;
    const std::optional<double> kib = parse_number(line.substr(key.size()));  // the kernel writes kB (KiB)
    if (kib) return *kib * kKiB;
  }
  return std::nullopt;
}

std::optional<double> memory_stat_bytes(std::string_view memory_stat, std::string_view key) {
  for (std::string_view line : lines(memory_stat))
    if (line.size() > key.size() && line.starts_with(key) && line[key.size()] == ' ')
      return parse_number(line.substr(key.size() + 1));
  return std::nullopt;
}

std::optional<double> cgroup_limit_bytes(std::string_view text) {
  const std::optional<double> v = parse_number(text);
  if (!v || *v >= kCgroupV1Unlimited) return std::nullopt;  // "max", empty, or v1's "no limit"
  return v;
}

std::optional<CgroupMemoryDir> cgroup_memory_dir(std::string_view proc_self_cgroup, std::string_view mountinfo) {
  // /proc/self/cgroup: "hierarchy-id:controllers:path"; v2 is "0::path".
  std::optional<std::string> v2_path, v1_path;
  for (std::string_view line : lines(proc_self_cgroup)) {
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view controllers = line.substr(first + 1, second - first - 1);
    const std::string path(line.substr(second + 1));
    if (line.substr(0, first) == "0" && controllers.empty()) v2_path = path;
    else if (has_option(controllers, "memory")) v1_path = path;
  }
  // /proc/self/mountinfo: "id parent major:minor root mount-point options [tags] - type source super-options".
  std::optional<CgroupMemoryDir> v2, v1;
  for (std::string_view line : lines(mountinfo)) {
    const auto dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    const std::vector<std::string_view> head = split(line.substr(0, dash), ' ');
    const std::vector<std::string_view> tail = split(line.substr(dash + 3), ' ');
    if (head.size() < 5 || tail.size() < 3) continue;
    const std::string_view root = head[3], mount_point = head[4], type = tail[0], options = tail[2];
    if (type == "cgroup2" && v2_path && !v2) {
      if (const auto rel = below(*v2_path, root)) v2 = CgroupMemoryDir{2, std::string(mount_point) + *rel, std::string(mount_point)};
    } else if (type == "cgroup" && v1_path && !v1 && has_option(options, "memory")) {
      if (const auto rel = below(*v1_path, root)) v1 = CgroupMemoryDir{1, std::string(mount_point) + *rel, std::string(mount_point)};
    }
  }
  // A controller is bound to one hierarchy: listed on a v1 line (a hybrid system), the
  // memory controller is not in the unified one.
  if (v1) return v1;
  return v2;
}

AvailableMemory available_host_memory() {
  AvailableMemory a;
  if (const auto avail = meminfo_available_bytes(slurp("/proc/meminfo")))
    a.limits.push_back({"MemAvailable (/proc/meminfo)", *avail});
  if (const auto dir = cgroup_memory_dir(slurp("/proc/self/cgroup"), slurp("/proc/self/mountinfo")))
    if (const auto limit = cgroup_limit(*dir)) a.limits.push_back(*limit);
  if (const auto as = address_space_limit()) a.limits.push_back(*as);
  return a;
}

std::vector<MemoryConsumer> cpu_engine_host_memory(const RunConfig& cfg) {
  const ModelConfig& m = cfg.model;
  std::vector<MemoryConsumer> out;
  const auto add = [&out](std::string name, double bytes) { add_host(out, std::move(name), bytes); };
  // ---- tables (nn/embedding_collection.cpp: weight rows x dim, accumulator rows x state) ----
  const int dim = m.embedding_dim;
  const double row_bytes = static_cast<double>(dim) * static_cast<double>(dtype_size(m.row_dtype));
  const double state_bytes = static_cast<double>(sparse_state_per_row(cfg.optim.sparse, dim)) * kFloatBytes;
  for (const TableConfig& t : m.tables) {
    const double rows = static_cast<double>(t.rows);
    add("table '" + t.name + "' rows (" + std::to_string(t.rows) + " x " + std::to_string(dim) + " " +
            std::string(dtype_name(m.row_dtype)) + ")",
        rows * row_bytes);
    add("table '" + t.name + "' " + sparse_state_name(cfg.optim.sparse), rows * state_bytes);
  }
  // ---- dense parameters (nn/linear.cpp, nn/cross_net.cpp), gradients, optimizer slots ----
  const int width = m.interaction_width();
  const bool cross = m.arch == Arch::dcnv2 && m.cross_layers > 0;
  double dense = mlp_parameters(m.num_dense, m.bottom_mlp) + mlp_parameters(width, m.top_mlp);
  if (cross) {
    const double w = width, r = m.cross_rank;
    dense += m.cross_layers * ((r > 0 ? 2.0 * w * r : w * w) + w);
  }
  add("dense parameters (" + std::to_string(static_cast<int64_t>(dense)) + " values)", dense * kFloatBytes);
  add("dense gradients", dense * kFloatBytes);
  add(std::string("dense optimizer state (") + (cfg.optim.dense == OptimizerKind::adam ? "Adam" : "Adagrad") + ")",
      dense_slots(cfg.optim.dense) * dense * kFloatBytes);
  // ---- per-batch workspaces, sized for the largest batch the model sees (model/dlrm.cpp,
  // reserve; predict reserves the same buffers at the evaluation batch) ----
  const bool evaluates = cfg.train.eval_at_end || cfg.train.eval_every > 0;
  const double train_b = static_cast<double>(cfg.train.batch_size);
  const double eval_b = evaluates ? static_cast<double>(cfg.train.eval_batch_size) : 0.0;
  const double b = std::max(train_b, eval_b);
  const double td = static_cast<double>(m.num_tables()) * dim;
  double workspace = (2.0 * b * td + b * width * (cross ? 3.0 : 2.0) + b + b * dim) * kFloatBytes;
  workspace += mlp_workspace(m.bottom_mlp, b) + mlp_workspace(m.top_mlp, b);
  if (cross) {  // nn/cross_net.cpp, reserve: x, z, V x per layer; two gradients, dz, d(V x)
    const double w = width, r = m.cross_rank, l = m.cross_layers;
    workspace += (2.0 * l * b * w + l * b * r + 3.0 * b * w + b * r) * kFloatBytes;
  }
  add("activations and gradients of a batch of " + std::to_string(static_cast<int64_t>(b)), workspace);
  // The embedding backward's sort keys, ping-pong buffer and run starts, per id of a
  // training batch (nn/embedding_collection.h).
  const double train_ids = ids_per_batch(m, train_b);
  add("embedding backward sort buffers", (3.0 * train_ids + m.num_tables()) * kSortKeyBytes);
  for (MemoryConsumer& c : data_host_memory(cfg)) out.push_back(std::move(c));
  return out;
}

std::vector<MemoryConsumer> data_host_memory(const RunConfig& cfg) {
  const ModelConfig& m = cfg.model;
  std::vector<MemoryConsumer> out;
  const auto add = [&out](std::string name, double bytes) { add_host(out, std::move(name), bytes); };
  const bool evaluates = cfg.train.eval_at_end || cfg.train.eval_every > 0;
  const double train_b = static_cast<double>(cfg.train.batch_size);
  const double eval_b = evaluates ? static_cast<double>(cfg.train.eval_batch_size) : 0.0;
  // ---- the pipeline's queue of prefetch_batches batches and the batch in training
  // (data/pipeline.h); evaluation reads its batches directly ----
  add("data pipeline (" + std::to_string(cfg.data.prefetch_batches + 1) + " batches of " +
          std::to_string(cfg.train.batch_size) + ")",
      (cfg.data.prefetch_batches + 1) * batch_bytes(m, train_b));
  if (evaluates) {
    // train/trainer.cpp, evaluate: one batch, and per sample its score, its label and the
    // exact AUC's sort order (train/auc.cpp).
    const double samples = eval_samples(cfg);
    add("evaluation batch and scores (" + std::to_string(static_cast<int64_t>(samples)) + " samples)",
        batch_bytes(m, eval_b) + eval_b * kFloatBytes + samples * (2.0 * kFloatBytes + kIndexBytes));
  }
  return out;
}

void admit_host_memory(const std::vector<MemoryConsumer>& consumers, const AvailableMemory& available,
                       const RunConfig& cfg) {
  const std::optional<MemoryLimit> limit = available.binding();
  if (!limit) return;
  double estimate = 0.0;
  for (const MemoryConsumer& c : consumers) estimate += c.bytes;
  const double margin = kHostFixedMarginBytes + kHostRelativeMargin * estimate;
  if (estimate + margin <= limit->bytes) return;
  std::vector<MemoryConsumer> largest = consumers;
  std::stable_sort(largest.begin(), largest.end(),
                   [](const MemoryConsumer& a, const MemoryConsumer& b) { return a.bytes > b.bytes; });
  if (largest.size() > kNamedConsumers) largest.resize(kNamedConsumers);
  std::string msg = cfg.source + ": the run needs about " + format_bytes(estimate + margin) + " of host memory (" +
                    format_bytes(estimate) + " estimated and " + format_bytes(margin) +
                    " kept free for what the estimate leaves out), and " + format_bytes(limit->bytes) +
                    " is available: " + limit->source;
  for (const MemoryLimit& other : available.limits)
    if (other.source != limit->source) msg += "; " + other.source + ": " + format_bytes(other.bytes);
  msg += ". Largest consumers: ";
  for (std::size_t i = 0; i < largest.size(); ++i) msg += (i ? ", " : "") + largest[i].name + " " + bytes_text(largest[i].bytes);
  msg += ". Nothing was allocated. To fit: make the tables smaller (model.table_rows)";
  if (cfg.model.row_dtype == DType::f32) msg += ", store the rows in 16 bits (model.row_dtype = \"bf16\")";
  if (cfg.optim.sparse == OptimizerKind::adagrad)
    msg += ", use row-wise Adagrad (optim.sparse = \"rowwise_adagrad\": one float of state per row)";
  msg += ", or prefetch fewer batches (data.prefetch_batches = " + std::to_string(cfg.data.prefetch_batches) + ")";
  throw OutOfMemoryError(msg);
}

MemoryEstimate gpu_engine_memory(const RunConfig& cfg, const std::string& device_name) {
  Hardware hw;  // the estimate takes only the name from it; the device's free memory is measured
  hw.name = device_name;
  MemoryEstimate e = estimate_memory(cfg.model, cfg.optim, recipe_of_model(cfg.model, cfg.train.batch_size, hw.name), hw);
  if (cfg.train.checkpoint_dir.empty())
    std::erase_if(e.consumers, [](const MemoryConsumer& c) {
      return c.space == MemorySpace::host && c.name.starts_with(kCheckpointMirrorsPrefix);
    });
  for (MemoryConsumer& c : data_host_memory(cfg)) e.consumers.push_back(std::move(c));
  return e;
}

void admit_device_memory(const MemoryEstimate& estimate, double device_free_bytes, const std::string& device_name,
                         const RunConfig& cfg) {
  double needed = 0.0;
  for (const MemoryConsumer& c : estimate.consumers)
    if (c.space == MemorySpace::device && !c.name.starts_with(kRuntimeContextPrefix)) needed += c.bytes;
  if (needed <= device_free_bytes) return;
  std::string msg = cfg.source + ": the run needs about " + format_bytes(needed) + " of device memory on " +
                    device_name + " (the planner's memory model of batch " + std::to_string(cfg.train.batch_size) +
                    "), and " + format_bytes(device_free_bytes) +
                    " is free (cudaMemGetInfo, the runtime context made). Largest consumers: ";
  const std::vector<MemoryConsumer> largest = estimate.largest_device_consumers(kNamedConsumers);
  for (std::size_t i = 0; i < largest.size(); ++i) msg += (i ? ", " : "") + largest[i].name + " " + bytes_text(largest[i].bytes);
  msg += ". Nothing was allocated. To fit: put tables in host memory (model.host_tables), store the rows in 16 bits "
         "(model.row_dtype = \"bf16\"), use a smaller batch (train.batch_size), or let `hetrec plan` choose";
  throw OutOfMemoryError(msg);
}

void admit_gpu_model(const RunConfig& cfg, const std::string& device_name, double device_free_bytes,
                     const Logger& log) {
  const MemoryEstimate e = gpu_engine_memory(cfg, device_name);
  log.debug("device memory: the GPU engine needs about " + format_bytes(e.device_bytes()) + "; " +
            format_bytes(device_free_bytes) + " free on " + device_name);
  admit_device_memory(e, device_free_bytes, device_name, cfg);
  std::vector<MemoryConsumer> host;
  for (const MemoryConsumer& c : e.consumers)
    if (c.space == MemorySpace::host) host.push_back(c);
  admit_host_memory(host, available_host_memory(), cfg);
}

void admit_cpu_model(const RunConfig& cfg, const Logger& log) {
  const std::vector<MemoryConsumer> consumers = cpu_engine_host_memory(cfg);
  const AvailableMemory available = available_host_memory();
  double estimate = 0.0;
  for (const MemoryConsumer& c : consumers) estimate += c.bytes;
  const std::optional<MemoryLimit> limit = available.binding();
  log.debug("host memory: the CPU engine needs about " + format_bytes(estimate) + "; available " +
            (limit ? format_bytes(limit->bytes) + " (" + limit->source + ")" : std::string("unknown")));
  admit_host_memory(consumers, available, cfg);
}

}  // namespace hetrec::train::train

#include "plan/memory_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "core/error.h"
#include "kernels/bce_loss_geometry.h"
#include "kernels/column_sum_geometry.h"
#include "kernels/embedding_backward_geometry.h"
#include "kernels/loss_scale_state.h"
#include "kernels/pooled_piece_types.h"
#include "kernels/step_scalars.h"
#include "tunable/cross_net/cross_backward_schedule.h"
#include "model/gpu/batch_buffer_sizes.h"
#include "model/gpu/gemm_workspace.h"
#include "model/gpu/step_output.h"
#include "optim/sparse_update.h"
#include "plan/device_memory.h"
#include "plan/gpu_model_layout.h"
#include "plan/sharded_layout.h"

namespace hetrec::inline plan {
namespace {

// Device copies of the step scalars and of the step output (model/gpu/gpu_dlrm.cpp).
constexpr std::size_t kStepScalarsBytes = sizeof(kernels::StepScalars);
constexpr std::size_t kStepOutputBytes = sizeof(gpu_model::StepOutput);
constexpr double kFloatBytes = sizeof(float);
constexpr double kIndexBytes = sizeof(int32_t);      // int32 ids and offsets (data/batch.h)
constexpr double kRowOffsetBytes = sizeof(int64_t);  // int64 first row of each table
constexpr double kPointerBytes = sizeof(void*);      // per-table row and state pointers (host placement)
constexpr double kHalfBytes = 2.0;                   // bf16 / fp16 operand copies
// fp16 dense compute: the device loss-scale state (model/gpu/gpu_dlrm.cpp).
constexpr std::size_t kLossScaleBytes = sizeof(kernels::LossScaleState);
// Several GPUs: the device lists of pooled pieces (model/gpu/sharded_embeddings.cpp).
constexpr double kGatherPieceBytes = sizeof(kernels::PooledPiece);
constexpr double kScatterPieceBytes = sizeof(kernels::PooledGradPiece);

// Collects consumers; every device tensor is also rounded to its allocator size class.
class Ledger {
 public:
  void device(const std::string& name, double bytes) {
    if (bytes <= 0.0) return;
    add(name, MemorySpace::device, bytes);
    const auto requested = static_cast<std::size_t>(bytes);
    rounding_ += static_cast<double>(caching_allocator_size_class(requested) - requested);
  }
  void host(const std::string& name, double bytes) {
    if (bytes > 0.0) add(name, MemorySpace::host, bytes);
  }
  double rounding() const { return rounding_; }
  std::vector<MemoryConsumer> take() { return std::move(consumers_); }

 private:
  void add(const std::string& name, MemorySpace space, double bytes) {
    for (MemoryConsumer& c : consumers_)
      if (c.name == name && c.space == space) {
        c.bytes += bytes;
        return;
      }
    consumers_.push_back({name, space, bytes});
  }
  std::vector<MemoryConsumer> consumers_;
  double rounding_ = 0.0;
};

std::string sparse_state_name(OptimizerKind kind, int dim) {
  switch (kind) {
    case OptimizerKind::adagrad: return "Adagrad, " + std::to_string(dim * 4) + " B per row";
    case OptimizerKind::rowwise_adagrad: return "row-wise Adagrad, 4 B per row";
    default: return "none";
  }
}

int dense_slots(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::adagrad: return 1;
    case OptimizerKind::adam: return 2;
    default: return 0;
  }
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

}  // namespace

std::string format_bytes(double bytes) {
  char buf[64];
  if (bytes >= kGiB) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  else if (bytes >= kMiB) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / kMiB);
  else std::snprintf(buf, sizeof buf, "%.1f KiB", bytes / 1024.0);
  return buf;
}

double MemoryEstimate::device_bytes() const {
  double s = 0.0;
  for (const MemoryConsumer& c : consumers) s += c.space == MemorySpace::device ? c.bytes : 0.0;
  return s;
}

double MemoryEstimate::host_bytes() const {
  double s = 0.0;
  for (const MemoryConsumer& c : consumers) s += c.space == MemorySpace::host ? c.bytes : 0.0;
  return s;
}

bool MemoryEstimate::fits(const Hardware& hw, double headroom) const {
  if (!(headroom >= 0.0 && headroom < 1.0))
    throw ConfigError("memory headroom: expected a fraction in [0, 1), got " + std::to_string(headroom));
  if (hw.name != hardware)
    throw InternalError("MemoryEstimate::fits: estimate for '" + hardware + "' checked against '" + hw.name + "'");
  return device_bytes() <= (1.0 - headroom) * usable_device_bytes(hw);
}

std::vector<MemoryConsumer> MemoryEstimate::largest_device_consumers(std::size_t count) const {
  std::vector<MemoryConsumer> out;
  for (const MemoryConsumer& c : consumers)
    if (c.space == MemorySpace::device) out.push_back(c);
  std::stable_sort(out.begin(), out.end(), [](const MemoryConsumer& a, const MemoryConsumer& b) { return a.bytes > b.bytes; });
  if (out.size() > count) out.resize(count);
  return out;
}

std::string MemoryEstimate::refusal(const Hardware& hw, double headroom) const {
  const double usable = usable_device_bytes(hw);
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.0f%%", headroom * 100.0);
  std::string s = (ranks > 1 ? "rank " + std::to_string(rank) + " of " + std::to_string(ranks) + " " : std::string()) +
                  "needs " + format_bytes(device_bytes()) + " of device memory on " + hw.name + ", which offers " +
                  format_bytes(usable) + " (" + format_bytes((1.0 - headroom) * usable) + " with " + pct +
                  " headroom); largest consumers: ";
  bool first = true;
  for (const MemoryConsumer& c : largest_device_consumers(kRefusalConsumers)) {
    s += (first ? "" : ", ") + c.name + " " + format_bytes(c.bytes);
    first = false;
  }
  return s;
}

namespace {

// Dense parameters with gradients and optimizer slots, their 16-bit copy, the loss-scale
// state, the cuBLASLt workspace and the step scalars (model/gpu/dense_parameters.cpp,
// gpu_dlrm.cpp, gemm/cublaslt_gemm.h): the same on every rank.
void dense_state(Ledger& m, const GpuModelLayout& g, const OptimConfig& optim, const Recipe& recipe) {
  const double flat = static_cast<double>(g.dense_flat_elements) * kFloatBytes;
  m.device("dense parameters (" + std::to_string(g.dense_elements) + " values)", flat);
  m.device("dense gradients", flat);
  for (int s = 0; s < dense_slots(optim.dense); ++s)
    m.device(std::string("dense optimizer state (") + (optim.dense == OptimizerKind::adam ? "Adam" : "Adagrad") + ")",
             flat);
  const bool half = sixteen_bit_dense(recipe.dense);
  if (half) m.device("dense parameters' 16-bit copy (what the 16-bit GEMMs read)", static_cast<double>(g.dense_flat_elements) * kHalfBytes);
  if (recipe.dense == DensePrecision::fp16) m.device("loss-scale state", kLossScaleBytes);
  // GpuModelOptions::overlap_weight_gradients is off by default: one workspace.
  m.device("cuBLASLt workspace",
           static_cast<double>(gpu_model::kGemmWorkspaceBytes) * gpu_model::gemm_workspaces(false));
  m.device("step scalars and output", kStepScalarsBytes);
  m.device("step scalars and output", kStepOutputBytes);
}

// Activations, gradients and per-batch workspaces of `b` samples (GpuDlrm::reserve,
// gpu_mlp.cpp, gpu_cross_net.cpp).
void activations(Ledger& m, const GpuModelLayout& g, const Recipe& recipe, int64_t batch) {
  const double b = static_cast<double>(batch);
  const bool half = sixteen_bit_dense(recipe.dense);
  const bool cross16 = g.cross_16bit(half);
  // Activations: a 16-bit layer feeding a 16-bit layer keeps its output only in 16 bits.
  for (std::size_t i = 0; i < g.bottom.size(); ++i)
    m.device("bottom MLP activations",
             b * g.bottom[i].out * (GpuModelLayout::mlp_output_16bit(g.bottom, i, half) ? kHalfBytes : kFloatBytes));
  for (int i = 0; i < 2; ++i)
    m.device("bottom MLP gradient buffers", b * GpuModelLayout::max_width(g.bottom) * kFloatBytes);
  for (std::size_t i = 0; i < g.top.size(); ++i)
    m.device("top MLP activations",
             b * g.top[i].out * (GpuModelLayout::mlp_output_16bit(g.top, i, half) ? kHalfBytes : kFloatBytes));
  for (int i = 0; i < 2; ++i) m.device("top MLP gradient buffers", b * GpuModelLayout::max_width(g.top) * kFloatBytes);
  // 16-bit GEMM operands (model/gpu/gpu_mlp.cpp): the input copy of each 16-bit layer that
  // rounds its own input, and one output-gradient copy per MLP as wide as its widest layer.
  for (const auto& [mlp, name, input16] :
       {std::tuple{&g.bottom, "bottom", false}, std::tuple{&g.top, "top", cross16}}) {
    if (!half) break;
    bool any = false;
    for (std::size_t i = 0; i < mlp->size(); ++i) {
      if (GpuModelLayout::mlp_rounds_input(*mlp, i, half, input16))
        m.device(std::string(name) + " MLP 16-bit operand copies (inputs, output gradient)",
                 b * (*mlp)[i].in * kHalfBytes);
      any = any || (*mlp)[i].sixteen_bit_eligible();
    }
    if (any)
      m.device(std::string(name) + " MLP 16-bit operand copies (inputs, output gradient)",
               b * GpuModelLayout::max_width(*mlp) * kHalfBytes);
  }
  const double n = static_cast<double>(g.interaction_width);
  if (g.cross_layers > 0) {
    // model/gpu/gpu_cross_net.cpp: per layer x_{l+1} (fp32; the last one left out when
    // the top MLP reads only its 16-bit copy), z_l and V x_l in the operand type.
    const double op = cross16 ? kHalfBytes : kFloatBytes;
    const std::string acts = std::string("cross net activations (x_l, z_l") + (g.cross_rank > 0 ? ", V x_l" : "") +
                             " of " + plural(g.cross_layers, "layer", "layers") + ")";
    for (int l = 0; l < g.cross_layers; ++l) {
      if (g.cross_layer_output_fp32(l, half)) m.device(acts, b * n * kFloatBytes);
      m.device(acts, b * n * op);
      if (g.cross_rank > 0) m.device(acts, b * g.cross_rank * op);
    }
    // dz and d(V x) in the operand type; the chain-term buffers in the operand type and,
    // past four layers, the fp32 accumulator of the direct part of dL/dx0
    // (tunable/cross_net/cross_backward_schedule.h).
    const int terms = kernels::cross_backward_term_buffers(g.cross_layers);
    const bool accumulator = kernels::cross_backward_uses_accumulator(g.cross_layers);
    const std::string grads = std::string("cross net backward buffers (dz") + (g.cross_rank > 0 ? ", d(V x)" : "") +
                              (terms > 0 ? ", chain terms" : "") + (accumulator ? ", dx0 accumulator" : "") + ")";
    m.device(grads, b * n * op);
    if (g.cross_rank > 0) m.device(grads, b * g.cross_rank * op);
    for (int i = 0; i < terms; ++i) m.device(grads, b * n * op);
    if (accumulator) m.device(grads, b * n * kFloatBytes);
    if (cross16) {
      // The 16-bit copies of x_0 .. x_L (x_L is the top MLP's input operand).
      const std::string copies = "cross net 16-bit operand copies";
      for (int l = 0; l <= g.cross_layers; ++l) m.device(copies, b * n * kHalfBytes);
    }
  }
  const double fd = static_cast<double>(g.feature_width);
  m.device("features [bottom output, pooled embeddings]", b * fd * kFloatBytes);
  m.device("feature gradient", b * fd * kFloatBytes);
  if (g.arch == Arch::dlrm) m.device("dot interaction output", b * n * kFloatBytes);
  m.device("logit gradient", b * kFloatBytes);
  m.device("top MLP input gradient", b * n * kFloatBytes);
  const int64_t widest = std::max<int64_t>({g.feature_width, g.interaction_width, GpuModelLayout::max_width(g.bottom),
                                            GpuModelLayout::max_width(g.top)});
  m.device("bias-gradient scratch", static_cast<double>(kernels::column_sum_workspace_bytes(batch, widest)) + 1.0);
  m.device("loss workspace", static_cast<double>(kernels::bce_loss_workspace_bytes(batch)));
}

MemoryEstimate finish_estimate(Ledger& m, const Hardware& hw, int rank, int ranks) {
  const double rounding = m.rounding();
  MemoryEstimate e;
  e.hardware = hw.name;
  e.rank = rank;
  e.ranks = ranks;
  e.usable_bytes = usable_device_bytes(hw);
  e.consumers = m.take();
  // Device consumers first: keep the host ones at the end.
  std::stable_partition(e.consumers.begin(), e.consumers.end(),
                        [](const MemoryConsumer& c) { return c.space == MemorySpace::device; });
  const auto first_host = std::find_if(e.consumers.begin(), e.consumers.end(),
                                       [](const MemoryConsumer& c) { return c.space == MemorySpace::host; });
  const auto at = e.consumers.insert(first_host, {"caching allocator size-class rounding", MemorySpace::device, rounding});
  e.consumers.insert(at + 1, {"runtime context and library modules", MemorySpace::device, kRuntimeContextBytes});
  return e;
}

const char* group_title(ShardGroupKind kind) {
  switch (kind) {
    case ShardGroupKind::whole: return "table/row-wise shards";
    case ShardGroupKind::column: return "column shards";
    case ShardGroupKind::replicated: return "replicated tables";
  }
  return "?";
}

// Device bytes of an exchange buffer of n elements of `bytes` each: at least one element
// (sharded_embeddings.cpp, elements()).
double exchange_buffer(double n, double bytes) { return std::max(n, 1.0) * bytes; }
double exchange_floats(double n) { return exchange_buffer(n, kFloatBytes); }

// One rank of the data-parallel GPU engine (model/gpu/gpu_dlrm.cpp with
// sharded_embeddings.cpp): its shards' rows and optimizer state group by group, the
// replicated dense state, its samples' activations, the group stagings of the global
// batch's bags, the exchange buffers and the piece lists.
MemoryEstimate rank_memory(const OptimConfig& optim, const Recipe& recipe,
                           const Hardware& hw, const GpuModelLayout& g, const RankShards& rs,
                           const ExchangeBytes& exchange, bool landing_buffers) {
  const double b = static_cast<double>(recipe.batch);
  const double local = static_cast<double>(rs.local_samples);
  const double row_size = static_cast<double>(dtype_size(recipe.row_dtype));
  const std::string dtype = std::string(dtype_name(recipe.row_dtype));
  Ledger m;
  double mirror_bytes = 0.0;
  // ---- persistent: each group is one GpuEmbeddings (gpu_embeddings.cpp) ----
  for (const ShardGroup& grp : rs.groups) {
    const double row_bytes = grp.width * row_size;
    const double state_bytes = static_cast<double>(sparse_state_per_row(optim.sparse, grp.width)) * kFloatBytes;
    int64_t hbm_rows = 0, host_rows = 0;
    int hbm_tables = 0;
    for (const ShardLoad& s : grp.shards) {
      if (s.host) host_rows += s.rows;
      else {
        hbm_rows += s.rows;
        ++hbm_tables;
      }
    }
    const std::string what = std::string(group_title(grp.kind)) + ", " + dtype + ", " + std::to_string(grp.width) +
                             " columns";
    m.device("embedding rows (" + plural(hbm_tables, "shard", "shards") + " in HBM, " + what + ")",
             static_cast<double>(hbm_rows) * row_bytes);
    m.device("embedding optimizer state (" + std::string(group_title(grp.kind)) + ", " +
                 sparse_state_name(optim.sparse, grp.width) + ")",
             static_cast<double>(hbm_rows) * state_bytes);
    const auto tables = static_cast<int>(grp.shards.size());
    m.device("embedding row offsets", (tables + 1) * kRowOffsetBytes);
    if (host_rows > 0) {
      m.device("per-table row and state pointers", tables * kPointerBytes);
      if (state_bytes > 0) m.device("per-table row and state pointers", tables * kPointerBytes);
    }
    m.device("embedding pooling flags", std::max(tables, 1));
    m.host("embedding rows in host memory (" + what + ")", static_cast<double>(host_rows) * row_bytes);
    m.host("embedding optimizer state in host memory", static_cast<double>(host_rows) * state_bytes);
    mirror_bytes += static_cast<double>(hbm_rows + host_rows) * (row_bytes + state_bytes);
  }
  dense_state(m, g, optim, recipe);

  // ---- per batch: the rank's samples (dense, labels; no bags) and every group's bags ----
  // Every staging's step buffers have landing buffers of the same size beside them
  // (BatchStaging::copy_ahead: the next batch, copied during the step).
  const std::string inputs = "batch inputs on the device (dense, labels, offsets, ids)";
  const std::string landing = "landing buffers of the next batch (copied ahead)";
  const auto twice = [&](const std::string& name, double bytes) {
    m.device(name, bytes);
    if (landing_buffers) m.device(landing, bytes);
  };
  // The rank's samples' dense features and labels: a staging without tables.
  twice(inputs, static_cast<double>(gpu_model::batch_dense_elements(rs.local_samples, g.num_dense)) * kFloatBytes);
  twice(inputs, static_cast<double>(gpu_model::batch_label_elements(rs.local_samples)) * kFloatBytes);
  twice(inputs, static_cast<double>(gpu_model::batch_offset_elements(rs.local_samples, 0)) * kIndexBytes);
  double staging_host = static_cast<double>(gpu_model::staging_bytes(rs.local_samples, 0, g.num_dense, 0));
  // A group's staging: bags of `samples` samples and no dense features; its id capacity.
  const auto staging = [&](const std::string& name, int64_t samples, int tables, double ids) {
    const int64_t capacity = gpu_model::grown_id_capacity(static_cast<int64_t>(ids));
    twice(name, static_cast<double>(gpu_model::batch_dense_elements(samples, 0)) * kFloatBytes);
    twice(name, static_cast<double>(gpu_model::batch_label_elements(samples)) * kFloatBytes);
    twice(name, static_cast<double>(gpu_model::batch_offset_elements(samples, tables)) * kIndexBytes);
    twice(name, static_cast<double>(capacity) * kIndexBytes);
    staging_host += static_cast<double>(gpu_model::staging_bytes(samples, capacity, 0, tables));
    return capacity;
  };
  std::vector<int64_t> capacities;
  for (const ShardGroup& grp : rs.groups) {
    const auto tables = static_cast<int>(grp.shards.size());
    const std::string name = std::string("shard bags of the global batch (") + group_title(grp.kind) + ")";
    capacities.push_back(staging(name, recipe.batch, tables, std::ceil(grp.update_ids())));
    if (grp.kind == ShardGroupKind::replicated)
      staging("replicated tables' bags of the rank's samples", rs.local_samples, tables, std::ceil(grp.lookup_ids()));
  }
  activations(m, g, recipe, rs.local_samples);

  // ---- exchange buffers (ShardedGpuEmbeddings::reserve) ----
  const auto r = static_cast<std::size_t>(rs.rank);
  const auto buffers = [&](const std::string& name, const std::vector<int64_t>& columns) {
    double all = 0.0;  // every rank's shards side by side
    for (int64_t c : columns) all += static_cast<double>(c);
    const double mine = static_cast<double>(columns[r]);
    const double e = static_cast<double>(dtype_size(recipe.exchange_dtype));
    m.device(name + " (pooled and arrived gradients, every sample)", exchange_buffer(b * mine, e));
    m.device(name + " (pooled and arrived gradients, every sample)", exchange_buffer(b * mine, e));
    m.device(name + " (received and gradients to send, its samples)", exchange_buffer(local * all, e));
    m.device(name + " (received and gradients to send, its samples)", exchange_buffer(local * all, e));
  };
  buffers("exchange buffers, table/row-wise", exchange.whole_columns);
  buffers("exchange buffers, column-wise", exchange.column_columns);
  const double replicated = static_cast<double>(exchange.replicated_columns);
  const std::string replica = "exchange buffers, replicated";
  m.device(replica + " (pooled and gradients to send, its samples)", exchange_floats(local * replicated));
  m.device(replica + " (pooled and gradients to send, its samples)", exchange_floats(local * replicated));
  m.device(replica + " (gathered gradients, every sample)", exchange_floats(b * replicated));
  // One gather piece and one scatter piece per pooled piece, and each slot's first piece.
  m.device("pooled piece lists", static_cast<double>(exchange.pieces) * kGatherPieceBytes);
  m.device("pooled piece lists", static_cast<double>(exchange.pieces) * kScatterPieceBytes);
  m.device("pooled piece lists", (g.num_tables + 1) * kIndexBytes);

  // ---- each group's fused-backward workspace (embedding_bag_backward.cu) ----
  for (std::size_t k = 0; k < rs.groups.size(); ++k)
    m.device("embedding backward workspace (sort, segments, chunk sums)",
             static_cast<double>(kernels::embedding_backward_workspace_bytes(capacities[k], rs.groups[k].width)));

  // ---- host ----
  const double flat = static_cast<double>(g.dense_flat_elements) * kFloatBytes;
  m.host("page-locked batch staging", staging_host);
  m.host("host mirrors of the model state (created at the first checkpoint)",
         mirror_bytes + flat * (1 + dense_slots(optim.dense)));
  return finish_estimate(m, hw, rs.rank, recipe.gpus);
}

// The single-device engine (model/gpu/gpu_dlrm.cpp without shards).
MemoryEstimate single_memory(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                             const Hardware& hw, bool landing_buffers) {
  const GpuModelLayout g = gpu_model_layout(model, recipe);
  const double b = static_cast<double>(recipe.batch);
  const double row_bytes = static_cast<double>(g.dim) * static_cast<double>(dtype_size(recipe.row_dtype));
  const double state_bytes = static_cast<double>(sparse_state_per_row(optim.sparse, g.dim)) * kFloatBytes;
  Ledger m;

  // ---- persistent: tables, dense parameters, library workspace (model/gpu/gpu_embeddings.cpp,
  // dense_parameters.cpp, gemm/cublaslt_gemm.h) ----
  int64_t hbm_rows = 0, host_rows = 0;
  int hbm_tables = 0;
  for (std::size_t t = 0; t < model.tables.size(); ++t) {
    if (recipe.placement[t] == TablePlacement::hbm) {
      hbm_rows += model.tables[t].rows;
      ++hbm_tables;
    } else {
      host_rows += model.tables[t].rows;
    }
  }
  const std::string rows_name = std::string(dtype_name(recipe.row_dtype)) + ", dim " + std::to_string(g.dim);
  m.device("embedding rows (" + plural(hbm_tables, "table", "tables") + " in HBM, " + rows_name + ")",
           static_cast<double>(hbm_rows) * row_bytes);
  m.device("embedding optimizer state (" + sparse_state_name(optim.sparse, g.dim) + ")",
           static_cast<double>(hbm_rows) * state_bytes);
  m.device("embedding row offsets", (g.num_tables + 1) * kRowOffsetBytes);
  if (host_rows > 0) {
    // With any table in host memory the kernels reach every table through pointers.
    m.device("per-table row and state pointers", g.num_tables * kPointerBytes);
    if (state_bytes > 0) m.device("per-table row and state pointers", g.num_tables * kPointerBytes);
  }
  m.device("embedding pooling flags", std::max(g.num_tables, 1));
  dense_state(m, g, optim, recipe);

  // ---- per batch (model/gpu/batch_staging.cpp and GpuDlrm::reserve) ----
  const auto ids = static_cast<int64_t>(std::ceil(b * g.ids_per_sample));
  const int64_t id_capacity = gpu_model::grown_id_capacity(ids);
  // The step buffers and, beside them, the landing buffers of the next batch
  // (BatchStaging::copy_ahead).
  const std::string inputs = "batch inputs on the device (dense, labels, offsets, ids)";
  for (const std::string& name : {inputs, std::string("landing buffers of the next batch (copied ahead)")}) {
    if (name != inputs && !landing_buffers) continue;
    m.device(name, static_cast<double>(gpu_model::batch_dense_elements(recipe.batch, g.num_dense)) * kFloatBytes);
    m.device(name, static_cast<double>(gpu_model::batch_label_elements(recipe.batch)) * kFloatBytes);
    m.device(name, static_cast<double>(gpu_model::batch_offset_elements(recipe.batch, g.num_tables)) * kIndexBytes);
    m.device(name, static_cast<double>(id_capacity) * kIndexBytes);
  }
  activations(m, g, recipe, recipe.batch);
  m.device("embedding backward workspace (sort, segments, chunk sums)",
           static_cast<double>(kernels::embedding_backward_workspace_bytes(id_capacity, g.dim)));

  // ---- host: page-locked batch staging (batch_staging.cpp, staging_bytes), tables placed
  // in host memory, and the host mirrors state() creates for checkpoints ----
  const double flat = static_cast<double>(g.dense_flat_elements) * kFloatBytes;
  m.host("page-locked batch staging",
         static_cast<double>(gpu_model::staging_bytes(recipe.batch, id_capacity, g.num_dense, g.num_tables)));
  m.host("embedding rows in host memory (" + rows_name + ")", static_cast<double>(host_rows) * row_bytes);
  m.host("embedding optimizer state in host memory", static_cast<double>(host_rows) * state_bytes);
  m.host("host mirrors of the model state (created at the first checkpoint)",
         static_cast<double>(hbm_rows + host_rows) * (row_bytes + state_bytes) + flat * (1 + dense_slots(optim.dense)));
  return finish_estimate(m, hw, 0, 1);
}

}  // namespace

std::vector<MemoryEstimate> estimate_rank_memory(const ModelConfig& model, const OptimConfig& optim,
                                                 const Recipe& recipe, const Hardware& hw, const IdDistribution& ids,
                                                 bool landing_buffers) {
  validate_recipe(recipe, model);
  if (recipe.gpus == 1) return {single_memory(model, optim, recipe, hw, landing_buffers)};
  const GpuModelLayout g = gpu_model_layout(model, recipe);
  const ExchangeBytes exchange = exchange_bytes(model, recipe);
  std::vector<MemoryEstimate> out;
  for (const RankShards& rs : rank_shards(model, recipe, ids))
    out.push_back(rank_memory(optim, recipe, hw, g, rs, exchange, landing_buffers));
  return out;
}

MemoryEstimate estimate_memory(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                               const Hardware& hw, const IdDistribution& ids, bool landing_buffers) {
  std::vector<MemoryEstimate> ranks = estimate_rank_memory(model, optim, recipe, hw, ids, landing_buffers);
  std::size_t largest = 0;
  for (std::size_t r = 1; r < ranks.size(); ++r)
    if (ranks[r].device_bytes() > ranks[largest].device_bytes()) largest = r;
  return std::move(ranks[largest]);
}

}  // namespace hetrec::plan::plan

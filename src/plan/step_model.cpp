#include "plan/step_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "kernels/bce_loss_geometry.h"
#include "kernels/column_sum_geometry.h"
#include "kernels/embedding_backward_geometry.h"
#include "kernels/radix_sort_geometry.h"
#include "tunable/cross_net/cross_backward_schedule.h"
#include "model/gpu/batch_buffer_sizes.h"
#include "optim/sparse_update.h"
#include "gemm_perf/gemm_problem.h"
#include "plan/comm_model.h"
#include "plan/gpu_model_layout.h"
#include "plan/sharded_layout.h"
#include "plan/step_work_builder.h"
#include "tunable/cross_net/cross_net_cost.h"
#include "tunable/dot_interaction/dot_backward_cost.h"
#include "tunable/dot_interaction/dot_interaction_cost.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tunable/sparse_update/sparse_update_cost.h"

namespace hetrec::inline plan {
namespace {

using namespace step_model_detail;

constexpr double kIndexBytes = 4.0;  // int32 ids, offsets, sort keys and values
// Copies and memsets the step enqueues around its kernels: the step scalars in, the
// output cleared, the loss and the skip flag out (GpuDlrm::enqueue_step).
constexpr int kStepCopies = 4;

// Bytes each element-wise pass reads and writes per element (from the kernels' code; the
// passes' bias-gradient partial sums are small):
constexpr double kColumnSumBytes = 1 * kFloatBytes;     // dz in (column_sum)
constexpr double kLossBytes = 3 * kFloatBytes;          // logit, label in; gradient out
// fp16 dense compute: the loss-scale pass over the dense gradients and the embedding part
// of the feature gradient reads and writes each element (unscale and finite check,
// kernels/loss_scale.cu), plus the scale update's launch.
constexpr double kUnscaleBytes = 2 * kFloatBytes;
// The sort's bytes per pair and pass, and the backward's bookkeeping bytes per id of its
// capacity: the kernels' own counts (kernels/radix_sort_geometry.h,
// kernels/embedding_backward_geometry.h).
constexpr double kSortPassBytes = static_cast<double>(kernels::kSortPassBytesPerPair);
constexpr double kSegmentBookkeepingBytes = static_cast<double>(kernels::kEmbeddingBackwardBookkeepingBytesPerId);
// Several GPUs: the pooled pieces' gather into X and its transpose (kernels/
// pooled_pieces.cu) read and write each piece element once, one launch each: an fp32
// element of X and one of the piece, which is fp32 or of the exchange's type.
constexpr double kPieceCopyBytes = 2 * kFloatBytes;
// The small all-reduces of every data-parallel step (model/gpu/sharded_embedding_stage.cpp):
// the skip flag (int32), the loss (double) and, with fp16 dense compute, the overflow flag
// (int32).
constexpr double kSkipFlagBytes = 4.0, kLossBytesOnLink = 8.0, kOverflowFlagBytes = 4.0;
static_assert(kDefaultCollectiveLatencyUs == kAssumedPeerStepLatencyS * 1e6,
              "the latency factor starts at the communication model's assumption");

// GpuMlp::forward: per layer its GEMM with the bias (and ReLU) fused; a 16-bit layer
// rounds its input first unless the previous layer (or, for the first, the caller:
// input_16bit) hands it over in 16 bits, and writes its output in 16 bits when the next
// layer is 16-bit too.
void mlp_forward(WorkBuilder& w, StepPhase phase, const std::string& name, const std::vector<LinearShape>& layers,
                 int64_t b, bool input_16bit) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LinearShape& l = layers[i];
    const std::string layer = name + "." + std::to_string(i);
    const bool half = w.sixteen_bit() && l.sixteen_bit_eligible();
    if (GpuModelLayout::mlp_rounds_input(layers, i, w.sixteen_bit(), input_16bit))
      w.operand_copy(phase, static_cast<double>(b) * l.in, layer + " input");
    w.gemm(phase, layer, w.request("forward", b, l.out, l.in, false, true, l.relu ? GemmEpilogue::bias_relu : GemmEpilogue::bias,
                                   half, GpuModelLayout::mlp_output_16bit(layers, i, w.sixteen_bit())));
  }
}

// GpuMlp::backward: per layer from the last, the ReLU mask with the bias sum (reading the
// output as the forward wrote it, writing dz in the layer's operand type; or the bias sum
// alone, then a 16-bit copy of dz), the weight gradient, and the input gradient unless it
// is the first layer and nobody wants dx. With model.relu_backward = "mask_pass" a 16-bit
// ReLU layer feeding a 16-bit layer has no such pass: its successor's input-gradient GEMM
// writes dz in 16 bits, a mask pass reads it and the layer's 16-bit output and rewrites it,
// and the weight-gradient GEMM sums the bias gradient. The epilogue modes (DRELU_BGRAD,
// DRELU) are priced as the pass: the library runs those GEMMs well below its plain rate
// (docs/planner.md).
void mlp_backward(WorkBuilder& w, StepPhase phase, const std::string& name, const std::vector<LinearShape>& layers,
                  int64_t b, bool want_dx, ReluBackward mode) {
  const double bd = static_cast<double>(b);
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
    const std::size_t li = static_cast<std::size_t>(i);
    const LinearShape& l = layers[li];
    const std::string layer = name + "." + std::to_string(i);
    const bool half = w.sixteen_bit() && l.sixteen_bit_eligible();
    if (GpuModelLayout::mlp_mask_pass(layers, li, w.sixteen_bit(), mode)) {
      w.hbm(phase, StepFactor::elementwise, bd * l.out * 3 * kHalfBytes, layer + " ReLU mask pass");  // dz, y in; dz out
      w.launches(phase, 1);
    } else if (l.relu) {
      const double bytes = kFloatBytes + WorkBuilder::operand_bytes(GpuModelLayout::mlp_output_16bit(layers, li, w.sixteen_bit())) +
                           WorkBuilder::operand_bytes(half);  // dy, y in; dz out
      w.hbm(phase, StepFactor::elementwise, bd * l.out * bytes, layer + " ReLU backward + bias sum");
      if (half) w.rounded_in_pass(phase, bd * l.out, layer + " ReLU backward");
      w.launches(phase, kernels::kColumnSumLaunches);
    } else {
      w.hbm(phase, StepFactor::elementwise, bd * l.out * kColumnSumBytes, layer + " bias sum");
      w.launches(phase, kernels::kColumnSumLaunches);
    }
    if (half && !l.relu) w.operand_copy(phase, bd * l.out, layer + " output gradient");
    w.gemm(phase, layer, w.request("wgrad", l.out, l.in, b, true, false, GemmEpilogue::none, half));
    const bool dz_16bit_below = i > 0 && GpuModelLayout::mlp_mask_pass(layers, li - 1, w.sixteen_bit(), mode);
    if (i > 0 || want_dx)
      w.gemm(phase, layer, w.request("dgrad", b, l.in, l.out, false, false, GemmEpilogue::none, half, dz_16bit_below));
  }
}

// GpuCrossNet::forward: X rounded once (16-bit); per layer the GEMMs (16-bit outputs in
// 16-bit mode), then x_{l+1} = x0 * z + x_l in fp32 and its 16-bit copy in one pass; with
// the 16-bit residual stream that pass reads x0 and x_l in 16 bits
// (tunable/cross_net/cross_net_stream16.cu) and writes x_{l+1} in fp32 only where it is kept so.
void cross_forward(WorkBuilder& w, const GpuModelLayout& g, int64_t b) {
  const int64_t n = g.interaction_width, r = g.cross_rank;
  const auto phase = StepPhase::interaction_fwd;
  const bool half = g.cross_16bit(w.sixteen_bit());
  const double bd = static_cast<double>(b);
  const double op = WorkBuilder::operand_bytes(half);
  if (half) w.operand_copy(phase, bd * n, "cross_net X", StepFactor::cross_forward);
  for (int l = 0; l < g.cross_layers; ++l) {
    const std::string layer = "cross_net." + std::to_string(l);
    for (const LayerGemm& gemm : cross_layer_forward_gemms(b, n, r, half, w.sixteen(), w.tf32())) w.gemm(phase, layer, gemm);
    const bool fp32_out = g.cross_layer_output_fp32(l, w.sixteen_bit());
    const bool stream16 = half && g.cross_residual_16bit;
    const double inputs = stream16 ? 2 * kHalfBytes : 2 * kFloatBytes;  // x0 and x_l
    const double bytes = inputs + op + (fp32_out ? kFloatBytes : 0.0) + (half ? kHalfBytes : 0.0);
    // The 16-bit stream's pass is a kernel of its own; the tuned family is the fp32 stream's.
    w.hbm(phase, StepFactor::cross_forward, bd * n * bytes, layer + " x0 * z + x (and its 16-bit copy)",
          stream16 ? "" : tune::kCrossForwardKernel);
    if (half) w.rounded_in_pass(phase, bd * n, layer + " x0 * z + x");
    w.launches(phase, 1);
  }
}

// GpuCrossNet::backward: the passes of tunable/cross_net/cross_backward_schedule.h from the
// last layer (g, x0 and the terms of the layers above read, dz written with the bias sum;
// the bottom pass reads every z and writes dx0), each followed by its layer's GEMMs: the
// chain term goes to its buffer in the operand type, the bottom layer's is added to dx0.
void cross_backward(WorkBuilder& w, const GpuModelLayout& g, int64_t b) {
  const int64_t n = g.interaction_width, r = g.cross_rank;
  const double elems = static_cast<double>(b) * n;
  const auto phase = StepPhase::interaction_bwd;
  const bool half = g.cross_16bit(w.sixteen_bit());
  const double op = WorkBuilder::operand_bytes(half);
  for (const kernels::CrossBackwardPass& pass : kernels::cross_backward_schedule(g.cross_layers)) {
    const std::string layer = "cross_net." + std::to_string(pass.layer);
    const double bytes = kernels::cross_backward_pass_traffic(pass).bytes(op);
    w.hbm(phase, StepFactor::cross_backward, elems * bytes,
          layer + " dz = (g + terms) x0, bias sum" + (pass.bottom ? ", dx0" : pass.checkpoint ? ", checkpoint" : ""),
          tune::kCrossBackwardKernel);
    if (half) w.rounded_in_pass(phase, elems, layer + " dz");
    w.launches(phase, kernels::kColumnSumLaunches);
    for (const LayerGemm& gemm : cross_layer_backward_gemms(b, n, r, half, w.sixteen(), w.tf32(), pass.bottom))
      w.gemm(phase, layer, gemm);
  }
}

// The DLRM dot interaction (tunable/dot_interaction/dot_interaction.h): forward reads X and writes the
// pairwise dots; backward reads X and the output gradient and writes X's gradient.
void dot_interaction(WorkBuilder& w, const GpuModelLayout& g, int64_t b) {
  const double bd = static_cast<double>(b);
  const double x = bd * g.feature_width * kFloatBytes, out = bd * g.interaction_width * kFloatBytes;
  w.hbm(StepPhase::interaction_fwd, StepFactor::interaction, x + out, "dot interaction forward", tune::kDotForwardKernel);
  w.launches(StepPhase::interaction_fwd, 1);
  w.hbm(StepPhase::interaction_bwd, StepFactor::interaction, 2 * x + out, "dot interaction backward",
        tune::kDotBackwardKernel);
  w.launches(StepPhase::interaction_bwd, 1);
}

// One group of shards (one GpuEmbeddings: model/gpu/gpu_embeddings.h) on one rank: its
// lookup (tunable/embedding_forward/embedding_bag_forward.cu), then its sort and fused sparse update
// (embedding_bag_backward.cu). With one GPU the group is every table for the whole batch.
void embedding_group(WorkBuilder& w, const OptimConfig& optim, const Recipe& recipe, const ShardGroup& g,
                     const std::string& label) {
  const double row_bytes = static_cast<double>(g.width) * static_cast<double>(dtype_size(recipe.row_dtype));
  const double state_bytes = static_cast<double>(sparse_state_per_row(optim.sparse, g.width)) * kFloatBytes;
  // The pooled vectors the lookup writes and the gradients the update reads: fp32, or a
  // routed group's under a bf16 exchange (model/gpu/sharded_embeddings.h).
  const bool exchanged = recipe.gpus > 1 && g.kind != ShardGroupKind::replicated;
  const DType pooled = exchanged ? recipe.exchange_dtype : DType::f32;
  const double grad_row_bytes = g.width * static_cast<double>(dtype_size(pooled));
  const double tables = static_cast<double>(g.shards.size());
  double lookups = 0.0, occurrences = 0.0, hbm_gather = 0.0, hbm_rows = 0.0, host_read = 0.0, host_update = 0.0,
         host_span = 0.0, distinct_rows = 0.0;
  int64_t total_rows = 0;
  for (const ShardLoad& s : g.shards) {
    lookups += s.lookup_ids;
    occurrences += s.update_ids;
    distinct_rows += s.update_unique;
    total_rows += s.rows;
    // The lookup issues one row read per id; duplicates served from L2 take the same
    // issue slots (measured: the H200 lookup runs at the rate of all row reads).
    hbm_gather += s.lookup_ids * row_bytes;
    if (!s.host) {
      hbm_rows += s.update_unique * 2 * (row_bytes + state_bytes);  // read and write each distinct row once
    } else {
      host_read += s.lookup_unique * row_bytes;                       // first touch crosses the link
      host_update += s.update_unique * (row_bytes + state_bytes);     // read, then written back (full duplex)
      host_span += static_cast<double>(s.rows) * (row_bytes + state_bytes);
    }
  }
  const double lb = g.lookup_samples, ub = g.update_samples;
  const auto fwd = StepPhase::embedding_fwd;
  const std::string lookup = tune::kEmbeddingForwardKernel, update = tune::kSparseUpdateKernel;
  w.hbm(fwd, StepFactor::embedding_forward, hbm_gather, label + "row reads (every id)", lookup);
  w.row_reads(fwd, hbm_gather / row_bytes, label + "per-read work of every id's row", lookup);
  w.hbm(fwd, StepFactor::embedding_forward, (lookups + lb * tables) * kIndexBytes, label + "ids and offsets", lookup);
  w.hbm(fwd, StepFactor::embedding_forward, lb * tables * grad_row_bytes,
        label + "pooled output (" + std::string(dtype_name(pooled)) + ")", lookup);
  w.host_table_rows(fwd, host_read, host_span, row_bytes, label + "distinct rows of host tables over the link");
  w.launches(fwd, 1);

  const auto bwd = StepPhase::embedding_bwd_update;
  // The id capacity the staging grows to for a batch of the expected occurrences
  // (model/gpu/batch_buffer_sizes.h, grown_id_capacity, on a mean that need not be whole).
  const double capacity = std::floor(occurrences * gpu_model::kIdCapacityGrowth) + 1.0;
  const int passes = kernels::radix_sort_passes(kernels::embedding_sort_key_bits(total_rows));
  w.hbm(bwd, StepFactor::embedding_backward, occurrences * 3 * kIndexBytes + ub * tables * kIndexBytes,
        label + "sort keys (ids, offsets in; keys, bags out)");
  w.hbm(bwd, StepFactor::embedding_backward, occurrences * passes * kSortPassBytes,
        label + "radix sort (" + std::to_string(passes) + " passes)");
  w.hbm(bwd, StepFactor::embedding_backward, capacity * kSegmentBookkeepingBytes, label + "segments and chunks");
  // The fused update (tunable/sparse_update/): the occurrences' gradients in, each distinct
  // row and its state read and written, and the per-row work.
  w.hbm(bwd, StepFactor::embedding_backward, occurrences * (kIndexBytes + grad_row_bytes),
        label + "pooled-gradient row of every occurrence", update);
  w.hbm(bwd, StepFactor::embedding_backward, hbm_rows, label + "distinct rows and optimizer state, read and written",
        update);
  w.row_updates(bwd, distinct_rows, label + "per-row update work of the distinct rows", update);
  w.host_table_rows(bwd, host_update, host_span, row_bytes,
                    label + "distinct rows of host tables, read and written over the link");
  // fp16 rows: the fused update rounds each distinct row's new values to fp16.
  if (recipe.row_dtype == DType::f16) w.fp16_rounding(bwd, distinct_rows * g.width, label + "updated fp16 rows");
  w.launches(bwd, kernels::embedding_backward_launches(static_cast<int64_t>(capacity), total_rows));
}

const char* group_name(ShardGroupKind kind) {
  switch (kind) {
    case ShardGroupKind::whole: return "table/row-wise shards";
    case ShardGroupKind::column: return "column shards";
    case ShardGroupKind::replicated: return "replicated tables";
  }
  return "?";
}

std::string rank_label(int rank) { return "rank " + std::to_string(rank) + " "; }

// Several GPUs: each rank's upload (model/gpu/gpu_dlrm.cpp stage: its samples' dense
// features and labels; every group's bags over the global batch, and the replicated
// tables' bags of its own samples too) and embedding work, then the pooled exchanges,
// their gather into X and the gradients' way back. What a sharding changes; the dense
// gradients' all-reduce is added by step_work.
void sharded_terms(WorkBuilder& w, const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                   const GpuModelLayout& g, const IdDistribution& ids) {
  const double bd = static_cast<double>(recipe.batch);
  for (const RankShards& rs : rank_shards(model, recipe, ids)) {
    w.set_rank(rs.rank);
    const double local = static_cast<double>(rs.local_samples);
    double bytes = local * (g.num_dense + 1) * kFloatBytes + kIndexBytes;  // dense, labels, one offset
    for (const ShardGroup& grp : rs.groups) {
      const double tables = static_cast<double>(grp.shards.size());
      bytes += (bd * tables + 1 + std::ceil(grp.update_ids())) * kIndexBytes;
      if (grp.kind == ShardGroupKind::replicated)
        bytes += (local * tables + 1 + std::ceil(grp.lookup_ids())) * kIndexBytes;
    }
    const std::string label = rank_label(rs.rank);
    w.host(StepPhase::upload, StepFactor::upload, bytes,
           label + "dense and labels of its samples, its shards' bags of the global batch");
    for (const ShardGroup& grp : rs.groups) embedding_group(w, optim, recipe, grp, label + group_name(grp.kind) + ": ");
  }
  w.set_rank(kAllRanks);
  const ExchangeBytes e = exchange_bytes(model, recipe);
  const auto gx = StepPhase::embedding_grad_exchange;
  const double b_local = std::ceil(bd / recipe.gpus);
  // Routed pieces arrive in the exchange's type; replicated ones are fp32.
  const double exchanged = static_cast<double>(dtype_size(recipe.exchange_dtype));
  const double replicated = static_cast<double>(e.replicated_columns);
  const double piece_bytes = b_local * ((static_cast<double>(e.piece_columns) - replicated) *
                                            (kFloatBytes + exchanged) +
                                        replicated * kPieceCopyBytes);
  const auto ex = StepPhase::embedding_exchange;
  w.collective(ex, all_to_all_v_cost(e.whole), "all-to-all of table/row-wise pooled vectors");
  w.collective(ex, all_to_all_v_cost(e.column), "all-to-all of column-wise pooled slices");
  w.hbm(ex, StepFactor::elementwise, piece_bytes, "pooled pieces gathered into X");
  w.launches(ex, 1);
  w.hbm(gx, StepFactor::elementwise, piece_bytes, "X's gradient scattered into pieces");
  w.launches(gx, 1);
  // The reverse exchanges move the same bytes the other way: the busiest rank's largest
  // direction is the same.
  w.collective(gx, all_to_all_v_cost(e.whole), "all-to-all of table/row-wise pooled gradients");
  w.collective(gx, all_to_all_v_cost(e.column), "all-to-all of column-wise pooled gradients");
  w.collective(gx, all_to_all_v_cost(e.replicated), "all-gather of replicated tables' pooled gradients");
}

double dense_optimizer_bytes_per_element(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd: return 3 * kFloatBytes;   // param, grad in; param out
    case OptimizerKind::adagrad: return 5 * kFloatBytes;  // param, grad, sum in; param, sum out
    case OptimizerKind::adam: return 7 * kFloatBytes;  // param, grad, m, v in; param, m, v out
    default: return 0.0;
  }
}

}  // namespace

std::string_view step_phase_name(StepPhase p) {
  switch (p) {
    case StepPhase::upload: return "upload";
    case StepPhase::bottom_mlp_fwd: return "bottom_mlp_fwd";
    case StepPhase::embedding_fwd: return "embedding_fwd";
    case StepPhase::embedding_exchange: return "embedding_exchange";
    case StepPhase::interaction_fwd: return "interaction_fwd";
    case StepPhase::top_mlp_fwd: return "top_mlp_fwd";
    case StepPhase::loss: return "loss";
    case StepPhase::top_mlp_bwd: return "top_mlp_bwd";
    case StepPhase::interaction_bwd: return "interaction_bwd";
    case StepPhase::bottom_mlp_bwd: return "bottom_mlp_bwd";
    case StepPhase::dense_all_reduce: return "dense_all_reduce";
    case StepPhase::embedding_grad_exchange: return "embedding_grad_exchange";
    case StepPhase::embedding_bwd_update: return "embedding_bwd_update";
    case StepPhase::dense_optimizer: return "dense_optimizer";
    case StepPhase::overhead: return "overhead";
  }
  return "?";
}

bool communication_phase(StepPhase p) {
  return p == StepPhase::embedding_exchange || p == StepPhase::dense_all_reduce ||
         p == StepPhase::embedding_grad_exchange;
}

std::optional<StepPhase> parse_step_phase(std::string_view name) {
  for (StepPhase p : kAllStepPhases)
    if (step_phase_name(p) == name) return p;
  return std::nullopt;
}

StepWork step_work(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe, const GemmSelector& gemm,
                   const IdDistribution& ids) {
  validate_recipe(recipe, model);
  const std::string unsupported = gpu_sharding_unsupported(recipe, model, optim);
  if (!unsupported.empty()) throw ConfigError("recipe for '" + recipe.hardware + "': " + unsupported);
  const GpuModelLayout g = gpu_model_layout(model, recipe);
  const bool several = recipe.gpus > 1;
  // The dense phases run on this rank's share; the largest share is the slowest.
  const int64_t b = several ? (recipe.batch + recipe.gpus - 1) / recipe.gpus : recipe.batch;
  const double bd = static_cast<double>(b);
  const GemmDispatch dispatch(gemm);  // library GEMMs under the model's choice, as the engine's default
  WorkBuilder w(gemm.hardware(), &dispatch, recipe);

  if (several) {
    sharded_terms(w, model, optim, recipe, g, ids);
  } else {
    const double upload_bytes = bd * (g.num_dense + 1) * kFloatBytes + (bd * g.num_tables + 1) * kIndexBytes +
                                std::ceil(bd * g.ids_per_sample) * kIndexBytes;
    w.host(StepPhase::upload, StepFactor::upload, upload_bytes, "dense, labels, offsets and ids");
  }

  mlp_forward(w, StepPhase::bottom_mlp_fwd, "bottom_mlp", g.bottom, b, /*input_16bit=*/false);
  if (!several) embedding_group(w, optim, recipe, rank_shards(model, recipe, ids).front().groups.front(), "");
  if (g.arch == Arch::dlrm) dot_interaction(w, g, b);
  else if (g.cross_layers > 0) cross_forward(w, g, b);
  mlp_forward(w, StepPhase::top_mlp_fwd, "top_mlp", g.top, b, /*input_16bit=*/g.cross_16bit(w.sixteen_bit()));
  w.hbm(StepPhase::loss, StepFactor::elementwise, bd * kLossBytes, "BCE loss and its gradient");
  w.launches(StepPhase::loss, kernels::kBceLossLaunches);
  mlp_backward(w, StepPhase::top_mlp_bwd, "top_mlp", g.top, b, /*want_dx=*/true, g.relu_backward);
  if (g.arch == Arch::dcnv2 && g.cross_layers > 0) cross_backward(w, g, b);
  mlp_backward(w, StepPhase::bottom_mlp_bwd, "bottom_mlp", g.bottom, b, /*want_dx=*/false, g.relu_backward);
  const double flat = static_cast<double>(g.dense_flat_elements);
  if (recipe.dense == DensePrecision::fp16) {
    // Dynamic loss scaling: the dense gradients and the embedding part of the feature
    // gradient are unscaled and checked for overflow before any update; then the scale
    // is updated (one thread). The unscale passes run in the bottom MLP's backward phase
    // on the GPU; they are kept here, with the update, as calibrated.
    w.hbm(StepPhase::dense_optimizer, StepFactor::elementwise,
          (flat + bd * g.num_tables * g.dim) * kUnscaleBytes, "loss scale: unscale and overflow check");
    w.launches(StepPhase::dense_optimizer, 3);
  }
  if (several) {
    // GpuDlrm::enqueue_step: the flat fp32 dense gradients summed over the ranks, then
    // the step's flags and loss agreed (in the gradient exchange's phase).
    w.collective(StepPhase::dense_all_reduce, ring_all_reduce_cost(flat * kFloatBytes, recipe.gpus),
                 "ring all-reduce of the flat fp32 dense gradients");
    w.collective(StepPhase::embedding_grad_exchange, ring_all_reduce_cost(kSkipFlagBytes, recipe.gpus),
                 "all-reduce of the skip flag");
    if (recipe.dense == DensePrecision::fp16)
      w.collective(StepPhase::embedding_grad_exchange, ring_all_reduce_cost(kOverflowFlagBytes, recipe.gpus),
                   "all-reduce of the fp16 overflow flag");
    w.collective(StepPhase::embedding_grad_exchange, ring_all_reduce_cost(kLossBytesOnLink, recipe.gpus),
                 "all-reduce of the loss");
  }
  w.hbm(StepPhase::dense_optimizer, StepFactor::elementwise,
        flat * (dense_optimizer_bytes_per_element(optim.dense) + (w.sixteen_bit() ? kHalfBytes : 0.0)),
        std::string("fused dense optimizer over the flat buffers") + (w.sixteen_bit() ? " (and their 16-bit copy)" : ""));
  if (recipe.dense == DensePrecision::fp16)
    w.fp16_rounding(StepPhase::dense_optimizer, flat, "dense parameters' fp16 copy");
  w.launches(StepPhase::dense_optimizer, 1);
  w.launches(StepPhase::overhead, kStepCopies);
  StepWork work = w.finish();
  work.embedding_stream = several;
  work.loss_scaled = recipe.dense == DensePrecision::fp16;
  work.upload_ahead = true;
  return work;
}

StepWork sharded_step_work(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                           const Hardware& hw, const IdDistribution& ids) {
  validate_recipe(recipe, model);
  const std::string unsupported = gpu_sharding_unsupported(recipe, model, optim);
  if (!unsupported.empty()) throw ConfigError("recipe for '" + recipe.hardware + "': " + unsupported);
  WorkBuilder w(hw, nullptr, recipe);
  const GpuModelLayout g = gpu_model_layout(model, recipe);
  if (recipe.gpus > 1) {
    sharded_terms(w, model, optim, recipe, g, ids);
  } else {
    embedding_group(w, optim, recipe, rank_shards(model, recipe, ids).front().groups.front(), "");
  }
  return w.finish(/*with_step_overhead=*/false);
}

namespace {

// Forward and backward time of one shard alone on one GPU for the recipe's global batch.
double one_gpu_shard_us(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe, const Hardware& hw,
                        const StepModelParams& params, const ShardLoad& shard) {
  Recipe one = recipe;
  one.gpus = 1;
  one.sharding.clear();
  validate_recipe(one, model);
  WorkBuilder w(hw, nullptr, one);
  ShardGroup g;
  g.width = model.embedding_dim;
  g.lookup_samples = g.update_samples = static_cast<double>(recipe.batch);
  g.shards.push_back(shard);
  embedding_group(w, optim, one, g, "");
  double us = 0.0;
  for (const StepTerm& term : w.finish(/*with_step_overhead=*/false).terms) us += term_time_us(term, params);
  return us;
}

}  // namespace

double row_block_embedding_us(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                              const Hardware& hw, const IdDistribution& ids, const StepModelParams& params,
                              std::size_t t, int64_t first, int64_t last) {
  return one_gpu_shard_us(model, optim, recipe, hw, params,
                          row_block_load(model, t, recipe.placement.at(t) == TablePlacement::host, ids,
                                         static_cast<double>(recipe.batch), first, last));
}

double table_embedding_us(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                          const Hardware& hw, const IdDistribution& ids, const StepModelParams& params, std::size_t t) {
  return one_gpu_shard_us(model, optim, recipe, hw, params,
                          whole_table_load(model, t, recipe.placement.at(t) == TablePlacement::host, ids,
                                           static_cast<double>(recipe.batch)));
}

double term_time_us(const StepTerm& term, const StepModelParams& params) {
  const double f = params.at(term.factor);
  return (step_factor_is_overhead(term.factor) ? term.base * f : term.base / f) * term.tuned_ratio;
}

namespace {

// The time the embedding stream hides (GpuDlrm::enqueue_step with overlap_exchanges), as
// if the two streams did not slow each other down. Forward: the lookups and exchange
// beside the bottom MLP. Backward: the gradient exchange and agreement (x), then the
// update (u), on the embedding stream; the bottom MLP's backward (b) beside x, the dense
// all-reduce and optimizer (d) after x and beside u. With loss scaling x starts after b.
double overlapped_ms(const std::array<double, kStepPhaseCount>& ms, bool loss_scaled) {
  const auto at = [&](StepPhase p) { return ms[static_cast<std::size_t>(p)]; };
  const double bottom_fwd = at(StepPhase::bottom_mlp_fwd);
  const double lookup = at(StepPhase::embedding_fwd) + at(StepPhase::embedding_exchange);
  const double forward_saved = std::min(bottom_fwd, lookup);
  const double b = at(StepPhase::bottom_mlp_bwd), x = at(StepPhase::embedding_grad_exchange),
               u = at(StepPhase::embedding_bwd_update),
               d = at(StepPhase::dense_all_reduce) + at(StepPhase::dense_optimizer);
  const double serial = b + d + x + u;
  const double overlapped = loss_scaled ? b + x + std::max(d, u) : std::max(std::max(b, x) + d, x + u);
  return forward_saved + (serial - overlapped);
}

}  // namespace

StepPrediction predict_step(const StepWork& work, const StepModelParams& params) {
  StepPrediction p;
  p.hardware = work.hardware;
  p.batch = work.batch;
  p.gpus = std::max(work.gpus, 1);
  const auto ranks = static_cast<std::size_t>(p.gpus);
  std::vector<std::array<double, kStepPhaseCount>> phases(ranks, std::array<double, kStepPhaseCount>{});
  for (const StepTerm& t : work.terms) {
    const double ms = term_time_us(t, params) * 1e-3;
    const auto phase = static_cast<std::size_t>(t.phase);
    if (t.rank == kAllRanks) {
      for (auto& r : phases) r[phase] += ms;
    } else {
      if (t.rank < 0 || static_cast<std::size_t>(t.rank) >= ranks)
        throw InternalError("predict_step: a term of rank " + std::to_string(t.rank) + " in a step of " +
                            std::to_string(p.gpus) + " GPUs (" + t.what + ")");
      phases[static_cast<std::size_t>(t.rank)][phase] += ms;
    }
  }
  p.rank_step_ms.assign(ranks, 0.0);
  for (std::size_t r = 0; r < ranks; ++r) {
    double device = 0.0;
    for (StepPhase ph : kAllStepPhases)
      if (ph != StepPhase::upload) device += phases[r][static_cast<std::size_t>(ph)];
    if (work.embedding_stream) device -= overlapped_ms(phases[r], work.loss_scaled);
    const double upload = phases[r][static_cast<std::size_t>(StepPhase::upload)];
    p.rank_step_ms[r] = params.upload_overlaps || work.upload_ahead ? std::max(device, upload) : device + upload;
    if (p.rank_step_ms[r] > p.rank_step_ms[static_cast<std::size_t>(p.slowest_rank)]) p.slowest_rank = static_cast<int>(r);
  }
  p.phase_ms = phases[static_cast<std::size_t>(p.slowest_rank)];
  p.step_ms = p.rank_step_ms[static_cast<std::size_t>(p.slowest_rank)];
  p.samples_per_s = p.step_ms > 0.0 ? static_cast<double>(work.batch) / (p.step_ms * 1e-3) : 0.0;
  return p;
}

}  // namespace hetrec::plan::plan

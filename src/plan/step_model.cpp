#include "plan/step_model.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "optim/sparse_update.h"
#include "perf/gemm_problem.h"
#include "plan/gpu_model_layout.h"
#include "plan/kernel_workspaces.h"

namespace hetrec {
namespace {

constexpr double kFloatBytes = 4.0;
constexpr double kIndexBytes = 4.0;  // int32 ids, offsets, sort keys and values
// Bytes per unit of rate: TB/s = 1e6 bytes per microsecond, GB/s = 1e3.
constexpr double kBytesPerUsPerTbs = 1e6;
constexpr double kBytesPerUsPerGbs = 1e3;
// Copies and memsets the step enqueues around its kernels: the step scalars in, the
// output cleared, the loss and the skip flag out (GpuDlrm::enqueue_step).
constexpr int kStepCopies = 4;

// Bytes each element-wise pass reads and writes per element (from the kernels' code):
constexpr double kReluBackwardBytes = 3 * kFloatBytes;  // dy, y in; dz out (relu_backward_column_sum)
constexpr double kColumnSumBytes = 1 * kFloatBytes;     // dz in (column_sum); partial sums are small
constexpr double kCrossForwardBytes = 4 * kFloatBytes;  // x0, x_l, z in; x_{l+1} out
constexpr double kCrossBackwardBytes = 5 * kFloatBytes; // g, x0, z in; dz, dx0 out
constexpr double kCrossAccumulateBytes = kFloatBytes;   // dx0 read when accumulating
constexpr double kAddMatricesBytes = 3 * kFloatBytes;   // a, b in; out
constexpr double kLossBytes = 3 * kFloatBytes;          // logit, label in; gradient out
constexpr double kHalfBytes = 2.0;
// 16-bit dense compute: the rounding pass that makes a GEMM's 16-bit operand copy reads
// fp32 and writes 16 bits per element (kernels/convert.cu), one launch per copy.
constexpr double kOperandCopyBytes = kFloatBytes + kHalfBytes;
// fp16 dense compute: the loss-scale pass over the dense gradients and the embedding part
// of the feature gradient reads and writes each element (unscale and finite check,
// kernels/loss_scale.cu), plus the scale update's launch.
constexpr double kUnscaleBytes = 2 * kFloatBytes;
constexpr int kColumnSumLaunches = 2;                   // chunk sums, then their combination
constexpr int kLossLaunches = 2;
// Sort bytes per item and pass: the histogram reads the key, the scatter reads and
// writes key and value (kernels/radix_sort.cu).
constexpr double kSortPassBytes = 5 * kIndexBytes;
// Per id of the backward's capacity: segment heads written and read by their scan,
// segment starts, chunk counts, their scan and the chunk owners (embedding_bag_backward.cu).
constexpr double kSegmentBookkeepingBytes = 15 * kIndexBytes;

std::string gemm_label(const std::string& layer, const char* kind, const GemmProblem& p) {
  return layer + " " + kind + " GEMM M=" + std::to_string(p.m) + " N=" + std::to_string(p.n) + " K=" + std::to_string(p.k);
}

class WorkBuilder {
 public:
  WorkBuilder(const GemmSelector& gemm, const Recipe& recipe) : gemm_(gemm), recipe_(recipe) {
    const Hardware& hw = gemm.hardware();
    hbm_bytes_per_us_ = hw.hbm_tbs * kBytesPerUsPerTbs;
    host_bytes_per_us_ = hw.host_gbs_per_direction * kBytesPerUsPerGbs;
    if (hbm_bytes_per_us_ <= 0.0 || host_bytes_per_us_ <= 0.0)
      throw ConfigError(hw.path + ": the step model needs memory.hbm_tbs and links.host_gbs_per_direction > 0");
  }

  // D (m x n) = op(A) op(B). `sixteen_bit`: the operands are bf16 or fp16 copies (the
  // recipe's 16-bit precision); D is fp32 in every precision (model/gpu/).
  void gemm(StepPhase phase, const std::string& layer, const char* kind, int64_t m, int64_t n, int64_t k, bool trans_a,
            bool trans_b, GemmEpilogue epilogue, bool accumulate, bool sixteen_bit) {
    GemmProblem p;
    p.m = m;
    p.n = n;
    p.k = k;
    p.trans_a = trans_a;
    p.trans_b = trans_b;
    const DType half = recipe_.dense == DensePrecision::fp16 ? DType::f16 : DType::bf16;
    p.a_type = p.b_type = sixteen_bit ? half : DType::f32;
    p.c_type = DType::f32;
    p.allow_tf32 = recipe_.dense == DensePrecision::tf32;
    p.accumulate = accumulate;
    p.epilogue = epilogue;
    const GemmEstimate e = gemm_.select(p).estimate;
    add(phase, gemm_factor(gemm_precision(p, gemm_.hardware())), e.time_us - e.launch_us, gemm_label(layer, kind, p));
    launches(phase, 1);
  }
  // The rounding pass that makes one 16-bit operand copy of `elements` fp32 values. bf16
  // rounds with integer operations and streams at the HBM rate; fp16 rounds in double
  // precision and is bound by that arithmetic, not by its 6 B per value.
  void operand_copy(StepPhase phase, double elements, const std::string& what) {
    if (recipe_.dense == DensePrecision::fp16) fp16_rounding(phase, elements, what + " fp16 operand copy");
    else hbm(phase, StepFactor::elementwise, elements * kOperandCopyBytes, what + " 16-bit operand copy");
    launches(phase, 1);
  }
  // Values rounded to fp16 on the device (gpu/half.h f16_encode), in millions.
  void fp16_rounding(StepPhase phase, double values, const std::string& what) {
    add(phase, StepFactor::fp16_rounding_us, values * 1e-6, what + " (fp16 rounding, double precision)");
  }
  bool sixteen_bit() const { return sixteen_bit_dense(recipe_.dense); }
  void hbm(StepPhase phase, StepFactor factor, double bytes, const std::string& what) {
    add(phase, factor, bytes / hbm_bytes_per_us_, what);
  }
  void host(StepPhase phase, StepFactor factor, double bytes, const std::string& what) {
    add(phase, factor, bytes / host_bytes_per_us_, what);
  }
  void launches(StepPhase phase, int count) { launches_[static_cast<std::size_t>(phase)] += count; }

  StepWork finish() {
    for (StepPhase p : kAllStepPhases) {
      const int n = launches_[static_cast<std::size_t>(p)];
      if (n > 0) add(p, StepFactor::kernel_overhead_us, n, std::to_string(n) + " kernel launches");
    }
    add(StepPhase::overhead, StepFactor::step_overhead_us, 1.0, "host work per step");
    work_.hardware = gemm_.hardware().name;
    work_.batch = recipe_.batch;
    return std::move(work_);
  }

 private:
  void add(StepPhase phase, StepFactor factor, double base, const std::string& what) {
    if (base > 0.0) work_.terms.push_back({phase, factor, base, what});
  }
  const GemmSelector& gemm_;
  const Recipe& recipe_;
  double hbm_bytes_per_us_ = 0.0;
  double host_bytes_per_us_ = 0.0;
  std::array<int, kStepPhaseCount> launches_{};
  StepWork work_;
};

void mlp_forward(WorkBuilder& w, StepPhase phase, const std::string& name, const std::vector<LinearShape>& layers,
                 int64_t b) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LinearShape& l = layers[i];
    const std::string layer = name + "." + std::to_string(i);
    const bool half = w.sixteen_bit() && l.sixteen_bit_eligible();
    if (half) w.operand_copy(phase, static_cast<double>(b) * l.in, layer + " input");
    w.gemm(phase, layer, "forward", b, l.out, l.in, false, true, l.relu ? GemmEpilogue::bias_relu : GemmEpilogue::bias,
           false, half);
  }
}

// GpuMlp::backward: per layer from the last, the ReLU mask with the bias sum (or the bias
// sum alone), the weight gradient, and the input gradient unless it is the first layer
// and nobody wants dx.
void mlp_backward(WorkBuilder& w, StepPhase phase, const std::string& name, const std::vector<LinearShape>& layers,
                  int64_t b, bool want_dx) {
  const double bd = static_cast<double>(b);
  for (int i = static_cast<int>(layers.size()) - 1; i >= 0; --i) {
    const LinearShape& l = layers[static_cast<std::size_t>(i)];
    const std::string layer = name + "." + std::to_string(i);
    if (l.relu) w.hbm(phase, StepFactor::elementwise, bd * l.out * kReluBackwardBytes, layer + " ReLU backward + bias sum");
    else w.hbm(phase, StepFactor::elementwise, bd * l.out * kColumnSumBytes, layer + " bias sum");
    w.launches(phase, kColumnSumLaunches);
    const bool half = w.sixteen_bit() && l.sixteen_bit_eligible();
    if (half) w.operand_copy(phase, bd * l.out, layer + " output gradient");
    w.gemm(phase, layer, "wgrad", l.out, l.in, b, true, false, GemmEpilogue::none, false, half);
    if (i > 0 || want_dx) w.gemm(phase, layer, "dgrad", b, l.in, l.out, false, false, GemmEpilogue::none, false, half);
  }
}

void cross_forward(WorkBuilder& w, const GpuModelLayout& g, int64_t b) {
  const int64_t n = g.interaction_width, r = g.cross_rank;
  const auto phase = StepPhase::interaction_fwd;
  const bool half = w.sixteen_bit() && g.cross_sixteen_bit_eligible();
  const double bd = static_cast<double>(b);
  for (int l = 0; l < g.cross_layers; ++l) {
    const std::string layer = "cross_net." + std::to_string(l);
    if (half) w.operand_copy(phase, bd * n, layer + " x_l");
    if (r > 0) {
      w.gemm(phase, layer, "V x", b, r, n, false, true, GemmEpilogue::none, false, half);
      if (half) w.operand_copy(phase, bd * r, layer + " V x");
      w.gemm(phase, layer, "U (V x) + b", b, n, r, false, true, GemmEpilogue::bias, false, half);
    } else {
      w.gemm(phase, layer, "W x + b", b, n, n, false, true, GemmEpilogue::bias, false, half);
    }
    w.hbm(phase, StepFactor::elementwise, static_cast<double>(b) * n * kCrossForwardBytes, layer + " x0 * z + x");
    w.launches(phase, 1);
  }
}

void cross_backward(WorkBuilder& w, const GpuModelLayout& g, int64_t b) {
  const int64_t n = g.interaction_width, r = g.cross_rank;
  const double elems = static_cast<double>(b) * n;
  const auto phase = StepPhase::interaction_bwd;
  const bool half = w.sixteen_bit() && g.cross_sixteen_bit_eligible();
  for (int l = g.cross_layers - 1; l >= 0; --l) {
    const std::string layer = "cross_net." + std::to_string(l);
    const bool accumulate = l + 1 < g.cross_layers;
    w.hbm(phase, StepFactor::elementwise, elems * (kCrossBackwardBytes + (accumulate ? kCrossAccumulateBytes : 0.0)),
          layer + " dz = g * x0, dx0 += g * z");
    w.launches(phase, 1);
    w.hbm(phase, StepFactor::elementwise, elems * kColumnSumBytes, layer + " bias sum");
    w.launches(phase, kColumnSumLaunches);
    if (half) w.operand_copy(phase, elems, layer + " dz");
    if (r > 0) {
      w.gemm(phase, layer, "dU", n, r, b, true, false, GemmEpilogue::none, false, half);
      w.gemm(phase, layer, "d(V x)", b, r, n, false, false, GemmEpilogue::none, false, half);
      if (half) w.operand_copy(phase, static_cast<double>(b) * r, layer + " d(V x)");
      w.gemm(phase, layer, "dV", r, n, b, true, false, GemmEpilogue::none, false, half);
      w.gemm(phase, layer, "dx", b, n, r, false, false, GemmEpilogue::none, true, half);
    } else {
      w.gemm(phase, layer, "dW", n, n, b, true, false, GemmEpilogue::none, false, half);
      w.gemm(phase, layer, "dx", b, n, n, false, false, GemmEpilogue::none, true, half);
    }
  }
  w.hbm(phase, StepFactor::elementwise, elems * kAddMatricesBytes, "cross_net dx0 = chain + direct");
  w.launches(phase, 1);
}

// The DLRM dot interaction (kernels/dot_interaction.h): forward reads X and writes the
// pairwise dots; backward reads X and the output gradient and writes X's gradient.
void dot_interaction(WorkBuilder& w, const GpuModelLayout& g, int64_t b) {
  const double bd = static_cast<double>(b);
  const double x = bd * g.feature_width * kFloatBytes, out = bd * g.interaction_width * kFloatBytes;
  w.hbm(StepPhase::interaction_fwd, StepFactor::interaction, x + out, "dot interaction forward");
  w.launches(StepPhase::interaction_fwd, 1);
  w.hbm(StepPhase::interaction_bwd, StepFactor::interaction, 2 * x + out, "dot interaction backward");
  w.launches(StepPhase::interaction_bwd, 1);
}

void embeddings(WorkBuilder& w, const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe,
                const GpuModelLayout& g, const IdDistribution& ids) {
  const double b = static_cast<double>(recipe.batch);
  const double row_bytes = static_cast<double>(g.dim) * static_cast<double>(dtype_size(recipe.row_dtype));
  const double state_bytes = static_cast<double>(sparse_state_per_row(optim.sparse, g.dim)) * kFloatBytes;
  const double grad_row_bytes = g.dim * kFloatBytes;
  double occurrences = 0.0, hbm_gather = 0.0, hbm_rows = 0.0, host_read = 0.0, host_update = 0.0, distinct_rows = 0.0;
  int64_t total_rows = 0;
  for (std::size_t t = 0; t < model.tables.size(); ++t) {
    const TableConfig& c = model.tables[t];
    const double occ = b * c.hotness;
    const double unique = expected_unique_rows(ids, c.rows, occ);
    occurrences += occ;
    distinct_rows += unique;
    total_rows += c.rows;
    // The lookup issues one row read per id; duplicates served from L2 take the same
    // issue slots (measured: the H200 lookup runs at the rate of all row reads).
    hbm_gather += occ * row_bytes;
    if (recipe.placement[t] == TablePlacement::hbm) {
      hbm_rows += unique * 2 * (row_bytes + state_bytes);  // read and write each distinct row once
    } else {
      host_read += unique * row_bytes;                     // first touch crosses the link
      host_update += unique * (row_bytes + state_bytes);   // read, then written back (full duplex)
    }
  }
  const auto fwd = StepPhase::embedding_fwd;
  w.hbm(fwd, StepFactor::embedding_forward, hbm_gather, "row reads (every id)");
  w.hbm(fwd, StepFactor::embedding_forward, (occurrences + b * g.num_tables) * kIndexBytes, "ids and offsets");
  w.hbm(fwd, StepFactor::embedding_forward, b * g.num_tables * grad_row_bytes, "pooled output (fp32)");
  w.host(fwd, StepFactor::host_tables, host_read, "distinct rows of host tables over the link");
  w.launches(fwd, 1);

  const auto bwd = StepPhase::embedding_bwd_update;
  const double capacity = std::floor(occurrences * kIdCapacityGrowth) + 1.0;
  const int passes = plan_kernels::radix_sort_passes(plan_kernels::embedding_sort_key_bits(total_rows));
  w.hbm(bwd, StepFactor::embedding_backward, occurrences * 3 * kIndexBytes + b * g.num_tables * kIndexBytes,
        "sort keys (ids, offsets in; keys, bags out)");
  w.hbm(bwd, StepFactor::embedding_backward, occurrences * passes * kSortPassBytes,
        "radix sort (" + std::to_string(passes) + " passes)");
  w.hbm(bwd, StepFactor::embedding_backward, capacity * kSegmentBookkeepingBytes, "segments and chunks");
  w.hbm(bwd, StepFactor::embedding_backward, occurrences * (kIndexBytes + grad_row_bytes),
        "pooled-gradient row of every occurrence");
  w.hbm(bwd, StepFactor::embedding_backward, hbm_rows, "distinct rows and optimizer state, read and written");
  w.host(bwd, StepFactor::host_tables, host_update, "distinct rows of host tables, read and written over the link");
  // fp16 rows: the fused update rounds each distinct row's new values to fp16.
  if (recipe.row_dtype == DType::f16) w.fp16_rounding(bwd, distinct_rows * g.dim, "updated fp16 rows");
  w.launches(bwd, plan_kernels::embedding_backward_launches(static_cast<int64_t>(capacity), total_rows));
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
    case StepPhase::interaction_fwd: return "interaction_fwd";
    case StepPhase::top_mlp_fwd: return "top_mlp_fwd";
    case StepPhase::loss: return "loss";
    case StepPhase::top_mlp_bwd: return "top_mlp_bwd";
    case StepPhase::interaction_bwd: return "interaction_bwd";
    case StepPhase::bottom_mlp_bwd: return "bottom_mlp_bwd";
    case StepPhase::embedding_bwd_update: return "embedding_bwd_update";
    case StepPhase::dense_optimizer: return "dense_optimizer";
    case StepPhase::overhead: return "overhead";
  }
  return "?";
}

std::optional<StepPhase> parse_step_phase(std::string_view name) {
  for (StepPhase p : kAllStepPhases)
    if (step_phase_name(p) == name) return p;
  return std::nullopt;
}

StepWork step_work(const ModelConfig& model, const OptimConfig& optim, const Recipe& recipe, const GemmSelector& gemm,
                   const IdDistribution& ids) {
  validate_recipe(recipe, model);
  const GpuModelLayout g = gpu_model_layout(model);
  const int64_t b = recipe.batch;
  const double bd = static_cast<double>(b);
  WorkBuilder w(gemm, recipe);

  const double upload_bytes = bd * (g.num_dense + 1) * kFloatBytes + (bd * g.num_tables + 1) * kIndexBytes +
                              std::ceil(bd * g.ids_per_sample) * kIndexBytes;
  w.host(StepPhase::upload, StepFactor::upload, upload_bytes, "dense, labels, offsets and ids");

  mlp_forward(w, StepPhase::bottom_mlp_fwd, "bottom_mlp", g.bottom, b);
  embeddings(w, model, optim, recipe, g, ids);
  if (g.arch == Arch::dlrm) dot_interaction(w, g, b);
  else if (g.cross_layers > 0) cross_forward(w, g, b);
  mlp_forward(w, StepPhase::top_mlp_fwd, "top_mlp", g.top, b);
  w.hbm(StepPhase::loss, StepFactor::elementwise, bd * kLossBytes, "BCE loss and its gradient");
  w.launches(StepPhase::loss, kLossLaunches);
  mlp_backward(w, StepPhase::top_mlp_bwd, "top_mlp", g.top, b, /*want_dx=*/true);
  if (g.arch == Arch::dcnv2 && g.cross_layers > 0) cross_backward(w, g, b);
  mlp_backward(w, StepPhase::bottom_mlp_bwd, "bottom_mlp", g.bottom, b, /*want_dx=*/false);
  const double flat = static_cast<double>(g.dense_flat_elements);
  if (recipe.dense == DensePrecision::fp16) {
    // Dynamic loss scaling: the dense gradients and the embedding part of the feature
    // gradient are unscaled and checked for overflow before any update; then the scale
    // is updated (one thread).
    w.hbm(StepPhase::dense_optimizer, StepFactor::elementwise,
          (flat + bd * g.num_tables * g.dim) * kUnscaleBytes, "loss scale: unscale and overflow check");
    w.launches(StepPhase::dense_optimizer, 3);
  }
  w.hbm(StepPhase::dense_optimizer, StepFactor::elementwise,
        flat * (dense_optimizer_bytes_per_element(optim.dense) + (w.sixteen_bit() ? kHalfBytes : 0.0)),
        std::string("fused dense optimizer over the flat buffers") + (w.sixteen_bit() ? " (and their 16-bit copy)" : ""));
  if (recipe.dense == DensePrecision::fp16)
    w.fp16_rounding(StepPhase::dense_optimizer, flat, "dense parameters' fp16 copy");
  w.launches(StepPhase::dense_optimizer, 1);
  w.launches(StepPhase::overhead, kStepCopies);
  return w.finish();
}

double term_time_us(const StepTerm& term, const StepModelParams& params) {
  const double f = params.at(term.factor);
  return step_factor_is_overhead(term.factor) ? term.base * f : term.base / f;
}

StepPrediction predict_step(const StepWork& work, const StepModelParams& params) {
  StepPrediction p;
  p.hardware = work.hardware;
  p.batch = work.batch;
  for (const StepTerm& t : work.terms) p.phase_ms[static_cast<std::size_t>(t.phase)] += term_time_us(t, params) * 1e-3;
  double device = 0.0;
  for (StepPhase ph : kAllStepPhases)
    if (ph != StepPhase::upload) device += p.phase(ph);
  const double upload = p.phase(StepPhase::upload);
  p.step_ms = params.upload_overlaps ? std::max(device, upload) : device + upload;
  p.samples_per_s = p.step_ms > 0.0 ? static_cast<double>(work.batch) / (p.step_ms * 1e-3) : 0.0;
  return p;
}

}  // namespace hetrec

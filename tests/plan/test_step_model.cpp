// The step-time model: its terms against independent counts of the GPU model's work,
// and its behaviour over batch size, precision, row type and placement.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <optional>
#include <string>

#include "kernels/bce_loss_geometry.h"
#include "kernels/column_sum_geometry.h"
#include "kernels/embedding_backward_geometry.h"
#include "model/gpu/batch_buffer_sizes.h"
#include "model/gpu/dense_layout.h"
#include "gemm_perf/gemm_problem.h"
#include "plan/id_distribution.h"
#include "plan/step_model.h"
#include "plan_test_support.h"

namespace hetrec::test {
namespace {


double phase_base(const StepWork& w, StepPhase p, StepFactor f) {
  double s = 0.0;
  for (const StepTerm& t : w.terms)
    if (t.phase == p && t.factor == f) s += t.base;
  return s;
}

int count_terms(const StepWork& w, StepPhase p, StepFactor f) {
  int n = 0;
  for (const StepTerm& t : w.terms) n += t.phase == p && t.factor == f;
  return n;
}

// The GEMM model's time for one of the model's GEMMs (packed, as the layers keep them),
// without its launch.
double gemm_us(const GemmSelector& sel, int64_t m, int64_t n, int64_t k, bool ta, bool tb, GemmEpilogue ep, bool acc) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.trans_a = ta;
  p.trans_b = tb;
  p.a_type = p.b_type = p.c_type = DType::f32;
  p.allow_tf32 = true;
  p.epilogue = ep;
  p.accumulate = acc;
  const GemmEstimate e = sel.select(with_packed_alignment(p)).estimate;
  return e.time_us - e.launch_us;
}

TEST(StepModel, TermsCountTheGpuModelsWork) {
  const PlanTarget t = shipped_target("h200_sxm");
  const ModelConfig m = small_model();
  const OptimConfig o = mlperf_optim();
  Recipe r = recipe_of_model(m, 4096, t.hw().name);
  r.dense = DensePrecision::tf32;
  const StepWork w = step_work(m, o, r, t.gemm, IdDistribution{IdLaw::uniform, 0.0});
  const double b = 4096, n = 24, hbm = t.hw().hbm_tbs * 1e6, host = t.hw().host_gbs_per_direction * 1e3;
  const auto tf = StepFactor::gemm_tf32;

  // Forward GEMMs: 2 bottom, 2 per cross layer (rank 4), 2 top; backward: wgrad for each
  // layer, dgrad for all but the bottom MLP's first, 4 per cross layer.
  EXPECT_EQ(count_terms(w, StepPhase::bottom_mlp_fwd, tf), 2);
  EXPECT_EQ(count_terms(w, StepPhase::interaction_fwd, tf), 4);
  EXPECT_EQ(count_terms(w, StepPhase::top_mlp_fwd, tf), 2);
  EXPECT_EQ(count_terms(w, StepPhase::top_mlp_bwd, tf), 4);
  EXPECT_EQ(count_terms(w, StepPhase::interaction_bwd, tf), 8);
  EXPECT_EQ(count_terms(w, StepPhase::bottom_mlp_bwd, tf), 3);
  const GemmSelector& g = t.gemm;
  EXPECT_NEAR(phase_base(w, StepPhase::bottom_mlp_fwd, tf),
              gemm_us(g, 4096, 16, 3, false, true, GemmEpilogue::bias_relu, false) +
                  gemm_us(g, 4096, 8, 16, false, true, GemmEpilogue::bias_relu, false),
              1e-9);
  EXPECT_NEAR(phase_base(w, StepPhase::top_mlp_bwd, tf),
              gemm_us(g, 1, 32, 4096, true, false, GemmEpilogue::none, false) +
                  gemm_us(g, 4096, 32, 1, false, false, GemmEpilogue::none, false) +
                  gemm_us(g, 32, 24, 4096, true, false, GemmEpilogue::none, false) +
                  gemm_us(g, 4096, 24, 32, false, false, GemmEpilogue::none, false),
              1e-9);
  // Per layer dU, d(V x), dV and the term through x_l: written for the layer below (top
  // layer), added to dx0 (bottom layer, accumulating).
  const double cross_layer_gemms = gemm_us(g, 24, 4, 4096, true, false, GemmEpilogue::none, false) +
                                   gemm_us(g, 4096, 4, 24, false, false, GemmEpilogue::none, false) +
                                   gemm_us(g, 4, 24, 4096, true, false, GemmEpilogue::none, false);
  EXPECT_NEAR(phase_base(w, StepPhase::interaction_bwd, tf),
              2 * cross_layer_gemms + gemm_us(g, 4096, 24, 4, false, false, GemmEpilogue::none, false) +
                  gemm_us(g, 4096, 24, 4, false, false, GemmEpilogue::none, true),
              1e-9);

  // Element-wise bytes, counted from the kernels (fp32 operands here), the cross net's at
  // factors of their own: the cross forward reads x0, x, z and writes the output; the
  // backward pass of the top layer reads g and x0 and writes dz (12 B), the bottom layer's
  // also reads the top layer's term and both z's and writes dx0 (28 B), each summing dz's
  // columns.
  const auto ew = StepFactor::elementwise;
  EXPECT_NEAR(phase_base(w, StepPhase::interaction_fwd, StepFactor::cross_forward), 2 * b * n * 16 / hbm, 1e-12);
  EXPECT_NEAR(phase_base(w, StepPhase::interaction_bwd, StepFactor::cross_backward), (b * n * 12 + b * n * 28) / hbm,
              1e-12);
  EXPECT_EQ(phase_base(w, StepPhase::interaction_fwd, ew), 0.0);
  EXPECT_EQ(phase_base(w, StepPhase::interaction_bwd, ew), 0.0);
  // ReLU backward (dy, y in; dz out) on 32 and (bias sum only) 1 column in the top MLP.
  EXPECT_NEAR(phase_base(w, StepPhase::top_mlp_bwd, ew), (b * 32 * 12 + b * 1 * 4) / hbm, 1e-12);
  EXPECT_NEAR(phase_base(w, StepPhase::loss, ew), b * 12 / hbm, 1e-12);
  // Adagrad over the flat buffers (the 1465 values with the GPU model's alignment: 1920
  // floats): param, grad, sum in; param, sum out.
  int64_t padded = 0;
  for (int64_t numel : {48, 16, 128, 8, 96, 96, 24, 96, 96, 24, 768, 32, 32, 1})
    padded += gpu_model::dense_padded_elements(numel);
  const auto flat = static_cast<double>(gpu_model::dense_flat_elements(padded));
  EXPECT_NEAR(phase_base(w, StepPhase::dense_optimizer, ew), flat * 20 / hbm, 1e-12);
  // Upload: dense and labels (4 floats), offsets (2 per sample + 1) and 5 ids per sample.
  EXPECT_NEAR(phase_base(w, StepPhase::upload, StepFactor::upload), (b * 4 * 4 + (b * 2 + 1) * 4 + b * 5 * 4) / host,
              1e-12);
  // Embedding forward: every id's fp32 row, ids and offsets, the pooled output.
  EXPECT_NEAR(phase_base(w, StepPhase::embedding_fwd, StepFactor::embedding_forward),
              (b * 5 * 32 + (b * 5 + b * 2) * 4 + b * 2 * 32) / hbm, 1e-12);
  // ... and one row read per id, in millions.
  EXPECT_NEAR(phase_base(w, StepPhase::embedding_fwd, StepFactor::embedding_row_read_us), b * 5 * 1e-6, 1e-12);
  EXPECT_EQ(count_terms(w, StepPhase::embedding_fwd, StepFactor::host_tables), 0);
  // Launches: one per GEMM and kernel, as many as the kernels' launchers make for the
  // column sums, the loss and the embedding backward (its sort, scans and bookkeeping over
  // the staging's id capacity for the 5 ids of each of the 4096 samples, keys of the
  // 1300 rows).
  EXPECT_DOUBLE_EQ(phase_base(w, StepPhase::top_mlp_bwd, StepFactor::kernel_overhead_us),
                   4 + 2 * kernels::kColumnSumLaunches);
  EXPECT_DOUBLE_EQ(phase_base(w, StepPhase::loss, StepFactor::kernel_overhead_us), kernels::kBceLossLaunches);
  EXPECT_DOUBLE_EQ(phase_base(w, StepPhase::embedding_bwd_update, StepFactor::kernel_overhead_us),
                   kernels::embedding_backward_launches(gpu_model::grown_id_capacity(4096 * 5), 1300));
  EXPECT_DOUBLE_EQ(phase_base(w, StepPhase::interaction_fwd, StepFactor::kernel_overhead_us), 4 + 2);
  EXPECT_DOUBLE_EQ(phase_base(w, StepPhase::overhead, StepFactor::step_overhead_us), 1.0);
}

TEST(StepModel, PredictionAppliesTheFactors) {
  const PlanTarget t = shipped_target("h200_sxm");
  const ModelConfig m = mlperf_model(2000000);
  // The engine copies announced batches ahead; the sums below are of a step that uploads
  // its batch first.
  StepWork w = step_work(m, mlperf_optim(), recipe_of_model(m, 16384, "h200_sxm"), t.gemm, IdDistribution{});
  EXPECT_TRUE(w.upload_ahead);
  w.upload_ahead = false;
  StepModelParams p = t.step;
  const StepPrediction base = predict_step(w, p);
  double sum = 0.0;
  for (StepPhase ph : kAllStepPhases) sum += base.phase(ph);
  EXPECT_NEAR(base.step_ms, sum, 1e-9 * sum);
  EXPECT_NEAR(base.samples_per_s, 16384 / (base.step_ms * 1e-3), 1e-6 * base.samples_per_s);

  // Halving a bandwidth factor doubles exactly its terms; doubling an overhead doubles its.
  StepModelParams slow = p;
  slow.at(StepFactor::embedding_backward) /= 2;
  slow.at(StepFactor::step_overhead_us) *= 2;
  const StepPrediction s = predict_step(w, slow);
  EXPECT_NEAR(s.phase(StepPhase::embedding_bwd_update) - base.phase(StepPhase::embedding_bwd_update),
              phase_base(w, StepPhase::embedding_bwd_update, StepFactor::embedding_backward) /
                  p.at(StepFactor::embedding_backward) * 1e-3,
              1e-9);
  EXPECT_NEAR(s.phase(StepPhase::overhead) - base.phase(StepPhase::overhead), p.at(StepFactor::step_overhead_us) * 1e-3,
              1e-12);
  EXPECT_DOUBLE_EQ(s.phase(StepPhase::top_mlp_fwd), base.phase(StepPhase::top_mlp_fwd));

  // An overlapped upload hides behind the device work: the engine's (upload_ahead), or
  // every upload (upload_overlaps).
  StepWork ahead = w;
  ahead.upload_ahead = true;
  EXPECT_NEAR(predict_step(ahead, p).step_ms, base.step_ms - base.phase(StepPhase::upload), 1e-9);
  p.upload_overlaps = true;
  const StepPrediction o = predict_step(w, p);
  EXPECT_NEAR(o.step_ms, base.step_ms - base.phase(StepPhase::upload), 1e-9);
}

TEST(StepModel, StepTimeGrowsWithBatchAndThroughputWithIt) {
  const PlanTarget t = shipped_target("h200_sxm");
  const ModelConfig m = mlperf_model(2000000);
  double last_ms = 0.0;
  double first_rate = 0.0, last_rate = 0.0;
  for (int64_t b = 1024; b <= 65536; b *= 2) {
    Recipe r = recipe_of_model(m, b, t.hw().name);
    r.dense = DensePrecision::tf32;
    const StepPrediction p = predict_step(step_work(m, mlperf_optim(), r, t.gemm, IdDistribution{}), t.step);
    EXPECT_GT(p.step_ms, last_ms) << "batch " << b;
    for (StepPhase ph : {StepPhase::upload, StepPhase::embedding_fwd, StepPhase::embedding_bwd_update,
                         StepPhase::interaction_bwd})
      EXPECT_GT(p.phase(ph), 0.0) << step_phase_name(ph);
    last_ms = p.step_ms;
    if (first_rate == 0.0) first_rate = p.samples_per_s;
    last_rate = p.samples_per_s;
  }
  EXPECT_GT(last_rate, 1.5 * first_rate);
}

TEST(StepModel, PrecisionRowsAndPlacementMoveTheRightPhases) {
  const ModelConfig m = mlperf_model();
  const OptimConfig o = mlperf_optim();
  const PlanTarget h200 = shipped_target("h200_sxm");
  const Recipe fp32 = recipe_of_model(m, 65536, "h200_sxm");
  const auto predict = [&](const Recipe& r, const PlanTarget& t) {
    return predict_step(step_work(m, o, r, t.gemm, IdDistribution{}), t.step);
  };
  const StepPrediction a = predict(fp32, h200);
  Recipe tf32 = fp32;
  tf32.dense = DensePrecision::tf32;
  const StepPrediction b = predict(tf32, h200);
  EXPECT_LT(b.phase(StepPhase::interaction_bwd), a.phase(StepPhase::interaction_bwd) / 2);
  EXPECT_DOUBLE_EQ(b.phase(StepPhase::embedding_fwd), a.phase(StepPhase::embedding_fwd));

  // 16-bit rows halve the row traffic; fp16 rows also pay the update's double-precision
  // rounding of every distinct row (one term), bf16 rows do not.
  Recipe half = tf32;
  half.row_dtype = DType::bf16;
  const StepPrediction c = predict(half, h200);
  EXPECT_LT(c.phase(StepPhase::embedding_fwd), b.phase(StepPhase::embedding_fwd));
  EXPECT_LT(c.phase(StepPhase::embedding_bwd_update), b.phase(StepPhase::embedding_bwd_update));
  EXPECT_DOUBLE_EQ(c.phase(StepPhase::top_mlp_bwd), b.phase(StepPhase::top_mlp_bwd));
  Recipe fp16_rows = half;
  fp16_rows.row_dtype = DType::f16;
  const StepWork rw = step_work(m, o, fp16_rows, h200.gemm, IdDistribution{});
  EXPECT_EQ(count_terms(rw, StepPhase::embedding_bwd_update, StepFactor::fp16_rounding_us), 1);
  EXPECT_DOUBLE_EQ(predict_step(rw, h200.step).phase(StepPhase::embedding_fwd), c.phase(StepPhase::embedding_fwd));
  EXPECT_GT(predict_step(rw, h200.step).phase(StepPhase::embedding_bwd_update),
            c.phase(StepPhase::embedding_bwd_update));

  Recipe host = tf32;
  host.placement[0] = TablePlacement::host;
  const StepWork hw_work = step_work(m, o, host, h200.gemm, IdDistribution{});
  EXPECT_EQ(count_terms(hw_work, StepPhase::embedding_fwd, StepFactor::host_tables), 1);
  const StepPrediction d = predict_step(hw_work, h200.step);
  EXPECT_GT(d.phase(StepPhase::embedding_fwd), b.phase(StepPhase::embedding_fwd));
  EXPECT_GT(d.phase(StepPhase::embedding_bwd_update), b.phase(StepPhase::embedding_bwd_update));

  // 16-bit GEMMs: the 16-bit pipe (the bottom MLP's first layer, 13 wide, and the logit
  // layer keep fp32 operands, on the TF32 pipe unless unaligned_gemms = "fp32"). Operands are written in 16 bits by their producers: X is rounded
  // once, the cross net hands the top MLP its input and each 16-bit layer the next one,
  // so the top MLP's forward has no rounding pass. fp16 adds the loss-scale pass before
  // the updates.
  Recipe bf16 = fp32;
  bf16.dense = DensePrecision::bf16;
  const StepWork bw = step_work(m, o, bf16, h200.gemm, IdDistribution{});
  EXPECT_EQ(count_terms(bw, StepPhase::top_mlp_fwd, StepFactor::gemm_16bit), 4);
  EXPECT_EQ(count_terms(bw, StepPhase::top_mlp_fwd, StepFactor::gemm_tf32), 1);
  EXPECT_EQ(count_terms(bw, StepPhase::top_mlp_fwd, StepFactor::gemm_fp32), 0);
  EXPECT_EQ(count_terms(bw, StepPhase::top_mlp_fwd, StepFactor::elementwise), 0);
  EXPECT_EQ(count_terms(bw, StepPhase::interaction_fwd, StepFactor::cross_forward), 4);  // X's copy, 3 passes
  EXPECT_EQ(count_terms(bw, StepPhase::bottom_mlp_fwd, StepFactor::gemm_tf32), 1);
  Recipe bf16_fp32_unaligned = bf16;
  bf16_fp32_unaligned.unaligned_tf32 = false;
  const StepWork bu = step_work(m, o, bf16_fp32_unaligned, h200.gemm, IdDistribution{});
  EXPECT_EQ(count_terms(bu, StepPhase::top_mlp_fwd, StepFactor::gemm_fp32), 1);
  EXPECT_EQ(count_terms(bu, StepPhase::bottom_mlp_fwd, StepFactor::gemm_fp32), 1);
  EXPECT_EQ(count_terms(bu, StepPhase::top_mlp_fwd, StepFactor::gemm_tf32), 0);
  EXPECT_GE(predict_step(bu, h200.step).step_ms, predict_step(bw, h200.step).step_ms);
  EXPECT_EQ(count_terms(bw, StepPhase::interaction_fwd, StepFactor::gemm_16bit), 6);
  EXPECT_LT(predict_step(bw, h200.step).phase(StepPhase::interaction_bwd), b.phase(StepPhase::interaction_bwd));
  // The 16-bit residual stream: each cross pass reads x0 and x_l in 16 bits and writes
  // no fp32 x_{l+1} (the last one has none either: the top MLP reads its 16-bit copy), so
  // the passes' bytes go from 4 + 4 + 2 + 4 + 2 (2 + 4 + 2 + 2 for the last) to 2 + 2 + 2 + 2 per element.
  Recipe bf16_stream = bf16;
  bf16_stream.cross_residual_16bit = true;
  const StepWork bw16 = step_work(m, o, bf16_stream, h200.gemm, IdDistribution{});
  const double elems = 65536.0 * 27 * 128;
  EXPECT_NEAR(phase_base(bw, StepPhase::interaction_fwd, StepFactor::cross_forward) -
                  phase_base(bw16, StepPhase::interaction_fwd, StepFactor::cross_forward),
              (2 * 8.0 + 4.0) * elems / (h200.hw().hbm_tbs * 1e6),
              1e-9 * phase_base(bw, StepPhase::interaction_fwd, StepFactor::cross_forward));
  EXPECT_DOUBLE_EQ(phase_base(bw16, StepPhase::interaction_bwd, StepFactor::cross_backward),
                   phase_base(bw, StepPhase::interaction_bwd, StepFactor::cross_backward));
  Recipe fp16 = bf16;
  fp16.dense = DensePrecision::fp16;
  const StepWork fw = step_work(m, o, fp16, h200.gemm, IdDistribution{});
  EXPECT_GT(predict_step(fw, h200.step).phase(StepPhase::dense_optimizer),
            predict_step(bw, h200.step).phase(StepPhase::dense_optimizer));
  // fp16 rounds in double precision: the fp16 rounding term replaces the element-wise
  // traffic of X's copy and is added to each pass that writes fp16 operands (the 3 cross
  // passes; of the top MLP's 4 16-bit ReLU layers, the one whose ReLU backward is a pass:
  // the other three are masked in 16 bits, model.relu_backward = "mask_pass", which
  // rounds nothing; all 4 with "epilogue", priced as the pass); bf16 has no such term.
  EXPECT_EQ(count_terms(fw, StepPhase::interaction_fwd, StepFactor::fp16_rounding_us), 4);
  EXPECT_EQ(count_terms(fw, StepPhase::interaction_fwd, StepFactor::cross_forward), 3);
  EXPECT_EQ(count_terms(fw, StepPhase::top_mlp_bwd, StepFactor::fp16_rounding_us), 1);
  ModelConfig epilogue_model = m;
  epilogue_model.relu_backward = ReluBackward::epilogue;
  EXPECT_EQ(count_terms(step_work(epilogue_model, o, fp16, h200.gemm, IdDistribution{}), StepPhase::top_mlp_bwd,
                        StepFactor::fp16_rounding_us),
            4);
  EXPECT_EQ(count_terms(fw, StepPhase::dense_optimizer, StepFactor::fp16_rounding_us), 1);  // parameters' copy
  for (StepPhase ph : kAllStepPhases) EXPECT_EQ(count_terms(bw, ph, StepFactor::fp16_rounding_us), 0);

  // Without a TF32 pipe the tf32 recipe's GEMMs are the fp32 ones.
  const PlanTarget mi350 = shipped_target("mi350x");
  Recipe on_mi = tf32, on_mi_fp32 = fp32;
  on_mi.hardware = on_mi_fp32.hardware = "mi350x";
  const StepWork tw = step_work(m, o, on_mi, mi350.gemm, IdDistribution{});
  EXPECT_EQ(count_terms(tw, StepPhase::top_mlp_fwd, StepFactor::gemm_tf32), 0);
  EXPECT_DOUBLE_EQ(predict_step(tw, mi350.step).step_ms, predict(on_mi_fp32, mi350).step_ms);
}

// model.relu_backward = "mask_pass": a 16-bit ReLU layer feeding a 16-bit layer (the top
// MLP's first three, the bottom MLP's second) loses its ReLU + bias-sum pass (fp32 dy, y
// and dz: 4 + 2 + 2 bytes per element) for the mask pass (2 + 2 + 2), and its successor's
// input-gradient GEMM writes 16 bits; the other layers are priced as before.
TEST(StepModel, ReluMaskPassReplacesTheFusedLayersPasses) {
  ModelConfig m = mlperf_model();
  const OptimConfig o = mlperf_optim();
  const PlanTarget h200 = shipped_target("h200_sxm");
  Recipe r = recipe_of_model(m, 65536, "h200_sxm");
  r.dense = DensePrecision::bf16;
  m.relu_backward = ReluBackward::epilogue;  // priced as the pass
  const StepWork pass = step_work(m, o, r, h200.gemm, IdDistribution{});
  m.relu_backward = ReluBackward::mask_pass;
  const StepWork masked = step_work(m, o, r, h200.gemm, IdDistribution{});
  const auto count_what = [](const StepWork& w, StepPhase p, const std::string& what) {
    int n = 0;
    for (const StepTerm& t : w.terms) n += t.phase == p && t.what.find(what) != std::string::npos;
    return n;
  };
  EXPECT_EQ(count_what(masked, StepPhase::top_mlp_bwd, "ReLU mask pass"), 3);
  EXPECT_EQ(count_what(masked, StepPhase::bottom_mlp_bwd, "ReLU mask pass"), 1);
  EXPECT_EQ(count_what(pass, StepPhase::top_mlp_bwd, "ReLU mask pass"), 0);
  EXPECT_EQ(count_what(masked, StepPhase::top_mlp_bwd, "ReLU backward + bias sum"), 1);  // the 256-wide layer
  const double b = 65536.0, bytes_per_us = h200.hw().hbm_tbs * 1e6;
  EXPECT_NEAR(phase_base(pass, StepPhase::top_mlp_bwd, StepFactor::elementwise) -
                  phase_base(masked, StepPhase::top_mlp_bwd, StepFactor::elementwise),
              b * (1024 + 1024 + 512) * 2.0 / bytes_per_us, 1e-9);
  EXPECT_NEAR(phase_base(pass, StepPhase::bottom_mlp_bwd, StepFactor::elementwise) -
                  phase_base(masked, StepPhase::bottom_mlp_bwd, StepFactor::elementwise),
              b * 256 * 2.0 / bytes_per_us, 1e-9);
  // Writing 16 bits, the input-gradient GEMMs take no longer.
  EXPECT_LE(phase_base(masked, StepPhase::top_mlp_bwd, StepFactor::gemm_16bit),
            phase_base(pass, StepPhase::top_mlp_bwd, StepFactor::gemm_16bit));
  EXPECT_LT(predict_step(masked, h200.step).phase(StepPhase::top_mlp_bwd),
            predict_step(pass, h200.step).phase(StepPhase::top_mlp_bwd));
  EXPECT_DOUBLE_EQ(predict_step(masked, h200.step).phase(StepPhase::interaction_bwd),
                   predict_step(pass, h200.step).phase(StepPhase::interaction_bwd));
}

TEST(StepModel, PhaseNamesRoundTrip) {
  for (StepPhase p : kAllStepPhases) EXPECT_EQ(parse_step_phase(step_phase_name(p)), p);
  EXPECT_FALSE(parse_step_phase("warp_drive").has_value());
}

// A table in host memory: its distinct rows cross at the gather rate the GPU measured for
// the span of its rows and optimizer state and for its row size (hw/h200_sxm.toml,
// hw/h100_sxm.toml), so the 40M-row table of the full config pays more per byte than its
// 2M-row capped copy; a GPU without such a measurement prices both at its link's datasheet rate.
TEST(StepModel, HostTablesPayTheMeasuredGatherRateOfTheirSpan) {
  const OptimConfig o = mlperf_optim();
  const IdDistribution ids{IdLaw::zipf, 1.05};
  const double state_bytes = 4;
  for (const char* name : {"h200_sxm", "h100_sxm", "b200"}) {
    for (DType rows_dtype : {DType::bf16, DType::f32}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(dtype_name(rows_dtype)));
      const double row_bytes = 128.0 * static_cast<double>(dtype_size(rows_dtype));
      const PlanTarget t = shipped_target(name);
      double per_byte_us[2] = {0, 0};
      int i = 0;
      for (int64_t cap : {int64_t(2000000), int64_t(0)}) {
        const ModelConfig m = mlperf_model(cap);
        Recipe r = recipe_of_model(m, 16384, t.hw().name);
        r.dense = DensePrecision::bf16;
        r.row_dtype = rows_dtype;
        r.placement[0] = TablePlacement::host;  // t0: 40M rows, 3 ids a sample
        const StepWork w = step_work(m, o, r, t.gemm, ids);
        ASSERT_EQ(count_terms(w, StepPhase::embedding_fwd, StepFactor::host_tables), 1);
        const double rows = static_cast<double>(m.tables[0].rows);
        const double distinct = expected_unique_rows(ids, m.tables[0].rows, 16384.0 * m.tables[0].hotness);
        const double span_gb = rows * (row_bytes + state_bytes) / 1e9;
        const std::optional<double> measured = measured_host_gather_gbs(t.hw(), span_gb, row_bytes);
        const double gbs = measured ? *measured : t.hw().host_gbs_per_direction;
        EXPECT_EQ(measured.has_value(), std::string(name) != "b200");
        const double base = phase_base(w, StepPhase::embedding_fwd, StepFactor::host_tables);
        EXPECT_NEAR(base, distinct * row_bytes / (gbs * 1e3), 1e-9 * base);
        per_byte_us[i++] = base / (distinct * row_bytes);
      }
      if (std::string(name) != "b200") EXPECT_GT(per_byte_us[1], 2.0 * per_byte_us[0]);
      else EXPECT_DOUBLE_EQ(per_byte_us[1], per_byte_us[0]);
    }
  }
}

}  // namespace
}  // namespace hetrec::test

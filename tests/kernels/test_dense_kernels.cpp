// The dense-path kernels: dot interaction, cross-net element-wise parts, column sums,
// BCE loss and the fused dense optimizers, against double-precision references (and the
// CPU implementations where the arithmetic is meant to agree bit for bit).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "../gpu/device_test_support.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/rng.h"
#include "kernels/bce_loss.h"
#include "kernels/column_sum.h"
#include "tunable/cross_net/cross_net.h"
#include "kernels/dense_optimizer.h"
#include "tunable/dot_interaction/dot_interaction.h"
#include "kernels/step_scalars.h"
#include "nn/dot_interaction.h"
#include "optim/dense_optimizer.h"

namespace hetrec {
namespace {

std::vector<float> normals(std::size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(scale * rng.normal());
  return v;
}

TEST(DotInteractionKernel, ForwardAndBackwardMatchDoubleReference) {
  HETREC_REQUIRE_GPU();
  for (bool self : {false, true}) {
    for (auto [f, d] : {std::pair{27, 128}, std::pair{5, 16}, std::pair{9, 7}, std::pair{41, 96}}) {
      kernels::DotInteractionShape s{77, f, d, self};
      const int64_t fstride = f * d + 5, ostride = s.output_width() + 2;
      const auto x = normals(static_cast<std::size_t>(s.batch * fstride), 41 + f);
      const auto dout = normals(static_cast<std::size_t>(s.batch * ostride), 42 + f);
      gpu::DeviceBuffer dx = testing::to_device(x), ddout = testing::to_device(dout);
      gpu::DeviceBuffer out = testing::poisoned_floats(static_cast<std::size_t>(s.batch * ostride));
      gpu::DeviceBuffer dfeat = testing::poisoned_floats(static_cast<std::size_t>(s.batch * fstride));
      kernels::dot_interaction_forward(s, dx.as<float>(), fstride, out.as<float>(), ostride, nullptr);
      kernels::dot_interaction_backward(s, dx.as<float>(), fstride, ddout.as<float>(), ostride, dfeat.as<float>(),
                                        fstride, nullptr);
      const auto got = testing::to_host<float>(out, static_cast<std::size_t>(s.batch * ostride));
      const auto got_g = testing::to_host<float>(dfeat, static_cast<std::size_t>(s.batch * fstride));

      // Reference through the CPU layer in double (its pair order is the contract).
      DotInteraction<double> ref(f - 1, d, self);
      ASSERT_EQ(ref.output_width(), s.output_width());
      for (int64_t b = 0; b < s.batch; ++b) {
        std::vector<double> dense(static_cast<std::size_t>(d)), sparse(static_cast<std::size_t>((f - 1) * d));
        for (int k = 0; k < d; ++k) dense[static_cast<std::size_t>(k)] = x[static_cast<std::size_t>(b * fstride + k)];
        for (int k = 0; k < (f - 1) * d; ++k) sparse[static_cast<std::size_t>(k)] = x[static_cast<std::size_t>(b * fstride + d + k)];
        std::vector<double> o(static_cast<std::size_t>(ref.output_width()));
        ref.forward(dense.data(), sparse.data(), 1, o.data());
        for (int c = 0; c < ref.output_width(); ++c)
          ASSERT_NEAR(got[static_cast<std::size_t>(b * ostride + c)], o[static_cast<std::size_t>(c)], 1e-4 * std::sqrt(d))
              << "f=" << f << " d=" << d << " b=" << b << " c=" << c;
        std::vector<double> go(static_cast<std::size_t>(ref.output_width()));
        for (int c = 0; c < ref.output_width(); ++c) go[static_cast<std::size_t>(c)] = dout[static_cast<std::size_t>(b * ostride + c)];
        std::vector<double> gd(static_cast<std::size_t>(d)), gs(static_cast<std::size_t>((f - 1) * d));
        ref.backward(dense.data(), sparse.data(), go.data(), 1, gd.data(), gs.data());
        for (int k = 0; k < f * d; ++k) {
          const double r = k < d ? gd[static_cast<std::size_t>(k)] : gs[static_cast<std::size_t>(k - d)];
          ASSERT_NEAR(got_g[static_cast<std::size_t>(b * fstride + k)], r, 1e-4 * std::sqrt(f)) << "k=" << k;
        }
        for (int64_t k = f * d; k < fstride; ++k) ASSERT_TRUE(std::isnan(got_g[static_cast<std::size_t>(b * fstride + k)]));
      }
    }
  }
}

// 16-bit patterns of a float rounded to `t` (bf16 or fp16), and back; fp32 passes through.
float round_to(float v, DType t) {
  if (t == DType::bf16) return bf16_to_f32(f32_to_bf16(v));
  if (t == DType::f16) return f16_to_f32(f32_to_f16(v));
  return v;
}
std::vector<float> typed_to_host(const gpu::DeviceBuffer& b, std::size_t count, DType t) {
  if (t == DType::f32) return testing::to_host<float>(b, count);
  const auto bits = testing::to_host<uint16_t>(b, count);
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = t == DType::bf16 ? bf16_to_f32(bits[i]) : f16_to_f32(bits[i]);
  return out;
}
// A device buffer of n elements of type t, every one NaN.
gpu::DeviceBuffer poisoned_typed(std::size_t n, DType t) {
  if (t == DType::f32) return testing::poisoned_floats(n);
  return testing::to_device(std::vector<uint16_t>(n, t == DType::bf16 ? uint16_t{0x7FC0} : uint16_t{0x7E00}));
}

// Values exactly representable in t, and their device copy in t.
std::vector<float> representable(std::vector<float> v, DType t) {
  for (float& x : v) x = round_to(x, t);
  return v;
}
gpu::DeviceBuffer typed_to_device(const std::vector<float>& v, DType t) {
  if (t == DType::f32) return testing::to_device(v);
  std::vector<uint16_t> bits(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) bits[i] = t == DType::bf16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
  return testing::to_device(bits);
}

// In each operand type (z read in it, the copy written in it): out = x0 * z + x in fp32
// and its rounded copy; fp32 mode writes no copy, and a 16-bit-only run leaves the fp32
// output untouched.
TEST(CrossNetKernels, ForwardWritesTheSumAndItsOperandCopy) {
  HETREC_REQUIRE_GPU();
  const int64_t batch = 300, width = 257;
  const std::size_t n = static_cast<std::size_t>(batch * width);
  const auto x0 = normals(n, 51), x = normals(n, 52);
  gpu::DeviceBuffer dx0 = testing::to_device(x0), dx = testing::to_device(x);
  for (DType op : {DType::f32, DType::bf16, DType::f16}) {
    const auto z = representable(normals(n, 53), op);
    gpu::DeviceBuffer dz_in = typed_to_device(z, op);
    gpu::DeviceBuffer out = testing::poisoned_floats(n);
    gpu::DeviceBuffer out_op = poisoned_typed(n, op);
    kernels::cross_forward({batch, width}, dx0.as<float>(), dx.as<float>(), dz_in.get(), out.as<float>(),
                           op == DType::f32 ? nullptr : out_op.get(), op, nullptr);
    const auto o = testing::to_host<float>(out, n);
    const auto oc = typed_to_host(out_op, n, op);
    for (std::size_t e = 0; e < n; ++e) {
      const double ref = static_cast<double>(x0[e]) * z[e] + x[e];
      ASSERT_NEAR(o[e], ref, 1e-6 * (1 + std::fabs(ref))) << dtype_name(op) << " e=" << e;
      if (op == DType::f32) ASSERT_TRUE(std::isnan(oc[e])) << "fp32 mode wrote an operand copy";
      else ASSERT_EQ(oc[e], round_to(o[e], op)) << dtype_name(op) << " e=" << e;
    }
    if (op == DType::f32) continue;
    gpu::DeviceBuffer out2 = testing::poisoned_floats(n), out_op2 = poisoned_typed(n, op);
    kernels::cross_forward({batch, width}, dx0.as<float>(), dx.as<float>(), dz_in.get(), nullptr, out_op2.get(), op,
                           nullptr);
    const auto oc2 = typed_to_host(out_op2, n, op);
    for (std::size_t e = 0; e < n; ++e) ASSERT_EQ(oc2[e], oc[e]);
    for (float v : testing::to_host<float>(out2, n)) ASSERT_TRUE(std::isnan(v));
  }
}

// The 16-bit residual stream: x0, x and z in the operand type, v = x0 * z + x in fp32,
// written rounded (and in fp32 when asked). Widths that are not a multiple of the 8-wide
// vector, and operands one element off 16-byte alignment (the element-by-element path).
TEST(CrossNetKernels, SixteenBitStreamForwardAgainstDoubleReference) {
  HETREC_REQUIRE_GPU();
  for (DType op : {DType::bf16, DType::f16}) {
    for (auto [batch, width, offset] : {std::tuple<int64_t, int64_t, int64_t>{300, 257, 0}, {77, 3456, 0},
                                        {129, 64, 1}, {5, 3, 0}}) {
      const std::size_t n = static_cast<std::size_t>(batch * width);
      const auto x0 = representable(normals(n + 1, 71 + width), op), x = representable(normals(n + 1, 72 + width), op),
                 z = representable(normals(n + 1, 73 + width), op);
      gpu::DeviceBuffer dx0 = typed_to_device(x0, op), dx = typed_to_device(x, op), dzv = typed_to_device(z, op);
      gpu::DeviceBuffer out = testing::poisoned_floats(n + 1), out_op = poisoned_typed(n + 1, op);
      const std::size_t eb = dtype_size(op);
      auto at = [&](gpu::DeviceBuffer& b, std::size_t bytes) { return static_cast<char*>(b.get()) + offset * bytes; };
      kernels::cross_forward_16bit_stream({batch, width}, at(dx0, eb), at(dx, eb), at(dzv, eb),
                                          reinterpret_cast<float*>(at(out, 4)), at(out_op, eb), op, nullptr);
      const auto o = testing::to_host<float>(out, n + 1);
      const auto oc = typed_to_host(out_op, n + 1, op);
      for (std::size_t e = 0; e < n; ++e) {
        const std::size_t i = e + static_cast<std::size_t>(offset);
        const double ref = static_cast<double>(x0[i]) * z[i] + x[i];
        ASSERT_NEAR(o[i], ref, 1e-6 * (1 + std::fabs(ref))) << dtype_name(op) << " width=" << width << " e=" << e;
        ASSERT_EQ(oc[i], round_to(o[i], op)) << dtype_name(op) << " width=" << width << " e=" << e;
      }
      // Nothing outside the n elements was written.
      const std::size_t outside = offset ? 0 : n;
      ASSERT_TRUE(std::isnan(o[outside])) << "wrote past the output";
      ASSERT_TRUE(std::isnan(oc[outside])) << "wrote past the operand copy";
      // Only the 16-bit copy: the same bits.
      gpu::DeviceBuffer out_op2 = poisoned_typed(n + 1, op);
      kernels::cross_forward_16bit_stream({batch, width}, at(dx0, eb), at(dx, eb), at(dzv, eb), nullptr,
                                          at(out_op2, eb), op, nullptr);
      const auto oc2 = typed_to_host(out_op2, n + 1, op);
      for (std::size_t e = 0; e < n; ++e)
        ASSERT_EQ(oc2[e + static_cast<std::size_t>(offset)], oc[e + static_cast<std::size_t>(offset)]);
    }
  }
  gpu::DeviceBuffer b = testing::poisoned_floats(16);
  EXPECT_THROW(kernels::cross_forward_16bit_stream({2, 4}, b.get(), b.get(), b.get(), nullptr, b.get(), DType::f32,
                                                   nullptr),
               InternalError);
}

// Every kind of backward pass (tunable/cross_net/cross_backward_schedule.h): those of a
// five-layer net (no terms; one; two; a checkpoint with three terms and four z's; a
// bottom pass that accumulates, its z paired from G^(1)) and the bottom pass of three
// layers; z, h and dz in each operand type, the bias gradient against a double reference,
// and what a pass must leave alone bit for bit.
TEST(CrossNetKernels, BackwardPassesAgainstDoubleReference) {
  HETREC_REQUIRE_GPU();
  const int64_t batch = 700, width = 131;  // more rows than one column chunk
  const std::size_t n = static_cast<std::size_t>(batch * width);
  const auto g0 = normals(n, 61), x0 = normals(n, 63), acc0 = normals(n, 65);
  gpu::DeviceBuffer dx0v = testing::to_device(x0);
  const std::size_t ws_bytes = kernels::column_sum_workspace_bytes(batch, width);
  gpu::DeviceBuffer ws(ws_bytes);
  std::vector<kernels::CrossBackwardPass> passes = kernels::cross_backward_schedule(5);
  passes.push_back(kernels::cross_backward_schedule(3).back());
  for (DType op : {DType::f32, DType::bf16, DType::f16}) {
    std::vector<std::vector<float>> h, z;
    std::vector<gpu::DeviceBuffer> dh, dzs;
    for (int s = 0; s < kernels::kMaxCrossTerms; ++s) {
      h.push_back(representable(normals(n, 70 + static_cast<uint64_t>(s)), op));
      dh.push_back(typed_to_device(h.back(), op));
    }
    for (int j = 0; j <= kernels::kMaxCrossTerms; ++j) {
      z.push_back(representable(normals(n, 80 + static_cast<uint64_t>(j)), op));
      dzs.push_back(typed_to_device(z.back(), op));
    }
    const double unit = op == DType::bf16 ? 0x1p-8 : op == DType::f16 ? 0x1p-11 : 0.0;  // half an ulp, relative
    for (const kernels::CrossBackwardPass& p : passes) {
      const int terms = static_cast<int>(p.terms.size()), directs = static_cast<int>(p.direct.size());
      const std::string what = std::string(dtype_name(op)) + " pass of layer " + std::to_string(p.layer) + ": " +
                               std::to_string(terms) + " terms, " + std::to_string(directs) + " z's";
      gpu::DeviceBuffer dg = testing::to_device(g0);
      gpu::DeviceBuffer dacc = testing::to_device(acc0);
      gpu::DeviceBuffer dx0 = testing::poisoned_floats(n), dz = poisoned_typed(n, op);
      gpu::DeviceBuffer bias = testing::poisoned_floats(static_cast<std::size_t>(width));
      kernels::CrossBackward a;
      a.g = dg.as<float>();
      a.terms = terms;
      for (int s = 0; s < terms; ++s) a.h[s] = dh[static_cast<std::size_t>(s)].get();
      a.x0 = dx0v.as<float>();
      a.direct_terms = directs;
      for (int j = 0; j < directs; ++j) a.z[j] = dzs[static_cast<std::size_t>(j)].get();
      a.direct_first = p.direct_first;
      a.acc = dacc.as<float>();
      a.accumulate = p.accumulate;
      a.checkpoint = p.checkpoint;
      a.dx0 = p.bottom ? dx0.as<float>() : nullptr;
      a.dz = dz.get();
      a.op_type = op;
      a.bias_grad = bias.as<float>();
      kernels::cross_backward({batch, width}, a, ws.get(), ws_bytes, nullptr);
      const auto g = testing::to_host<float>(dg, n), acc = testing::to_host<float>(dacc, n);
      const auto gx0 = testing::to_host<float>(dx0, n), gz = typed_to_host(dz, n, op);
      const auto gb = testing::to_host<float>(bias, static_cast<std::size_t>(width));
      std::vector<double> bias_ref(static_cast<std::size_t>(width), 0.0), bias_abs(static_cast<std::size_t>(width), 0.0);
      for (std::size_t e = 0; e < n; ++e) {
        double G = g0[e], direct = p.accumulate ? static_cast<double>(acc0[e]) : 0.0;
        for (int st = 0; st <= terms; ++st) {
          const int j = st - p.direct_first;
          if (j >= 0 && j < directs) direct += G * z[static_cast<std::size_t>(j)][e];
          if (st < terms) G += h[static_cast<std::size_t>(st)][e];
        }
        const double d = G * x0[e];
        bias_ref[e % static_cast<std::size_t>(width)] += d;
        bias_abs[e % static_cast<std::size_t>(width)] += std::fabs(d);
        ASSERT_NEAR(gz[e], d, 1e-6 * (1 + std::fabs(d)) + unit * std::fabs(d)) << what << " e=" << e;
        if (p.checkpoint) {
          ASSERT_NEAR(g[e], G, 1e-6 * (1 + std::fabs(G))) << what << ": the checkpointed chain gradient";
          ASSERT_NEAR(acc[e], direct, 1e-5 * (1 + std::fabs(direct))) << what << ": the checkpointed direct part";
        } else {
          ASSERT_EQ(g[e], g0[e]) << what << " changed g";
          ASSERT_EQ(acc[e], acc0[e]) << what << " changed the accumulator";
        }
        if (p.bottom) ASSERT_NEAR(gx0[e], direct + G, 1e-5 * (1 + std::fabs(direct + G))) << what << " e=" << e;
        else ASSERT_TRUE(std::isnan(gx0[e])) << what << ": only the bottom pass writes dx0";
      }
      for (int64_t c = 0; c < width; ++c)
        ASSERT_NEAR(gb[static_cast<std::size_t>(c)], bias_ref[static_cast<std::size_t>(c)],
                    1e-6 * bias_abs[static_cast<std::size_t>(c)] + 1e-6)
            << what << " c=" << c;
    }
  }
}

TEST(ColumnSumKernels, PlainAndReluMasked) {
  HETREC_REQUIRE_GPU();
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {1000, 1}, {4097, 300}, {65536, 16}}) {
    const int64_t ld = cols + 3;
    const auto dy = normals(static_cast<std::size_t>(rows * ld), 61), y = normals(static_cast<std::size_t>(rows * ld), 62);
    gpu::DeviceBuffer ddy = testing::to_device(dy), dyv = testing::to_device(y);
    gpu::DeviceBuffer sums = testing::poisoned_floats(static_cast<std::size_t>(cols));
    gpu::DeviceBuffer masked_sums = testing::poisoned_floats(static_cast<std::size_t>(cols));
    const std::size_t ws_bytes = kernels::column_sum_workspace_bytes(rows, cols);
    gpu::DeviceBuffer ws(ws_bytes + 4);
    kernels::column_sum(ddy.as<float>(), rows, cols, ld, sums.as<float>(), ws.get(), ws_bytes, nullptr);
    kernels::relu_backward_column_sum(ddy.as<float>(), dyv.as<float>(), ddy.as<float>(), rows, cols, ld,
                                      masked_sums.as<float>(), ws.get(), ws_bytes, nullptr);
    const auto s = testing::to_host<float>(sums, static_cast<std::size_t>(cols));
    const auto ms = testing::to_host<float>(masked_sums, static_cast<std::size_t>(cols));
    const auto dz = testing::to_host<float>(ddy, static_cast<std::size_t>(rows * ld));
    for (int64_t c = 0; c < cols; ++c) {
      double ref = 0, ref_masked = 0, abs_sum = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const std::size_t e = static_cast<std::size_t>(r * ld + c);
        ref += dy[e];
        abs_sum += std::fabs(dy[e]);
        const double m = y[e] > 0 ? dy[e] : 0.0;
        ref_masked += m;
        ASSERT_EQ(dz[e], static_cast<float>(m));
      }
      ASSERT_NEAR(s[static_cast<std::size_t>(c)], ref, 1e-6 * abs_sum + 1e-6) << rows << "x" << cols << " c=" << c;
      ASSERT_NEAR(ms[static_cast<std::size_t>(c)], ref_masked, 1e-6 * abs_sum + 1e-6);
    }
  }
}

// The 16-bit dense path's ReLU backward: y read as the forward's 16-bit output, dz written
// as the 16-bit operand (its own leading dimension), the sums of the fp32 values; equal to
// the fp32 pass on the same (rounded) y, bit for bit in the sums.
TEST(ColumnSumKernels, ReluBackwardWith16BitOperands) {
  HETREC_REQUIRE_GPU();
  const int64_t rows = 3000, cols = 72, ld_dy = cols + 5;
  for (DType t : {DType::bf16, DType::f16}) {
    const auto dy = normals(static_cast<std::size_t>(rows * ld_dy), 71);
    const auto y32 = normals(static_cast<std::size_t>(rows * cols), 72);
    std::vector<uint16_t> y16(y32.size());
    std::vector<float> y_rounded(y32.size());
    for (std::size_t i = 0; i < y32.size(); ++i) {
      y16[i] = t == DType::bf16 ? f32_to_bf16(y32[i]) : f32_to_f16(y32[i]);
      y_rounded[i] = round_to(y32[i], t);
    }
    gpu::DeviceBuffer ddy = testing::to_device(dy), dy16 = testing::to_device(y16);
    gpu::DeviceBuffer dz = poisoned_typed(static_cast<std::size_t>(rows * cols), t);
    gpu::DeviceBuffer sums = testing::poisoned_floats(static_cast<std::size_t>(cols));
    const std::size_t ws_bytes = kernels::column_sum_workspace_bytes(rows, cols);
    gpu::DeviceBuffer ws(ws_bytes);
    kernels::relu_backward_column_sum(ddy.as<float>(), ld_dy, kernels::TypedMatrix{dy16.get(), t, cols},
                                      kernels::TypedMatrix{dz.get(), t, cols}, rows, cols, sums.as<float>(), ws.get(),
                                      ws_bytes, nullptr);
    // The fp32 pass on the rounded y, in a separate buffer.
    std::vector<float> dy_packed(static_cast<std::size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        dy_packed[static_cast<std::size_t>(r * cols + c)] = dy[static_cast<std::size_t>(r * ld_dy + c)];
    gpu::DeviceBuffer dp = testing::to_device(dy_packed), dyr = testing::to_device(y_rounded);
    gpu::DeviceBuffer sums32 = testing::poisoned_floats(static_cast<std::size_t>(cols));
    kernels::relu_backward_column_sum(dp.as<float>(), dyr.as<float>(), dp.as<float>(), rows, cols, cols,
                                      sums32.as<float>(), ws.get(), ws_bytes, nullptr);
    const auto got = typed_to_host(dz, static_cast<std::size_t>(rows * cols), t);
    const auto ref = testing::to_host<float>(dp, static_cast<std::size_t>(rows * cols));
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], round_to(ref[i], t)) << dtype_name(t) << " i=" << i;
    }
    EXPECT_EQ(testing::to_host<float>(sums, static_cast<std::size_t>(cols)),
              testing::to_host<float>(sums32, static_cast<std::size_t>(cols)));
  }
}

TEST(BceLossKernel, LossAndGradientMatchDoubleReference) {
  HETREC_REQUIRE_GPU();
  for (int64_t n : {int64_t{1}, int64_t{4095}, int64_t{4096}, int64_t{100003}}) {
    auto logits = normals(static_cast<std::size_t>(n * 2), 71, 4.0);  // stride 2: a column of a wider matrix
    logits[0] = 80.0f;                                                // far in the tails
    if (n > 1) logits[2] = -90.0f;
    Rng rng(72);
    std::vector<float> labels(static_cast<std::size_t>(n));
    for (float& y : labels) y = rng.uniform() < 0.3 ? 1.0f : 0.0f;
    gpu::DeviceBuffer dl = testing::to_device(logits), dy = testing::to_device(labels);
    gpu::DeviceBuffer grad = testing::poisoned_floats(static_cast<std::size_t>(n));
    gpu::DeviceBuffer loss = testing::to_device(std::vector<double>{-1.0});
    gpu::DeviceBuffer flag = testing::to_device(std::vector<int32_t>{0});
    const std::size_t ws_bytes = kernels::bce_loss_workspace_bytes(n);
    gpu::DeviceBuffer ws(ws_bytes);
    kernels::bce_with_logits(dl.as<float>(), 2, dy.as<float>(), n, grad.as<float>(), 1, loss.as<double>(),
                             flag.as<int32_t>(), ws.get(), ws_bytes, nullptr);
    const auto g = testing::to_host<float>(grad, static_cast<std::size_t>(n));
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = logits[static_cast<std::size_t>(2 * i)], y = labels[static_cast<std::size_t>(i)];
      ref += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
      const double sig = 1.0 / (1.0 + std::exp(-x));
      ASSERT_NEAR(g[static_cast<std::size_t>(i)], (sig - y) / static_cast<double>(n), 1e-7 / static_cast<double>(n) + 1e-12);
    }
    ref /= static_cast<double>(n);
    EXPECT_NEAR(testing::to_host<double>(loss, 1)[0], ref, 1e-12 * std::fabs(ref) + 1e-14);
    EXPECT_EQ(testing::to_host<int32_t>(flag, 1)[0], 0) << "a finite loss leaves the flag alone";
  }
}

// mean_over: a rank's share of a global-batch mean (loss and gradient divided by the
// global count instead of the local one).
TEST(BceLossKernel, MeanOverAGlobalBatchDividesByItsSize) {
  HETREC_REQUIRE_GPU();
  for (int64_t n : {int64_t{1}, int64_t{5000}}) {
    const int64_t global = 4 * n + 3;
    const auto logits = normals(static_cast<std::size_t>(n), 73, 3.0);
    Rng rng(74);
    std::vector<float> labels(static_cast<std::size_t>(n));
    for (float& y : labels) y = rng.uniform() < 0.4 ? 1.0f : 0.0f;
    gpu::DeviceBuffer dl = testing::to_device(logits), dy = testing::to_device(labels);
    gpu::DeviceBuffer grad = testing::poisoned_floats(static_cast<std::size_t>(n));
    gpu::DeviceBuffer loss = testing::to_device(std::vector<double>{-1.0});
    const std::size_t ws_bytes = kernels::bce_loss_workspace_bytes(n);
    gpu::DeviceBuffer ws(ws_bytes);
    kernels::bce_with_logits(dl.as<float>(), 1, dy.as<float>(), n, grad.as<float>(), 1, loss.as<double>(), nullptr,
                             ws.get(), ws_bytes, nullptr, nullptr, global);
    const auto g = testing::to_host<float>(grad, static_cast<std::size_t>(n));
    double ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = logits[static_cast<std::size_t>(i)], y = labels[static_cast<std::size_t>(i)];
      ref += std::max(x, 0.0) - x * y + std::log1p(std::exp(-std::fabs(x)));
      const double sig = 1.0 / (1.0 + std::exp(-x));
      ASSERT_NEAR(g[static_cast<std::size_t>(i)], (sig - y) / static_cast<double>(global),
                  1e-7 / static_cast<double>(global) + 1e-12);
    }
    ref /= static_cast<double>(global);
    EXPECT_NEAR(testing::to_host<double>(loss, 1)[0], ref, 1e-12 * std::fabs(ref) + 1e-14);
  }
}

TEST(BceLossKernel, NonFiniteLossRaisesTheSkipFlag) {
  HETREC_REQUIRE_GPU();
  std::vector<float> logits = {1.0f, std::nanf(""), -2.0f};
  gpu::DeviceBuffer dl = testing::to_device(logits), dy = testing::to_device(std::vector<float>{1, 0, 1});
  gpu::DeviceBuffer loss = testing::to_device(std::vector<double>{0.0});
  gpu::DeviceBuffer flag = testing::to_device(std::vector<int32_t>{0});
  gpu::DeviceBuffer ws(kernels::bce_loss_workspace_bytes(3));
  kernels::bce_with_logits(dl.as<float>(), 1, dy.as<float>(), 3, nullptr, 1, loss.as<double>(), flag.as<int32_t>(),
                           ws.get(), ws.bytes(), nullptr);
  EXPECT_TRUE(std::isnan(testing::to_host<double>(loss, 1)[0]));
  EXPECT_EQ(testing::to_host<int32_t>(flag, 1)[0], 1);
}

// The fused dense optimizers equal the CPU element-wise updates bit for bit, and a
// raised skip flag leaves every buffer untouched.
TEST(DenseOptimizerKernels, MatchCpuUpdatesBitForBit) {
  HETREC_REQUIRE_GPU();
  const int64_t n = 100003;
  const auto p0 = normals(static_cast<std::size_t>(n), 81), g = normals(static_cast<std::size_t>(n), 82, 0.1);
  auto s0 = normals(static_cast<std::size_t>(n), 83, 0.01);
  for (float& s : s0) s = std::fabs(s);
  const double lr = 0.0123, eps = 1e-8, beta1 = 0.9, beta2 = 0.999;
  for (int kind = 0; kind < 3; ++kind) {
    for (bool skip : {false, true}) {
      for (int64_t step : {int64_t{0}, int64_t{41}}) {
        std::vector<float> p = p0, s = s0, m = s0, v = s0;
        gpu::DeviceBuffer dp = testing::to_device(p), dg = testing::to_device(g), ds = testing::to_device(s),
                          dm = testing::to_device(m), dv = testing::to_device(v);
        kernels::StepScalars sc = kernels::make_step_scalars(0.0, lr, beta1, beta2, step);
        sc.skip_update = skip ? 1 : 0;
        gpu::DeviceBuffer dsc = testing::to_device(std::vector<kernels::StepScalars>{sc});
        const auto* scp = dsc.as<kernels::StepScalars>();
        if (kind == 0) {
          kernels::dense_sgd(dp.as<float>(), dg.as<float>(), n, scp, nullptr);
          if (!skip) sgd_update(p.data(), g.data(), n, lr);
        } else if (kind == 1) {
          kernels::dense_adagrad(dp.as<float>(), dg.as<float>(), ds.as<float>(), n, eps, scp, nullptr);
          if (!skip) adagrad_update(p.data(), g.data(), s.data(), n, lr, eps);
        } else {
          kernels::dense_adam(dp.as<float>(), dg.as<float>(), dm.as<float>(), dv.as<float>(), n, beta1, beta2, eps, scp,
                              nullptr);
          AdamHyper h;
          h.lr = lr;
          if (!skip) adam_update(p.data(), g.data(), m.data(), v.data(), n, h, step + 1);
        }
        EXPECT_EQ(testing::to_host<float>(dp, p.size()), p) << "kind " << kind << " skip " << skip;
        EXPECT_EQ(testing::to_host<float>(ds, s.size()), s) << "kind " << kind;
        EXPECT_EQ(testing::to_host<float>(dm, m.size()), m) << "kind " << kind;
        EXPECT_EQ(testing::to_host<float>(dv, v.size()), v) << "kind " << kind;
        if (!skip && kind == 0) {
          // And the rule itself, in double.
          const auto got = testing::to_host<float>(dp, p.size());
          for (int64_t i = 0; i < n; i += 97)
            ASSERT_NEAR(got[static_cast<std::size_t>(i)], p0[static_cast<std::size_t>(i)] - lr * g[static_cast<std::size_t>(i)], 1e-6);
        }
      }
    }
  }
}

// With a 16-bit copy (bf16 or fp16 dense compute) the fp32 update is unchanged, bit for
// bit, and the copy holds the updated value rounded to nearest even; a skipped step
// writes neither.
TEST(DenseOptimizerKernels, SixteenBitCopyIsTheRoundedUpdatedValue) {
  HETREC_REQUIRE_GPU();
  const int64_t n = 70001;
  const auto p0 = normals(static_cast<std::size_t>(n), 91), g = normals(static_cast<std::size_t>(n), 92, 0.1);
  auto s0 = normals(static_cast<std::size_t>(n), 93, 0.01);
  for (float& s : s0) s = std::fabs(s);
  const double lr = 0.0123, eps = 1e-8, beta1 = 0.9, beta2 = 0.999;
  constexpr uint16_t kPoison = 0xFFFF;  // a NaN in bf16 and fp16
  for (DType type : {DType::bf16, DType::f16}) {
    for (int kind = 0; kind < 3; ++kind) {
      for (bool skip : {false, true}) {
        std::vector<float> p = p0, s = s0, m = s0, v = s0;
        gpu::DeviceBuffer dp = testing::to_device(p), dg = testing::to_device(g), ds = testing::to_device(s),
                          dm = testing::to_device(m), dv = testing::to_device(v);
        gpu::DeviceBuffer dcopy = testing::to_device(std::vector<uint16_t>(static_cast<std::size_t>(n), kPoison));
        kernels::StepScalars sc = kernels::make_step_scalars(0.0, lr, beta1, beta2, 3);
        sc.skip_update = skip ? 1 : 0;
        gpu::DeviceBuffer dsc = testing::to_device(std::vector<kernels::StepScalars>{sc});
        const auto* scp = dsc.as<kernels::StepScalars>();
        const kernels::ParamCopy copy{dcopy.as<uint16_t>(), type};
        if (kind == 0) {
          kernels::dense_sgd(dp.as<float>(), dg.as<float>(), n, scp, nullptr, copy);
          if (!skip) sgd_update(p.data(), g.data(), n, lr);
        } else if (kind == 1) {
          kernels::dense_adagrad(dp.as<float>(), dg.as<float>(), ds.as<float>(), n, eps, scp, nullptr, copy);
          if (!skip) adagrad_update(p.data(), g.data(), s.data(), n, lr, eps);
        } else {
          kernels::dense_adam(dp.as<float>(), dg.as<float>(), dm.as<float>(), dv.as<float>(), n, beta1, beta2, eps,
                              scp, nullptr, copy);
          AdamHyper h;
          h.lr = lr;
          if (!skip) adam_update(p.data(), g.data(), m.data(), v.data(), n, h, 3 + 1);
        }
        const std::string what = std::string(dtype_name(type)) + " kind " + std::to_string(kind);
        EXPECT_EQ(testing::to_host<float>(dp, p.size()), p) << what << " skip " << skip;
        const auto got_copy = testing::to_host<uint16_t>(dcopy, static_cast<std::size_t>(n));
        // Half a unit in the last place: 2^-8 relative (bf16), 2^-11 (fp16 normals).
        const int half_ulp_exp = type == DType::bf16 ? -8 : -11;
        for (int64_t i = 0; i < n; ++i) {
          const auto k = static_cast<std::size_t>(i);
          if (skip) {
            ASSERT_EQ(got_copy[k], kPoison) << what << ": a skipped step wrote the copy at " << i;
            continue;
          }
          const uint16_t want = type == DType::bf16 ? f32_to_bf16(p[k]) : f32_to_f16(p[k]);
          ASSERT_EQ(got_copy[k], want) << what << " element " << i;
          const double back = type == DType::bf16 ? bf16_to_f32(got_copy[k]) : f16_to_f32(got_copy[k]);
          ASSERT_LE(std::fabs(back - static_cast<double>(p[k])),
                    std::max(std::ldexp(std::fabs(static_cast<double>(p[k])), half_ulp_exp), std::ldexp(1.0, -25)))
              << what << " element " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace hetrec

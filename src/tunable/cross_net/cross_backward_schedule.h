#pragma once
// The order of the DCNv2 cross net's backward passes (model/gpu/gpu_cross_net.cpp), as plain
// data shared by the engine and the planner's step and memory models, so both price the
// passes the engine runs.
//
// With G_l = dL/dx_l, a layer x_{l+1} = x0 * z_l + x_l has dz_l = G_{l+1} * x0, adds its
// chain term h_l = dz_l (U V or W) to the chain, G_l = G_{l+1} + h_l, and its direct part
// z_l * G_{l+1} to dL/dx0. Rather than keep the chain and the direct part as fp32 running
// sums that every layer reads and rewrites, a pass rebuilds G_{l+1} from the fp32 gradient
// g of the last checkpoint and the 16-bit (or fp32) terms h of the layers between, and
// only the bottom layer forms the direct part, from every layer's z: for three layers
// the middle passes write nothing but dz. A pass adds at most kMaxCrossTerms terms; when
// it would add more, that pass is a checkpoint: it writes g = G_{l+1} and the direct
// part so far to the fp32 accumulator, and the terms start again. The fp32 additions are
// the running sums' own, in the same order: the outputs are bit for bit those of a
// running-sum backward.
#include <vector>

namespace hetrec::kernels {

// Chain terms one pass adds (the kernel's h operands; it also takes kMaxCrossTerms + 1 z's).
inline constexpr int kMaxCrossTerms = 3;

struct CrossBackwardPass {
  int layer = 0;
  std::vector<int> terms;   // layers whose chain terms h this pass adds to g, top first; terms[s] is in buffer s
  std::vector<int> direct;  // layers whose z_l * G_{l+1} this pass adds to the direct part, top first
  // direct[i] multiplies G^(i + direct_first), where G^(0) = g and G^(s+1) = G^(s) + h of terms[s].
  int direct_first = 0;
  bool accumulate = false;  // the direct part starts from the fp32 accumulator
  bool checkpoint = false;  // writes g = G_{l+1} and the accumulator = the direct part
  bool bottom = false;      // writes dx0 = direct part + G_1; the layer's chain term is then added to dx0
  int term_slot = -1;       // the buffer this layer's chain term goes to (-1: the bottom's, into dx0)
  bool operator==(const CrossBackwardPass&) const = default;
};

// The passes of a backward through `layers` layers, from the top layer down.
inline std::vector<CrossBackwardPass> cross_backward_schedule(int layers) {
  std::vector<CrossBackwardPass> passes;
  std::vector<int> terms, zs;  // since the last checkpoint: layers whose h are pending, whose z are
  int first = 0;               // zs[0] multiplies G^(first)
  bool acc_live = false;
  for (int l = layers - 1; l >= 0; --l) {
    CrossBackwardPass p;
    p.layer = l;
    p.terms = terms;
    p.bottom = l == 0;
    p.checkpoint = !p.bottom && static_cast<int>(terms.size()) == kMaxCrossTerms;
    if (p.bottom || p.checkpoint) {
      p.direct = zs;
      p.direct.push_back(l);
      p.direct_first = first;
      p.accumulate = acc_live;
    }
    if (p.checkpoint) {
      acc_live = true;
      terms.clear();
      zs.clear();
      first = 1;  // the next z pairs with g + the next h
    } else {
      zs.push_back(l);
    }
    if (!p.bottom) {
      p.term_slot = static_cast<int>(terms.size());
      terms.push_back(l);
    }
    passes.push_back(p);
  }
  return passes;
}

// Chain-term buffers the schedule uses (batch x width in the GEMMs' operand type each).
inline int cross_backward_term_buffers(int layers) {
  int most = 0;
  for (const CrossBackwardPass& p : cross_backward_schedule(layers)) most = p.term_slot + 1 > most ? p.term_slot + 1 : most;
  return most;
}

// Whether the schedule keeps the fp32 accumulator of the direct part (a checkpoint).
inline bool cross_backward_uses_accumulator(int layers) {
  for (const CrossBackwardPass& p : cross_backward_schedule(layers))
    if (p.checkpoint) return true;
  return false;
}

// What one pass moves per element of the batch x width matrix, in fp32 values and values of
// the operand type: g and x0 read (fp32), each term h and z read and dz written (operand
// type), the accumulator read and written where the pass does, g rewritten at a
// checkpoint, dx0 written at the bottom.
struct CrossPassTraffic {
  int f32_reads = 0, op_reads = 0, f32_writes = 0, op_writes = 0;
  double bytes(double op_bytes) const {
    constexpr double kF32 = 4.0;
    return (f32_reads + f32_writes) * kF32 + (op_reads + op_writes) * op_bytes;
  }
};
inline CrossPassTraffic cross_backward_pass_traffic(const CrossBackwardPass& p) {
  CrossPassTraffic t;
  t.f32_reads = 2 + (p.accumulate ? 1 : 0);
  t.op_reads = static_cast<int>(p.terms.size() + p.direct.size());
  t.f32_writes = (p.checkpoint ? 2 : 0) + (p.bottom ? 1 : 0);
  t.op_writes = 1;
  return t;
}

}  // namespace hetrec::kernels

#pragma once
// Comparing two training trajectories that are expected to part by rounding (a bf16
// embedding exchange against an fp32 one, or N ranks' rounding against one rank's): the
// drift of a tensor is |a - b| / |b - b0| (Euclidean norms over its elements; b0 the
// start), how far the two ended apart relative to how far training moved the reference.
// A missing or misplaced piece of a model drifts by about 1; rounding by far less.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/tensor.h"
#include "model/model.h"

namespace hetrec::testing {

// A deep copy of a model's state (state() and gathers may hand out live or reused memory).
inline std::vector<NamedTensor> copied_state(const std::vector<NamedTensor>& state) {
  std::vector<NamedTensor> out;
  for (const NamedTensor& t : state) {
    Tensor c = Tensor::empty(t.tensor.shape(), t.tensor.dtype());
    std::memcpy(c.raw(), t.tensor.raw(), t.tensor.nbytes());
    out.push_back({t.name, c});
  }
  return out;
}

// Element i of an fp32, fp16 or bf16 tensor.
inline double state_value(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f16: return f16_to_f32(t.data<uint16_t>()[i]);
    case DType::bf16: return bf16_to_f32(t.data<uint16_t>()[i]);
    default: return t.data<float>()[i];
  }
}

inline double drift(const Tensor& a, const Tensor& b, const Tensor& b0) {
  double apart = 0.0, moved = 0.0;
  for (int64_t i = 0; i < b.numel(); ++i) {
    const double x = state_value(a, i), y = state_value(b, i), y0 = state_value(b0, i);
    apart += (x - y) * (x - y);
    moved += (y - y0) * (y - y0);
  }
  return std::sqrt(apart) / std::max(std::sqrt(moved), 1e-30);
}

// Expects every fp32 tensor of `got` within `bound` drift of `ref` (both from `start`,
// the same names in the same order); returns the largest drift.
inline double expect_fp32_drift_within(const std::vector<NamedTensor>& got, const std::vector<NamedTensor>& ref,
                                       const std::vector<NamedTensor>& start, double bound, const std::string& what) {
  EXPECT_EQ(got.size(), ref.size());
  EXPECT_EQ(start.size(), ref.size());
  double largest = 0.0;
  for (std::size_t k = 0; k < ref.size() && k < got.size() && k < start.size(); ++k) {
    if (ref[k].tensor.dtype() != DType::f32) continue;
    const double d = drift(got[k].tensor, ref[k].tensor, start[k].tensor);
    EXPECT_LE(d, bound) << ref[k].name << ": " << what;
    largest = std::max(largest, d);
  }
  return largest;
}

}  // namespace hetrec::testing

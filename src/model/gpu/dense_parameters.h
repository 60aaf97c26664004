#pragma once
// Every dense parameter of a model in one flat fp32 device buffer, with the gradients
// and the optimizer slots in parallel buffers of the same layout, so one fused kernel
// updates them all. Each tensor starts on a 256-byte boundary (what the GEMMs assume);
// the padding between tensors is zero in every buffer and stays zero.
//
// With 16-bit (bf16 or fp16) dense compute the fp32 values stay the master copy (the
// optimizer and its state work on them) and a 16-bit copy of the whole buffer, same
// layout, is what the 16-bit GEMMs read; the optimizer kernel refreshes it in the same
// pass as the update.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gpu/platform.h"
#include "kernels/dense_optimizer.h"
#include "kernels/step_scalars.h"
#include "model/gpu/device_mirror.h"
#include "model/model_config.h"
#include "optim/dense_param.h"

namespace hetrec::inline model::gpu_model {

class DenseParameters {
 public:
  // Copies the values of `params` (host, fp32, in the model's state order) to the device,
  // with a 16-bit copy when copy_type is bf16 or f16 (f32: none), and creates the
  // optimizer slots of optim.dense (Adagrad "<p>.sum" filled with
  // optim.adagrad_initial_accumulator, Adam "<p>.exp_avg" and "<p>.exp_avg_sq" zeroed).
  DenseParameters(const std::vector<DenseParam>& params, const OptimConfig& optim, Allocator& device,
                  gpu::stream_t stream, DType copy_type = DType::f32);

  int count() const { return static_cast<int>(entries_.size()); }
  float* value(int i) const { return base(values_) + entries_.at(static_cast<std::size_t>(i)).offset; }
  float* grad(int i) const { return base(grads_) + entries_.at(static_cast<std::size_t>(i)).offset; }
  int64_t total_elements() const;  // parameters without padding
  // The 16-bit copy of parameter i (nullptr without one).
  const uint16_t* value_16bit(int i) const {
    return values_16bit_.defined() ? values_16bit_.data<uint16_t>() + entries_.at(static_cast<std::size_t>(i)).offset
                                   : nullptr;
  }
  // Recomputes the 16-bit copy from the fp32 values (after they were written from the host).
  void refresh_16bit(gpu::stream_t stream);
  // The flat gradient buffer (fp16 loss scaling unscales it in place).
  float* flat_grads() const { return base(grads_); }
  int64_t flat_elements() const { return flat_elements_; }

  // The fused optimizer step over the whole buffer (reads lr and step from `scalars`).
  void step(const kernels::StepScalars* scalars, gpu::stream_t stream);

  // Mirrors in the CPU model's order: the parameters, then the slots in parameter order.
  const std::vector<DeviceMirror>& parameter_mirrors() const { return param_mirrors_; }
  const std::vector<DeviceMirror>& slot_mirrors() const { return slot_mirrors_; }
  std::string optimizer_name() const;

 private:
  struct Entry {
    std::string name;
    std::vector<int64_t> shape;
    int64_t offset = 0;
    int64_t numel = 0;
  };
  static float* base(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }
  kernels::ParamCopy copy16() const {
    return {values_16bit_.defined() ? values_16bit_.data<uint16_t>() : nullptr, values_16bit_.dtype()};
  }

  OptimConfig optim_;
  std::vector<Entry> entries_;
  int64_t flat_elements_ = 0;
  Tensor values_, grads_, slot_a_, slot_b_;  // slot_a: Adagrad sum / Adam exp_avg; slot_b: Adam exp_avg_sq
  Tensor values_16bit_;  // 16-bit dense compute: the GEMMs' copy of values_ (bf16 or f16)
  std::vector<DeviceMirror> param_mirrors_, slot_mirrors_;
};

}  // namespace hetrec::model::gpu_model

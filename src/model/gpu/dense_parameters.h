#pragma once
// Every dense parameter of a model in one flat fp32 device buffer, with the gradients
// and the optimizer slots in parallel buffers of the same layout, so one fused kernel
// updates them all. Each tensor starts on a 256-byte boundary (what the GEMMs assume);
// the padding between tensors is zero in every buffer and stays zero.
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gpu/platform.h"
#include "kernels/step_scalars.h"
#include "model/gpu/device_mirror.h"
#include "model/model_config.h"
#include "optim/dense_param.h"

namespace hetrec::gpu_model {

class DenseParameters {
 public:
  // Copies the values of `params` (host, fp32, in the model's state order) to the device
  // and creates the optimizer slots of optim.dense (Adagrad "<p>.sum" filled with
  // optim.adagrad_initial_accumulator, Adam "<p>.exp_avg" and "<p>.exp_avg_sq" zeroed).
  DenseParameters(const std::vector<DenseParam>& params, const OptimConfig& optim, Allocator& device,
                  gpu::stream_t stream);

  int count() const { return static_cast<int>(entries_.size()); }
  float* value(int i) const { return base(values_) + entries_.at(static_cast<std::size_t>(i)).offset; }
  float* grad(int i) const { return base(grads_) + entries_.at(static_cast<std::size_t>(i)).offset; }
  int64_t total_elements() const;  // parameters without padding

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

  OptimConfig optim_;
  std::vector<Entry> entries_;
  int64_t flat_elements_ = 0;
  Tensor values_, grads_, slot_a_, slot_b_;  // slot_a: Adagrad sum / Adam exp_avg; slot_b: Adam exp_avg_sq
  std::vector<DeviceMirror> param_mirrors_, slot_mirrors_;
};

}  // namespace hetrec::gpu_model

#include "model/gpu/dense_parameters.h"

#include <vector>

#include "core/error.h"
#include "gpu/memory.h"
#include "kernels/convert.h"
#include "kernels/dense_optimizer.h"
#include "model/gpu/dense_layout.h"

namespace hetrec::inline model::gpu_model {

namespace {
Tensor device_zeros(int64_t n, Allocator& device, gpu::stream_t stream) {
  Tensor t = Tensor::empty({n}, DType::f32, device);
  gpu::memset_async(t.raw(), 0, t.nbytes(), stream);
  return t;
}
}  // namespace

DenseParameters::DenseParameters(const std::vector<DenseParam>& params, const OptimConfig& optim, Allocator& device,
                                 gpu::stream_t stream, DType copy_type)
    : optim_(optim) {
  int64_t offset = 0;
  for (const DenseParam& p : params) {
    if (p.value.dtype() != DType::f32 || !p.value.is_contiguous())
      throw InternalError("DenseParameters: " + p.name + " must be a contiguous fp32 tensor");
    Entry e;
    e.name = p.name;
    e.shape = p.value.shape();
    e.offset = offset;
    e.numel = p.value.numel();
    offset += dense_padded_elements(e.numel);
    entries_.push_back(std::move(e));
  }
  flat_elements_ = dense_flat_elements(offset);
  values_ = device_zeros(flat_elements_, device, stream);
  grads_ = device_zeros(flat_elements_, device, stream);
  switch (optim.dense) {
    case OptimizerKind::sgd: break;
    case OptimizerKind::adagrad: {
      slot_a_ = device_zeros(flat_elements_, device, stream);
      break;
    }
    case OptimizerKind::adam:
      slot_a_ = device_zeros(flat_elements_, device, stream);
      slot_b_ = device_zeros(flat_elements_, device, stream);
      break;
    default:
      throw ConfigError("optim.dense: expected sgd, adagrad or adam for the dense parameters");
  }

  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    // The host tensor of the mirror is the caller's value tensor's copy: it holds the
    // initial values, uploaded here.
    Tensor host = Tensor::empty(e.shape, DType::f32);
    std::copy(params[i].value.data<float>(), params[i].value.data<float>() + e.numel, host.data<float>());
    param_mirrors_.push_back({e.name, host, base(values_) + e.offset});
  }
  upload(param_mirrors_, stream);

  for (const Entry& e : entries_) {
    if (optim.dense == OptimizerKind::adagrad) {
      Tensor host = Tensor::empty(e.shape, DType::f32);
      const auto initial = static_cast<float>(optim.adagrad_initial_accumulator);
      std::fill(host.data<float>(), host.data<float>() + e.numel, initial);
      slot_mirrors_.push_back({e.name + ".sum", host, base(slot_a_) + e.offset});
    } else if (optim.dense == OptimizerKind::adam) {
      slot_mirrors_.push_back({e.name + ".exp_avg", Tensor::zeros(e.shape, DType::f32), base(slot_a_) + e.offset});
      slot_mirrors_.push_back({e.name + ".exp_avg_sq", Tensor::zeros(e.shape, DType::f32), base(slot_b_) + e.offset});
    }
  }
  upload(slot_mirrors_, stream);
  if (copy_type == DType::bf16 || copy_type == DType::f16) {
    values_16bit_ = Tensor::empty({flat_elements_}, copy_type, device);
    refresh_16bit(stream);
  } else if (copy_type != DType::f32) {
    throw InternalError("DenseParameters: the parameter copy must be bf16 or fp16");
  }
}

void DenseParameters::refresh_16bit(gpu::stream_t stream) {
  if (!values_16bit_.defined()) return;
  kernels::f32_to_16bit_matrix(base(values_), flat_elements_, values_16bit_.data<uint16_t>(), flat_elements_, 1,
                               flat_elements_, values_16bit_.dtype(), stream);
}

int64_t DenseParameters::total_elements() const {
  int64_t n = 0;
  for (const Entry& e : entries_) n += e.numel;
  return n;
}

void DenseParameters::step(const kernels::StepScalars* scalars, gpu::stream_t stream) {
  switch (optim_.dense) {
    case OptimizerKind::sgd:
      kernels::dense_sgd(base(values_), base(grads_), flat_elements_, scalars, stream, copy16());
      return;
    case OptimizerKind::adagrad:
      kernels::dense_adagrad(base(values_), base(grads_), base(slot_a_), flat_elements_, optim_.eps, scalars, stream,
                             copy16());
      return;
    case OptimizerKind::adam:
      kernels::dense_adam(base(values_), base(grads_), base(slot_a_), base(slot_b_), flat_elements_, optim_.beta1,
                          optim_.beta2, optim_.eps, scalars, stream, copy16());
      return;
    default: throw InternalError("DenseParameters::step: not a dense optimizer");
  }
}

std::string DenseParameters::optimizer_name() const {
  switch (optim_.dense) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::adagrad: return "adagrad";
    case OptimizerKind::adam: return "adam";
    default: return "?";
  }
}

}  // namespace hetrec::model::gpu_model

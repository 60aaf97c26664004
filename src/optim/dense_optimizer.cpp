#include "optim/dense_optimizer.h"

#include <cmath>
#include <string>

#include "core/error.h"

namespace hetrec::inline optim {
namespace {

// Element counts below which a parallel region costs more than the loop it splits.
constexpr int64_t kParallelMinElements = int64_t{1} << 15;

}  // namespace

void sgd_update(float* param, const float* grad, int64_t n, double lr) {
  const auto alpha = static_cast<float>(-lr);  // param.add_(grad, alpha=-lr)
#pragma omp parallel for simd schedule(static) if (n > kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) param[i] = param[i] + alpha * grad[i];
}

void adagrad_update(float* param, const float* grad, float* sum, int64_t n, double lr, double eps) {
  const auto value = static_cast<float>(-lr);  // param.addcdiv_(grad, std, value=-clr)
  const auto eps_f = static_cast<float>(eps);
#pragma omp parallel for simd schedule(static) if (n > kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float s = sum[i] + g * g;  // state_sum.addcmul_(grad, grad, value=1)
    sum[i] = s;
    const float denom = std::sqrt(s) + eps_f;  // state_sum.sqrt().add_(eps)
    param[i] = param[i] + value * g / denom;
  }
}

void adam_update(float* param, const float* grad, float* exp_avg, float* exp_avg_sq, int64_t n,
                 const AdamHyper& hyper, int64_t step) {
  // Python-side scalars, computed in double as torch does, then cast to the tensor type.
  const double bias_correction1 = 1.0 - std::pow(hyper.beta1, static_cast<double>(step));
  const double bias_correction2 = 1.0 - std::pow(hyper.beta2, static_cast<double>(step));
  const auto neg_step_size = static_cast<float>(-(hyper.lr / bias_correction1));
  const auto bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
  const auto weight = static_cast<float>(1.0 - hyper.beta1);
  const auto beta2 = static_cast<float>(hyper.beta2);
  const auto one_minus_beta2 = static_cast<float>(1.0 - hyper.beta2);
  const auto eps = static_cast<float>(hyper.eps);
  // at::lerp switches formula at |weight| = 0.5 to stay exact at both ends.
  const bool small_weight = std::abs(weight) < 0.5f;
#pragma omp parallel for simd schedule(static) if (n > kParallelMinElements)
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    const float m0 = exp_avg[i];
    const float m = small_weight ? m0 + weight * (g - m0) : g - (g - m0) * (1.0f - weight);  // lerp_
    exp_avg[i] = m;
    const float v = exp_avg_sq[i] * beta2 + one_minus_beta2 * g * g;  // mul_(beta2).addcmul_
    exp_avg_sq[i] = v;
    const float denom = std::sqrt(v) / bias_correction2_sqrt + eps;
    param[i] = param[i] + neg_step_size * m / denom;  // addcdiv_(exp_avg, denom, value=-step_size)
  }
}

namespace {

float* f32(const Tensor& t) { return t.data<float>(); }

Tensor filled_like(const Tensor& t, float value) {
  Tensor out = Tensor::empty(t.shape(), DType::f32);
  float* p = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] = value;
  return out;
}

class SgdOptimizer final : public DenseOptimizer {
 public:
  explicit SgdOptimizer(std::vector<DenseParam> params) : params_(std::move(params)) {}
  void step(double lr, int64_t) override {
    for (const DenseParam& p : params_) sgd_update(f32(p.value), f32(p.grad), p.value.numel(), lr);
  }
  std::vector<NamedTensor> state() const override { return {}; }
  std::string name() const override { return "sgd"; }

 private:
  std::vector<DenseParam> params_;
};

class AdagradOptimizer final : public DenseOptimizer {
 public:
  AdagradOptimizer(std::vector<DenseParam> params, double initial_accumulator, double eps)
      : params_(std::move(params)), eps_(eps) {
    // state_sum = torch.full_like(p, initial_accumulator_value)
    for (const DenseParam& p : params_) sums_.push_back(filled_like(p.value, static_cast<float>(initial_accumulator)));
  }
  void step(double lr, int64_t) override {
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const DenseParam& p = params_[i];
      adagrad_update(f32(p.value), f32(p.grad), f32(sums_[i]), p.value.numel(), lr, eps_);
    }
  }
  std::vector<NamedTensor> state() const override {
    std::vector<NamedTensor> out;
    for (std::size_t i = 0; i < params_.size(); ++i) out.push_back({params_[i].name + ".sum", sums_[i]});
    return out;
  }
  std::string name() const override { return "adagrad"; }

 private:
  std::vector<DenseParam> params_;
  std::vector<Tensor> sums_;
  double eps_;
};

class AdamOptimizer final : public DenseOptimizer {
 public:
  AdamOptimizer(std::vector<DenseParam> params, const AdamHyper& hyper) : params_(std::move(params)), hyper_(hyper) {
    for (const DenseParam& p : params_) {
      exp_avg_.push_back(filled_like(p.value, 0.0f));
      exp_avg_sq_.push_back(filled_like(p.value, 0.0f));
    }
  }
  void step(double lr, int64_t step) override {
    HETREC_CHECK(step >= 1, "Adam step " + std::to_string(step) + ": steps count from 1");
    AdamHyper h = hyper_;
    h.lr = lr;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      const DenseParam& p = params_[i];
      adam_update(f32(p.value), f32(p.grad), f32(exp_avg_[i]), f32(exp_avg_sq_[i]), p.value.numel(), h, step);
    }
  }
  std::vector<NamedTensor> state() const override {
    std::vector<NamedTensor> out;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      out.push_back({params_[i].name + ".exp_avg", exp_avg_[i]});
      out.push_back({params_[i].name + ".exp_avg_sq", exp_avg_sq_[i]});
    }
    return out;
  }
  std::string name() const override { return "adam"; }

 private:
  std::vector<DenseParam> params_;
  AdamHyper hyper_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;
};

void check_range(double value, double lo, double hi, bool hi_open, const char* key) {
  if (!(value >= lo && (hi_open ? value < hi : value <= hi)))
    throw ConfigError(std::string(key) + " = " + std::to_string(value) + ": expected a value in [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + (hi_open ? ")" : "]"));
}

constexpr double kUnbounded = 1e300;

}  // namespace

std::unique_ptr<DenseOptimizer> DenseOptimizer::create(const OptimConfig& config, std::vector<DenseParam> params) {
  for (const DenseParam& p : params) {
    if (p.value.dtype() != DType::f32 || p.grad.dtype() != DType::f32 || p.value.numel() != p.grad.numel() ||
        !p.value.is_contiguous() || !p.grad.is_contiguous())
      throw InternalError("dense optimizer: parameter " + p.name + " needs contiguous fp32 value and gradient of " +
                          "equal size, got " + p.value.shape_str() + " and " + p.grad.shape_str());
  }
  switch (config.dense) {
    case OptimizerKind::sgd:
      return std::make_unique<SgdOptimizer>(std::move(params));
    case OptimizerKind::adagrad:
      check_range(config.eps, 0.0, kUnbounded, false, "optim.eps");
      check_range(config.adagrad_initial_accumulator, 0.0, kUnbounded, false, "optim.adagrad_initial_accumulator");
      return std::make_unique<AdagradOptimizer>(std::move(params), config.adagrad_initial_accumulator, config.eps);
    case OptimizerKind::adam: {
      check_range(config.eps, 0.0, kUnbounded, false, "optim.eps");
      check_range(config.beta1, 0.0, 1.0, true, "optim.beta1");
      check_range(config.beta2, 0.0, 1.0, true, "optim.beta2");
      AdamHyper hyper;
      hyper.beta1 = config.beta1;
      hyper.beta2 = config.beta2;
      hyper.eps = config.eps;
      return std::make_unique<AdamOptimizer>(std::move(params), hyper);
    }
    case OptimizerKind::rowwise_adagrad:
      break;
  }
  throw ConfigError("optim.dense: row-wise Adagrad is a sparse (embedding) optimizer; the dense optimizer must be "
                    "sgd, adagrad or adam");
}

}  // namespace hetrec::optim::optim

#include "model/state_check.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/dtype.h"

namespace hetrec::inline model {
namespace {

constexpr const char* kSlotSuffixes[] = {".sum", ".exp_avg", ".exp_avg_sq", ".accumulator"};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <class Convert>
int64_t first_bad(const void* data, int64_t n, double bound, Convert convert) {
  // The lowest failing index (n when none), in parallel: a state can be gigabytes.
  int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double v = convert(data, i);
    if (!std::isfinite(v) || std::fabs(v) > bound) first = i < first ? i : first;
  }
  return first;
}

// The index of the first element that is non-finite or beyond `bound` (n when none);
// -1 for a dtype that is not checked.
int64_t first_bad_element(const Tensor& t, double bound) {
  if (t.device().kind != DeviceKind::cpu || !t.is_contiguous()) return -1;  // state() gives host tensors
  const int64_t n = t.numel();
  const void* p = t.raw();
  switch (t.dtype()) {
    case DType::f32:
      return first_bad(p, n, bound, [](const void* d, int64_t i) { return double(static_cast<const float*>(d)[i]); });
    case DType::f64:
      return first_bad(p, n, bound, [](const void* d, int64_t i) { return static_cast<const double*>(d)[i]; });
    case DType::f16:
      return first_bad(p, n, bound,
                       [](const void* d, int64_t i) { return double(f16_to_f32(static_cast<const uint16_t*>(d)[i])); });
    case DType::bf16:
      return first_bad(p, n, bound,
                       [](const void* d, int64_t i) { return double(bf16_to_f32(static_cast<const uint16_t*>(d)[i])); });
    default:
      return -1;
  }
}

double element_value(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::f32: return t.data<float>()[i];
    case DType::f64: return t.data<double>()[i];
    case DType::f16: return f16_to_f32(t.data<uint16_t>()[i]);
    case DType::bf16: return bf16_to_f32(t.data<uint16_t>()[i]);
    default: return 0.0;
  }
}

}  // namespace

bool is_optimizer_slot(const std::string& tensor_name) {
  const std::string name = tensor_name.substr(0, tensor_name.find('@'));  // a shard "<name>@<row>,<col>"
  for (const char* suffix : kSlotSuffixes)
    if (ends_with(name, suffix)) return true;
  return false;
}

std::string value_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string StateViolation::describe() const {
  std::string s = std::string(parameter ? "parameter '" : "optimizer slot '") + tensor + "' element " +
                  std::to_string(index) + " is " + value_text(value);
  if (std::isfinite(value)) s += ", beyond +-" + value_text(kParameterBound);
  return s;
}

std::optional<StateViolation> find_state_violation(const std::vector<NamedTensor>& state) {
  for (const NamedTensor& nt : state) {
    const bool parameter = !is_optimizer_slot(nt.name);
    const double bound = parameter ? kParameterBound : std::numeric_limits<double>::infinity();
    const int64_t i = first_bad_element(nt.tensor, bound);
    if (i < 0 || i == nt.tensor.numel()) continue;
    return StateViolation{nt.name, i, element_value(nt.tensor, i), parameter};
  }
  return std::nullopt;
}

}  // namespace hetrec::model::model

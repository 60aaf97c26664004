#include "model/gpu/device_state_check.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "gpu/device_buffer.h"
#include "gpu/memory.h"
#include "kernels/state_scan.h"

namespace hetrec::inline model::gpu_model {

namespace {

// The value of element `index` of a device buffer of `type`, read back for the message.
double element_value(const DeviceMirror& m, int64_t index) {
  const DType type = m.host.dtype();
  const std::size_t esize = dtype_size(type);
  unsigned char bytes[8] = {};
  gpu::memcpy_sync(bytes, static_cast<const char*>(m.device) + static_cast<std::size_t>(index) * esize, esize,
                   gpu::CopyKind::device_to_host);
  return load_as_f32(bytes, 0, type);
}

}  // namespace

std::optional<StateViolation> device_state_violation(std::initializer_list<const std::vector<DeviceMirror>*> lists,
                                                     gpu::Stream& stream) {
  std::vector<const DeviceMirror*> scanned;
  for (const std::vector<DeviceMirror>* list : lists)
    for (const DeviceMirror& m : *list) {
      const DType t = m.host.dtype();
      if (t == DType::f32 || t == DType::bf16 || t == DType::f16) {
        scanned.push_back(&m);
      } else if (t == DType::f64) {
        // No device scan for fp64: this buffer alone goes through a host copy.
        gpu::memcpy_sync(m.host.raw(), m.device, m.host.nbytes(), gpu::CopyKind::device_to_host);
        scanned.push_back(&m);
      }
    }
  const gpu::stream_t s = stream.get();
  gpu::DeviceBuffer first_device(std::max<std::size_t>(scanned.size(), 1) * sizeof(int64_t));
  for (std::size_t i = 0; i < scanned.size(); ++i) {
    const DeviceMirror& m = *scanned[i];
    if (m.host.dtype() == DType::f64) continue;
    const float bound =
        is_optimizer_slot(m.name) ? std::numeric_limits<float>::infinity() : static_cast<float>(kParameterBound);
    kernels::find_first_out_of_bound(m.host.dtype(), m.device, m.host.numel(), bound, first_device.as<int64_t>() + i,
                                     s);
  }
  std::vector<int64_t> found(scanned.size());
  gpu::memcpy_async(found.data(), first_device.get(), found.size() * sizeof(int64_t), gpu::CopyKind::device_to_host, s);
  stream.synchronize();
  for (std::size_t i = 0; i < scanned.size(); ++i) {
    const DeviceMirror& m = *scanned[i];
    if (m.host.dtype() == DType::f64) {
      if (std::optional<StateViolation> v = find_state_violation({{m.name, m.host}})) return v;
      continue;
    }
    if (found[i] >= m.host.numel()) continue;
    return StateViolation{m.name, found[i], element_value(m, found[i]), !is_optimizer_slot(m.name)};
  }
  return std::nullopt;
}

}  // namespace hetrec::model::gpu_model

#include "model/gpu/device_mirror.h"

#include "gpu/memory.h"

namespace hetrec::inline model::gpu_model {

void download(const std::vector<DeviceMirror>& mirrors, gpu::stream_t stream) {
  for (const DeviceMirror& m : mirrors)
    gpu::memcpy_async(m.host.raw(), m.device, m.host.nbytes(), gpu::CopyKind::any, stream);
}

void upload(const std::vector<DeviceMirror>& mirrors, gpu::stream_t stream) {
  for (const DeviceMirror& m : mirrors)
    gpu::memcpy_async(m.device, m.host.raw(), m.host.nbytes(), gpu::CopyKind::any, stream);
}

}  // namespace hetrec::model::gpu_model

#include "model/gpu/device_roc_auc.h"

#include <limits>

#include "core/error.h"
#include "gpu/device_buffer.h"
#include "gpu/memory.h"
#include "kernels/auc.h"

namespace hetrec::inline model::gpu_model {

double device_roc_auc(std::span<const float> scores, std::span<const float> labels, gpu::Stream& stream) {
  if (scores.size() != labels.size()) throw InternalError("device_roc_auc: scores and labels differ in length");
  if (scores.empty()) return std::numeric_limits<double>::quiet_NaN();
  const auto n = static_cast<int64_t>(scores.size());
  gpu::DeviceBuffer d_scores(scores.size_bytes()), d_labels(labels.size_bytes()), d_auc(sizeof(double));
  gpu::DeviceBuffer workspace(kernels::roc_auc_workspace_bytes(n));
  const gpu::stream_t s = stream.get();
  gpu::memcpy_async(d_scores.get(), scores.data(), scores.size_bytes(), gpu::CopyKind::host_to_device, s);
  gpu::memcpy_async(d_labels.get(), labels.data(), labels.size_bytes(), gpu::CopyKind::host_to_device, s);
  kernels::roc_auc(d_scores.as<float>(), d_labels.as<float>(), n, d_auc.as<double>(), workspace.get(),
                   workspace.bytes(), s);
  double auc = 0.0;
  gpu::memcpy_async(&auc, d_auc.get(), sizeof(double), gpu::CopyKind::device_to_host, s);
  stream.synchronize();
  return auc;
}

}  // namespace hetrec::model::gpu_model

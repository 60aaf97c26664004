#pragma once
// A named host tensor paired with the device memory it mirrors. The GPU model's state()
// hands out host tensors (checkpoints are written from and read into host memory), so
// every piece of device state is registered once as a mirror and copied out or in as a
// whole when the state is exposed or taken back.
#include <string>
#include <vector>

#include "core/tensor.h"
#include "gpu/platform.h"
#include "model/model.h"

namespace hetrec::inline model::gpu_model {

struct DeviceMirror {
  std::string name;
  Tensor host;         // what state() returns
  void* device = nullptr;  // host.nbytes() bytes
};

// Device -> host for every mirror (asynchronous on `stream`; the caller synchronises).
void download(const std::vector<DeviceMirror>& mirrors, gpu::stream_t stream);
// Host -> device for every mirror (asynchronous on `stream`).
void upload(const std::vector<DeviceMirror>& mirrors, gpu::stream_t stream);

}  // namespace hetrec::model::gpu_model

#include "model/gpu/host_state.h"

#include "model/gpu/device_mirror.h"
#include "model/gpu/device_state_check.h"

namespace hetrec::inline model::gpu_model {

std::vector<NamedTensor> HostState::named() {
  expose();
  std::vector<NamedTensor> out;
  for (const auto* list : {&dense_.parameter_mirrors(), &dense_.slot_mirrors()})
    for (const DeviceMirror& m : *list) out.push_back({m.name, m.host});
  if (!embeddings_.data_parallel())
    for (const DeviceMirror& m : embeddings_.mirrors()) out.push_back({m.name, m.host});
  out.push_back({"step", step_});
  return out;
}

std::vector<ShardTensor> HostState::shards() {
  expose();
  return embeddings_.shard_tensors();
}

std::optional<StateViolation> HostState::violation() {
  if (exposed_ || embeddings_.data_parallel()) return find_state_violation(named());
  embeddings_.synchronize();
  compute_.synchronize();
  return device_state_violation({&dense_.parameter_mirrors(), &dense_.slot_mirrors(), &embeddings_.mirrors()},
                                compute_);
}

void HostState::take_back() {
  if (!exposed_) return;
  const gpu::stream_t s = compute_.get();
  upload(dense_.parameter_mirrors(), s);
  upload(dense_.slot_mirrors(), s);
  upload(embeddings_.mirrors(), s);
  dense_.refresh_16bit(s);
  compute_.synchronize();
  exposed_ = false;
}

void HostState::expose() {
  if (exposed_) return;
  const gpu::stream_t s = compute_.get();
  download(dense_.parameter_mirrors(), s);
  download(dense_.slot_mirrors(), s);
  download(embeddings_.mirrors(), s);
  compute_.synchronize();
  exposed_ = true;
}

}  // namespace hetrec::model::gpu_model

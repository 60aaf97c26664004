#pragma once
// The state check of model/state_check.h on the GPU engine's device buffers in place: a
// state of tens of gigabytes (the MLPerf tables in fp32 are 96 GB) is scanned where it
// lives instead of being copied to the host for it.
#include <initializer_list>
#include <optional>
#include <vector>

#include "gpu/stream.h"
#include "model/gpu/device_mirror.h"
#include "model/state_check.h"

namespace hetrec::inline model::gpu_model {

// The first element, in list order, that fails the check (parameters within
// +-kParameterBound and finite, optimizer slots finite), as find_state_violation reports it
// on the host copies; nullopt when the state is sound. The device buffers must be current
// (the caller has synchronised every stream that writes them). Runs on `stream` and waits
// for it. A fp64 buffer (none today) is checked on a host copy.
std::optional<StateViolation> device_state_violation(std::initializer_list<const std::vector<DeviceMirror>*> lists,
                                                     gpu::Stream& stream);

}  // namespace hetrec::model::gpu_model

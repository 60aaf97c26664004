#pragma once
// What the GPU model's step copies back to the host (model/gpu/gpu_dlrm.cpp), kept in
// device memory beside the step scalars. Plain C++, so that the planner
// (plan/memory_model.cpp) counts it with its real size.
#include <cstdint>

namespace hetrec::inline model::gpu_model {

// The loss, the skip flag (raised by ids outside their tables, counted on the device, by
// a non-finite loss, or by an fp16 gradient overflow) and the overflow flag of loss
// scaling.
struct StepOutput {
  double loss = 0.0;
  int32_t skipped = 0;
  int32_t overflow = 0;
};

}  // namespace hetrec::model::gpu_model

#pragma once
// Builds the model for the configured device: the GPU backend when it was built and a
// device is present (train.device = "auto" or "gpu"), else the CPU backend.
#include <memory>
#include <string>

#include "core/log.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "model/dlrm.h"
#include "model/model.h"
#include "train/config.h"

namespace hetrec::inline train {

// `device_out` receives a short description of where the model runs ("cpu (2 threads)").
std::unique_ptr<Model> make_model(const RunConfig& config, const Logger& log, std::string* device_out);

// The data-parallel model of an mpirun job over `host`'s ranks: on GPUs (one per rank,
// NCCL between them, bootstrapped through `host`) when the GPU backend was built and a
// device is visible (train.device = "auto" or "gpu"), else on the CPU. The NCCL group
// the GPU model uses is returned in `device_group` (it must outlive the model).
std::unique_ptr<DistributedModel> make_distributed_model(const RunConfig& config, const dist::ShardingPlan& plan,
                                                         dist::ProcessGroup& host,
                                                         std::unique_ptr<dist::ProcessGroup>& device_group,
                                                         const Logger& log, std::string* device_out);

}  // namespace hetrec::train::train

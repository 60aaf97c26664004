#pragma once
// Builds the model for the configured device: the GPU backend when it was built and a
// device is present (train.device = "auto" or "gpu"), else the CPU backend.
#include <memory>
#include <string>

#include "core/log.h"
#include "model/model.h"
#include "train/config.h"

namespace hetrec {

// `device_out` receives a short description of where the model runs ("cpu (2 threads)").
std::unique_ptr<Model> make_model(const RunConfig& config, const Logger& log, std::string* device_out);

}  // namespace hetrec

#include "train/model_factory.h"

#include <omp.h>

#include "core/error.h"
#include "model/dlrm.h"

namespace hetrec {

std::unique_ptr<Model> make_model(const RunConfig& cfg, const Logger& log, std::string* device_out) {
  if (cfg.train.device == DeviceChoice::gpu)
    throw ConfigError(cfg.source + ": config key 'train.device' = \"gpu\": this build has no GPU backend "
                      "(configure with the 'cuda' preset)");
  (void)log;
  if (device_out) *device_out = "cpu (" + std::to_string(omp_get_max_threads()) + " threads)";
  return make_cpu_model(cfg.model, cfg.optim);
}

}  // namespace hetrec

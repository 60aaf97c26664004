#include "harness/checkpoint_models.h"

#include <string>

#include "model/dlrm.h"
#include "train/config.h"

namespace hetrec::fuzz {

std::unique_ptr<Model> make_checkpoint_model(std::size_t which) {
  const RunConfig cfg =
      parse_run_config(std::string(kCheckpointModelConfigs[which]), "checkpoint_model_" + std::to_string(which));
  return make_cpu_model(cfg.model, cfg.optim);
}

}  // namespace hetrec::fuzz

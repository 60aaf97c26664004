#include "optim/sparse_update.h"

#include <string>

#include "core/error.h"

namespace hetrec::inline optim {

void check_sparse_optimizer(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::sgd:
    case OptimizerKind::adagrad:
    case OptimizerKind::rowwise_adagrad: return;
    case OptimizerKind::adam:
      throw ConfigError("optim.sparse: expected \"sgd\", \"adagrad\" or \"rowwise_adagrad\" for the embedding "
                        "tables (Adam has no fused sparse update), got \"adam\"");
  }
  throw ConfigError("optim.sparse: expected \"sgd\", \"adagrad\" or \"rowwise_adagrad\", got optimizer kind " +
                    std::to_string(static_cast<int>(kind)));
}

int64_t sparse_state_per_row(OptimizerKind kind, int dim) {
  check_sparse_optimizer(kind);
  switch (kind) {
    case OptimizerKind::adagrad: return dim;
    case OptimizerKind::rowwise_adagrad: return 1;
    default: return 0;
  }
}

}  // namespace hetrec::optim::optim

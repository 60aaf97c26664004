#include "train/divergence.h"

#include <cmath>

namespace hetrec::inline train {

bool loss_diverged(double loss) { return !std::isfinite(loss) || loss > kLossBound; }

}  // namespace hetrec::train::train

#include "model/batch_stream.h"

#include <utility>

namespace hetrec::inline model {

bool BatchStream::next(Batch& batch, bool more) {
  if (have_ahead_) {
    std::swap(batch, ahead_);
    have_ahead_ = false;
  } else if (!source_.next(batch)) {
    return false;
  }
  if (more && source_.next(ahead_)) {
    have_ahead_ = true;
    model_.prepare_next(ahead_);
  }
  return true;
}

void BatchStream::seek(int64_t position) {
  have_ahead_ = false;
  source_.seek(position);
}

}  // namespace hetrec::model::model

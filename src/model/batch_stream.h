#pragma once
// The batches of a training pass on their way to a model. The trainer asks for a batch
// and trains on it; the stream reads the batch after it from the pipeline (data/pipeline.h)
// before handing this one over and names it to the model (Model::prepare_next), so a
// backend that stages batches ahead (the GPU model's DeviceBatchStream) can prepare it
// while the current step runs. The trainer never sees whether a batch was staged ahead.
#include <cstdint>

#include "data/batch.h"
#include "data/pipeline.h"
#include "model/model.h"

namespace hetrec::inline model {

class BatchStream {
 public:
  BatchStream(Pipeline& source, Model& model) : source_(source), model_(model) {}

  // The next batch of the pass into `batch`; false at the end of the pass. `more`: whether
  // the caller will train on another batch of this pass after this one (the step budget);
  // only then is the batch after it read ahead. `batch` must stay unchanged until the
  // model's train_step on it returns.
  bool next(Batch& batch, bool more);
  // The pass from sample `position` (a batch read ahead is dropped).
  void seek(int64_t position);

 private:
  Pipeline& source_;
  Model& model_;
  Batch ahead_;               // the batch after the one handed out, named to the model
  bool have_ahead_ = false;
};

}  // namespace hetrec::model::model

#pragma once
// The GPU engine's state as the host sees it (Model::state()): the dense parameters and
// their optimizer slots, the tables and their optimizer state (one device; data parallel,
// this rank's blocks through shards()) and the step counter. Host copies are made when
// asked for and taken back to the device before the engine next uses its buffers, since the
// caller may have written them (a checkpoint read into them). The state check runs on the
// device buffers in place while no host copy is out.
#include <optional>
#include <vector>

#include "core/named_tensor.h"
#include "gpu/stream.h"
#include "model/gpu/dense_parameters.h"
#include "model/gpu/embedding_stage.h"
#include "model/state_check.h"

namespace hetrec::inline model::gpu_model {

class HostState {
 public:
  // `step` is the engine's host counter (i64 [1]); every argument outlives this object.
  HostState(DenseParameters& dense, EmbeddingStage& embeddings, gpu::Stream& compute, const Tensor& step)
      : dense_(dense), embeddings_(embeddings), compute_(compute), step_(step) {}

  // The CPU model's names, order, shapes and dtypes, as host copies (data parallel: the
  // replicated tensors only).
  std::vector<NamedTensor> named();
  // Data parallel: this rank's table blocks, as host copies.
  std::vector<ShardTensor> shards();
  // model/state_check.h on the device buffers; on the host copies while they are out, and
  // data parallel.
  std::optional<StateViolation> violation();
  // Copies host copies, which the caller may have written, back to the device (no-op when
  // none are out). Called before the engine next reads its buffers.
  void take_back();

 private:
  void expose();

  DenseParameters& dense_;
  EmbeddingStage& embeddings_;
  gpu::Stream& compute_;
  const Tensor& step_;
  bool exposed_ = false;
};

}  // namespace hetrec::model::gpu_model

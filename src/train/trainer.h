#pragma once
// The training loop: batches from the data pipeline, the model's fused train step, the
// MLPerf learning-rate schedule, periodic evaluation (exact AUC and log-loss over the
// whole evaluation set), JSON-lines metrics, a live progress line, atomic checkpoints and
// exact resume. A run holds its checkpoint directory's lock (train/checkpoint_dir_lock.h)
// for its whole life, and stops with a NumericError when it diverges (train/divergence.h:
// the loss every step, the state before every checkpoint write).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/log.h"
#include "data/source.h"
#include "model/model.h"
#include "train/config.h"
#include "train/metrics_log.h"
#include "train/run_header.h"

namespace hetrec::inline train {

struct EvalResult {
  double auc = 0.0;
  double log_loss = 0.0;
  int64_t samples = 0;
};

struct TrainSummary {
  int64_t steps = 0;            // optimizer steps at the end (including resumed ones)
  int64_t samples = 0;          // samples trained in this run
  double seconds = 0.0;         // wall time of the training loop in this run
  double samples_per_s = 0.0;
  double last_loss = 0.0;
  EvalResult eval;              // final evaluation (eval.samples == 0 when none)
  double bayes_optimal_auc = -1.0;  // the synthetic teacher's, when known
  std::string checkpoint;       // last checkpoint written, if any
  std::string device;
  // Step time: model->train_step alone (batch upload and the device step; not data
  // generation, evaluation or checkpoints), over the steps after train.timing_warmup_steps
  // (all steps when the run is not longer than that).
  int64_t timed_steps = 0;
  double step_ms_median = 0.0;
  double step_ms_mean = 0.0;
  double step_ms_p90 = 0.0;
  // The whole loop iteration (waiting for data, staging, the step, logging) over the same
  // steps: the rate the data pipeline and the step sustain together.
  double loop_ms_median = 0.0;
  double loop_samples_per_s = 0.0;
  std::optional<DeviceMemoryReport> memory;  // GPU: measured at the end of the run
  int rank = 0;                 // distributed jobs: this process's rank (0 prints the summary)
  int world_size = 1;
  int64_t overflow_skipped_steps = 0;         // fp16 loss scaling: updates skipped on overflow
};

// The evaluation split: synthetic data has one built in; file formats need data.eval_path
// (nullptr when it is not set).
std::unique_ptr<BatchSource> make_eval_source(const DataConfig& data, const ModelConfig& model);

// Evaluates `model` on up to `max_samples` samples of `source` from its start (0 = all).
EvalResult evaluate(Model& model, BatchSource& source, int64_t batch_size, int64_t max_samples);

// A process started by mpirun (dist::launched_by_mpi()) trains data-parallel with the
// other ranks of its job on the CPU backend: every rank reads the same data, trains its
// slice of each global batch (train.batch_size), and tables are sharded as
// cfg.sharding says; rank 0 alone logs, writes metrics and shows progress; evaluation
// scores every sample of the evaluation set across the ranks; checkpoints are sharded
// (train/sharded_checkpoint.h) and resume with any number of ranks.
class Trainer {
 public:
  // `build` names the program in the metrics file's run header (train/run_header.h).
  Trainer(RunConfig config, const Logger& log, BuildIdentity build = {});
  TrainSummary run();
  // Every metrics record of the run (train, eval, checkpoint, final) as it is written.
  void set_observer(MetricsObserver observer) { observer_ = std::move(observer); }
  // After run() in a single process: the trained model (nullptr before, or for a
  // distributed job, whose model lives only as long as its process groups).
  std::unique_ptr<Model> take_model() { return std::move(model_); }

 private:
  RunConfig cfg_;
  const Logger& log_;
  MetricsObserver observer_;
  std::unique_ptr<Model> model_;
  BuildIdentity build_;
};

}  // namespace hetrec::train::train

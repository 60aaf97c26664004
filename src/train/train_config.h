#pragma once
// How to train: batch, length, evaluation, checkpoints, output. Parsed from [train].
#include <cstdint>
#include <string>

namespace hetrec::inline train {

enum class DeviceChoice { auto_select, cpu, gpu };
enum class ProgressMode { auto_detect, on, off };

struct TrainConfig {
  int64_t batch_size = 4096;
  int64_t steps = 0;        // 0: run `epochs` passes over the training data
  int64_t epochs = 1;
  int64_t eval_every = 0;   // evaluate every N steps (0: only at the end)
  int64_t eval_batch_size = 16384;
  int64_t eval_samples = 0; // 0: the whole evaluation set
  bool eval_at_end = true;  // false (with eval_every = 0): no evaluation at all (timing runs)
  // Steps left out of the step-time statistics at the start of a run (graph capture,
  // GEMM planning, allocator warm-up).
  int64_t timing_warmup_steps = 10;
  std::string checkpoint_dir;  // empty: no checkpoints
  int64_t checkpoint_every = 0;  // steps between checkpoints (0: only at the end)
  int64_t keep_checkpoints = 3;
  bool checkpoint_at_start = false;  // also save the initial state (step 0)
  bool resume = false;      // continue from the newest valid checkpoint in checkpoint_dir
  std::string metrics_path;  // JSON lines; empty: none
  int64_t log_every = 100;   // steps between "train" metric lines
  ProgressMode progress = ProgressMode::auto_detect;
  int threads = 0;           // CPU threads (0: all cores)
  DeviceChoice device = DeviceChoice::auto_select;
  std::string log_level = "info";
  // Distributed jobs: a collective that does not complete in this many seconds ends the
  // job with an error naming the rank and the operation (0: wait forever).
  double collective_timeout_s = 600.0;
};

}  // namespace hetrec::train::train

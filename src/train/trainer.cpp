#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/exclusive_file.h"
#include "data/pipeline.h"
#include "model/batch_stream.h"
#include "data/bayes_auc.h"
#include "data/make_source.h"
#include "data/synthetic.h"
#include "train/auc.h"
#include "train/checkpoint.h"
#include "train/checkpoint_dir_lock.h"
#include "train/divergence.h"
#include "train/metrics_log.h"
#include "train/model_factory.h"
#include "train/progress.h"
#include "train/run_header.h"
#include "train/sharded_checkpoint.h"
#include "dist/process_group.h"
#include "model/dlrm.h"

namespace hetrec::inline train {

std::unique_ptr<BatchSource> make_eval_source(const DataConfig& data, const ModelConfig& model) {
  if (data.format != DataFormat::synthetic && data.eval_path.empty()) return nullptr;
  return make_source(data, model, Split::eval);
}

EvalResult evaluate(Model& model, BatchSource& source, int64_t batch_size, int64_t max_samples) {
  source.seek(0);
  std::vector<float> logits, labels, chunk;
  Batch batch;
  for (;;) {
    int64_t want = batch_size;
    if (max_samples > 0) want = std::min<int64_t>(want, max_samples - static_cast<int64_t>(labels.size()));
    if (want <= 0 || !source.next(batch, want)) break;
    chunk.resize(static_cast<std::size_t>(batch.size));
    model.predict(batch, chunk);
    logits.insert(logits.end(), chunk.begin(), chunk.end());
    labels.insert(labels.end(), batch.labels.begin(), batch.labels.end());
  }
  EvalResult r;
  r.samples = static_cast<int64_t>(labels.size());
  if (r.samples == 0) return r;
  // On the model's device when it has one (GPU: sort-based, ties as train/auc.h).
  const std::optional<double> device_auc = model.device_roc_auc(logits, labels);
  r.auc = device_auc ? *device_auc : roc_auc(logits, labels);
  r.log_loss = log_loss_from_logits(logits, labels);
  return r;
}

Trainer::Trainer(RunConfig config, const Logger& log, BuildIdentity build)
    : cfg_(std::move(config)), log_(log), build_(std::move(build)) {}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Finds the newest checkpoint that verifies; damaged ones (CheckpointError) are reported
// and skipped. One that cannot be read at all (IoError: permission, a directory, an I/O
// error) stops the run: it is not known to be damaged, and resuming from an older one
// would later overwrite it.
std::string newest_valid_checkpoint(const std::vector<std::string>& candidates,
                                     CheckpointMeta (*verify)(const std::string&), const Logger& log) {
  for (const auto& path : candidates) {
    try {
      verify(path);
      return path;
    } catch (const CheckpointError& e) {
      log.warn(std::string("skipping damaged checkpoint: ") + e.what());
    }
  }
  return {};
}

// A crash during a checkpoint write leaves its temporary file ("ckpt-*.hck.tmp-<pid>"),
// as large as a checkpoint; it is never read, so remove it before it fills the disk. Only
// the temporaries of processes that no longer exist are removed: a temporary of a live
// process (not a hetrec run on this directory, which the lock excludes) is not ours.
void remove_torn_writes(const std::string& dir, const Logger& log) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) != 0 || name.find(".hck.tmp-") == std::string::npos) continue;
    if (temporary_owner_alive(name)) {
      log.warn("kept " + e.path().string() + ": the process that writes it (pid " +
               std::to_string(temporary_owner(name)) + ") is running");
      continue;
    }
    std::error_code rm;
    std::filesystem::remove(e.path(), rm);
    if (rm) log.warn("could not remove an unfinished checkpoint write " + e.path().string() + ": " + rm.message());
    else log.info("removed an unfinished checkpoint write: " + e.path().string());
  }
}

void prune_checkpoints(const std::string& dir, int64_t keep, const Logger& log) {
  const auto all = list_checkpoints(dir);
  for (std::size_t i = static_cast<std::size_t>(keep); i < all.size(); ++i) {
    std::error_code ec;
    std::filesystem::remove(all[i], ec);
    if (ec) log.warn("could not remove old checkpoint " + all[i] + ": " + ec.message());
  }
}

// Median, mean and 90th percentile of the step times after the warm-up steps.
void summarise_step_times(const std::vector<double>& step_ms, int64_t warmup, TrainSummary& summary) {
  if (step_ms.empty()) return;
  const std::size_t skip = static_cast<std::size_t>(warmup) < step_ms.size() ? static_cast<std::size_t>(warmup) : 0;
  std::vector<double> timed(step_ms.begin() + static_cast<std::ptrdiff_t>(skip), step_ms.end());
  std::sort(timed.begin(), timed.end());
  const std::size_t n = timed.size();
  summary.timed_steps = static_cast<int64_t>(n);
  summary.step_ms_median = n % 2 ? timed[n / 2] : 0.5 * (timed[n / 2 - 1] + timed[n / 2]);
  double sum = 0.0;
  for (double t : timed) sum += t;
  summary.step_ms_mean = sum / static_cast<double>(n);
  summary.step_ms_p90 = timed[std::min(n - 1, static_cast<std::size_t>(0.9 * static_cast<double>(n)))];
}

// The sustained rate over the loop iterations after the warm-up steps (all of them when
// the run is not longer than that): their samples over their summed wall time.
void summarise_loop_rate(const std::vector<double>& loop_ms, const std::vector<int64_t>& samples, int64_t warmup,
                         TrainSummary& summary) {
  if (loop_ms.empty()) return;
  const std::size_t skip = static_cast<std::size_t>(warmup) < loop_ms.size() ? static_cast<std::size_t>(warmup) : 0;
  double ms = 0.0;
  int64_t n = 0;
  for (std::size_t i = skip; i < loop_ms.size(); ++i) ms += loop_ms[i], n += samples[i];
  summary.loop_samples_per_s = ms > 0 ? static_cast<double>(n) / (ms / 1e3) : 0.0;
  std::vector<double> timed(loop_ms.begin() + static_cast<std::ptrdiff_t>(skip), loop_ms.end());
  std::sort(timed.begin(), timed.end());
  const std::size_t k = timed.size();
  summary.loop_ms_median = k % 2 ? timed[k / 2] : 0.5 * (timed[k / 2 - 1] + timed[k / 2]);
}

// Rank 0's text on every rank.
std::string broadcast_text(dist::ProcessGroup& group, std::string text, std::string_view op) {
  int64_t length = static_cast<int64_t>(text.size());
  group.broadcast(&length, sizeof length, 0, op);
  text.resize(static_cast<std::size_t>(length));
  group.broadcast(text.data(), length, 0, op);
  return text;
}

// The model's NumericError messages start "train step <k> (batch from sample <s>): "; the
// trainer names the step (1-based, as checkpoints and metrics count) and the samples
// itself, so it keeps only what follows.
std::string without_model_step_prefix(const std::string& message) {
  const std::string prefix = "train step ";
  if (message.rfind(prefix, 0) != 0) return message;
  const std::size_t end = message.find("): ");
  return end == std::string::npos ? message : message.substr(end + 3);
}

// One run of the trainer, in three parts: resume (the checkpoint directory, its lock and
// the state to continue from), loop (the training steps with periodic evaluation and
// checkpoints) and report (final evaluation, checkpoint and metrics).
class TrainingRun {
 public:
  TrainingRun(const RunConfig& cfg, const Logger& log, const BuildIdentity& build);
  TrainSummary run();
  void observe(MetricsObserver observer) { metrics_->set_observer(std::move(observer)); }
  std::unique_ptr<Model> release_model() { return group_ ? nullptr : std::move(model_); }

 private:
  void lock_checkpoint_dir();
  void build_model();
  void open_data();
  void resume();
  void loop();
  TrainSummary report();

  // Checks the state (finite, parameters within bounds) and writes a checkpoint of it.
  void save(const std::string& why);
  void run_eval();
  // Every rank's state check, agreed over the ranks: the first violation's text, or "".
  std::string check_state();
  std::string last_good_note() const;

  const RunConfig& cfg_;
  const TrainConfig& tc_;
  TrainSummary summary_;
  // Distributed: the ranks of the mpirun job; rank 0 logs, the others only warn.
  std::unique_ptr<dist::ProcessGroup> group_;
  std::unique_ptr<dist::ProcessGroup> device_group_;  // GPUs: the NCCL group the model exchanges over
  bool rank0_ = true;
  Logger rank_log_;
  const Logger& log_;
  std::optional<CheckpointDirLock> lock_;  // rank 0, for the run's whole life
  std::unique_ptr<Model> model_;
  DistributedModel* dmodel_ = nullptr;
  std::unique_ptr<Pipeline> pipeline_;
  std::unique_ptr<BatchSource> eval_source_;
  std::optional<RunHeader> header_;  // what the metrics file holds already
  std::unique_ptr<MetricsLog> metrics_;
  std::unique_ptr<ProgressLine> progress_;
  std::string signature_;

  int64_t step_ = 0, epoch_ = 0, position_ = 0;
  int64_t total_steps_ = -1;
  // The newest checkpoint this run wrote or resumed from, its state checked finite and
  // within bounds first.
  std::string last_good_;
  double last_auc_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> step_ms_;  // each train_step of this run
  // Each loop iteration's wall time (waiting for data, staging the next batch, the step,
  // logging; not evaluation or checkpoints) and its samples: the sustained rate.
  std::vector<double> loop_ms_;
  std::vector<int64_t> loop_samples_;
};

TrainingRun::TrainingRun(const RunConfig& cfg, const Logger& log, const BuildIdentity& build)
    : cfg_(cfg),
      tc_(cfg.train),
      group_(dist::launched_by_mpi() ? dist::make_process_group(cfg.train.collective_timeout_s) : nullptr),
      rank0_(!group_ || group_->rank() == 0),
      rank_log_(std::max(log.level(), LogLevel::warn)),
      log_(rank0_ ? log : rank_log_) {
  if (tc_.threads > 0) omp_set_num_threads(tc_.threads);
  lock_checkpoint_dir();
  header_.emplace(rank0_ ? tc_.metrics_path : std::string(), build);
  header_->refuse_unless_resuming(tc_.resume);
  build_model();
  open_data();
  metrics_ = std::make_unique<MetricsLog>(rank0_ ? tc_.metrics_path : std::string());
  signature_ = model_signature(cfg_.model);
  const bool show_progress = tc_.progress == ProgressMode::on ||
                             (tc_.progress == ProgressMode::auto_detect && ProgressLine::stream_is_terminal(stderr));
  progress_ = std::make_unique<ProgressLine>(rank0_ && (show_progress || tc_.progress == ProgressMode::auto_detect),
                                             stderr);
}

TrainSummary TrainingRun::run() {
  try {
    resume();
    loop();
  } catch (...) {
    progress_->finish();
    throw;
  }
  return report();
}

// One run per checkpoint directory (rank 0 holds the lock for the job); taken before
// anything else, so that a second run stops at once and touches nothing.
void TrainingRun::lock_checkpoint_dir() {
  if (tc_.checkpoint_dir.empty()) return;
  std::string refused;
  if (rank0_) {
    try {
      lock_.emplace(tc_.checkpoint_dir);
    } catch (const IoError& e) {
      if (!group_) throw;
      refused = e.what();
    }
  }
  if (group_) refused = broadcast_text(*group_, refused, "broadcast(checkpoint directory lock)");
  if (!refused.empty()) throw IoError(refused);
}

void TrainingRun::build_model() {
  const int world = group_ ? group_->size() : 1;
  if (cfg_.recipe_gpus > 0 && cfg_.recipe_gpus != world)
    log_.warn("the recipe was planned for " + std::to_string(cfg_.recipe_gpus) + " GPUs (recipe.gpus), this job has " +
              std::to_string(world) + " rank" + (world == 1 ? "" : "s") + "; its predictions do not apply");
  if (group_) {
    const dist::ShardingPlan plan =
        dist::plan_sharding(cfg_.sharding, cfg_.model.tables, cfg_.model.embedding_dim, group_->size());
    auto built = make_distributed_model(cfg_, plan, *group_, device_group_, log_, &summary_.device);
    dmodel_ = built.get();
    model_ = std::move(built);
    summary_.rank = group_->rank();
    summary_.world_size = group_->size();
    std::string placement;
    for (std::size_t t = 0; t < plan.tables.size(); ++t)
      placement += (t ? ", " : "") + cfg_.model.tables[t].name + ":" + dist::sharding_type_name(plan.tables[t].type) +
                   (plan.tables[t].type == dist::ShardingType::table_wise ? "@" + std::to_string(plan.tables[t].owner) : "");
    log_.info("sharding over " + std::to_string(group_->size()) + " ranks: " + placement + "; embedding exchanges in " +
              std::string(dtype_name(plan.exchange_dtype)));
  } else {
    model_ = make_model(cfg_, log_, &summary_.device);
  }
  log_.info("model: " + model_->describe());
}

void TrainingRun::open_data() {
  pipeline_ = std::make_unique<Pipeline>(make_source(cfg_.data, cfg_.model, Split::train), tc_.batch_size,
                                         cfg_.data.prefetch_batches);
  const bool evaluates = tc_.eval_at_end || tc_.eval_every > 0;
  if (evaluates) eval_source_ = make_eval_source(cfg_.data, cfg_.model);
  log_.info("train data: " + pipeline_->describe());
  if (eval_source_) log_.info("eval data: " + eval_source_->describe());
  else if (!evaluates) log_.info("evaluation off (train.eval_at_end = false, train.eval_every = 0)");
  else log_.warn("no evaluation data (set data.eval_path): AUC is not computed");
}

// The checkpoint directory made ready (unfinished writes of dead runs removed), then every
// tensor and the position in the data restored from the newest checkpoint that verifies.
void TrainingRun::resume() {
  if (!tc_.checkpoint_dir.empty() && rank0_) {
    remove_torn_writes(tc_.checkpoint_dir, log_);
    if (group_) remove_partial_checkpoints(tc_.checkpoint_dir, log_);
  }
  if (group_) group_->barrier("barrier(checkpoint directory ready)");
  CheckpointMeta pos;
  if (tc_.resume) {
    // Rank 0 picks the newest checkpoint that verifies; every rank loads its part of it.
    std::string path, refused;
    if (rank0_) {
      try {
        path = group_ ? newest_valid_checkpoint(list_distributed_checkpoints(tc_.checkpoint_dir),
                                                verify_sharded_checkpoint, log_)
                      : newest_valid_checkpoint(list_checkpoints(tc_.checkpoint_dir), verify_checkpoint, log_);
      } catch (const IoError& e) {
        if (!group_) throw;
        refused = e.what();  // every rank stops with it
      }
    }
    if (group_) {
      refused = broadcast_text(*group_, refused, "broadcast(resume checkpoint)");
      if (!refused.empty()) throw IoError(refused);
      path = broadcast_text(*group_, path, "broadcast(resume checkpoint)");
    }
    if (path.empty()) {
      log_.info("resume: no checkpoint in " + tc_.checkpoint_dir + ", starting from step 0");
    } else {
      const CheckpointMeta found = group_ ? verify_sharded_checkpoint(path) : verify_checkpoint(path);
      if (found.model_signature != signature_)
        throw CheckpointError("checkpoint '" + path + "' was written for model '" + found.model_signature +
                              "', the config describes '" + signature_ + "'");
      pos = group_ ? load_sharded_checkpoint(path, *dmodel_) : load_checkpoint(path, model_->state());
      // A checkpoint written before states were checked may hold a diverged one.
      const std::string violation = check_state();
      if (!violation.empty())
        throw NumericError("checkpoint '" + path + "' (step " + std::to_string(pos.step) + ") holds " + violation +
                           ": it is the state of a diverged run, not one to resume from; remove it to resume from "
                           "an older checkpoint");
      last_good_ = path;
      log_.info("resumed from " + path + " at step " + std::to_string(pos.step) +
                (group_ ? " on " + std::to_string(group_->size()) + " ranks" : std::string()));
    }
  }
  step_ = pos.step;
  epoch_ = pos.epoch;
  position_ = pos.data_position;
  if (rank0_) metrics_->write_header(header_->record(cfg_, last_good_, step_, summary_.device, summary_.world_size));

  const int64_t train_size = pipeline_->size_hint();
  const int64_t steps_per_epoch = train_size > 0 ? (train_size + tc_.batch_size - 1) / tc_.batch_size : -1;
  total_steps_ = tc_.steps > 0 ? tc_.steps : (steps_per_epoch > 0 ? steps_per_epoch * tc_.epochs : -1);

  // Every rank computes it (when distributed), so that no rank waits for rank 0 in the
  // first collective for as long as this takes.
  if (eval_source_) {
    if (const auto* syn = dynamic_cast<SyntheticSource*>(eval_source_.get())) {
      const int64_t n = tc_.eval_samples > 0 ? std::min(tc_.eval_samples, syn->size_hint()) : syn->size_hint();
      summary_.bayes_optimal_auc = bayes_optimal_auc(*syn, n);
      log_.info("synthetic teacher: Bayes-optimal AUC on the evaluation set = " +
                std::to_string(summary_.bayes_optimal_auc));
    }
  }
  pipeline_->seek(position_);
}

void TrainingRun::loop() {
  if (tc_.checkpoint_at_start && step_ == 0) save("initial");

  // The stream reads each batch's successor ahead and names it to the model, which may
  // stage it while `batch` trains (model/batch_stream.h).
  BatchStream batches(*pipeline_, *model_);
  Batch batch;
  const auto t_start = Clock::now();
  auto t_window = t_start;
  int64_t window_samples = 0, run_steps = 0;
  double window_loss = 0.0;
  int64_t window_steps = 0;
  double rate = 0.0;
  while (total_steps_ < 0 || step_ < total_steps_) {
    const auto iter_start = Clock::now();
    // Another batch after this one within the step budget (the epoch ends where the data does).
    if (!batches.next(batch, total_steps_ < 0 || step_ + 1 < total_steps_)) {
      if (position_ == 0) throw DataError("training data is empty: " + pipeline_->describe());
      ++epoch_;
      position_ = 0;
      if (tc_.steps == 0 && epoch_ >= tc_.epochs) break;
      batches.seek(0);
      continue;
    }
    const StepRates rates = scheduled_rates(cfg_.optim, step_);
    // Steps count from 1, as checkpoints and metrics do: step N is the one that ends
    // with N updates applied.
    const auto where = [&] {
      return "step " + std::to_string(step_ + 1) + " (samples " + std::to_string(batch.first_sample) + ".." +
             std::to_string(batch.first_sample + batch.size - 1) + " of the training data)";
    };
    double loss = 0.0;
    try {
      const auto step_start = Clock::now();
      loss = model_->train_step(batch, rates);
      step_ms_.push_back(1e3 * seconds_since(step_start));
    } catch (const NumericError& e) {
      throw NumericError(where() + ": " + without_model_step_prefix(e.what()) +
                         ". Training diverged: lower optim.lr or check the input. " + last_good_note());
    }
    if (loss_diverged(loss))
      throw NumericError(where() + ": the loss is " + value_text(loss) +
                         (std::isfinite(loss) ? ", above the divergence bound " + value_text(kLossBound) +
                                                    " (" + value_text(kLossBoundFactor) +
                                                    " x ln 2, the loss of predicting 1/2 for every sample)"
                                              : std::string()) +
                         ". Training diverged: lower optim.lr or check the input. " + last_good_note());
    ++step_;
    ++run_steps;
    position_ += batch.size;
    summary_.samples += batch.size;
    summary_.last_loss = loss;
    window_samples += batch.size;
    window_loss += loss;
    ++window_steps;
    const double window_s = seconds_since(t_window);
    if (window_s > 0) rate = static_cast<double>(window_samples) / window_s;
    if (step_ % tc_.log_every == 0 || step_ == total_steps_) {
      metrics_->write({{"type", "train"}, {"step", step_}, {"epoch", epoch_}, {"samples", summary_.samples},
                       {"loss", window_loss / static_cast<double>(window_steps)}, {"last_loss", loss},
                       {"dense_lr", rates.dense_lr}, {"sparse_lr", rates.sparse_lr}, {"samples_per_s", rate},
                       {"elapsed_s", seconds_since(t_start)}, {"skipped_lines", pipeline_->counters().skipped_lines}});
      window_loss = 0.0;
      window_steps = 0;
    }
    if (window_s > 5.0) {  // a sliding window keeps samples/s current
      t_window = Clock::now();
      window_samples = 0;
    }
    const double per_step = seconds_since(t_start) / static_cast<double>(run_steps);
    progress_->update(step_, total_steps_, rate, loss, last_auc_,
                      total_steps_ > 0 ? per_step * static_cast<double>(total_steps_ - step_) : -1.0);
    loop_ms_.push_back(1e3 * seconds_since(iter_start));
    loop_samples_.push_back(batch.size);
    if (tc_.eval_every > 0 && step_ % tc_.eval_every == 0 && step_ != total_steps_) run_eval();
    if (tc_.checkpoint_every > 0 && step_ % tc_.checkpoint_every == 0 && step_ != total_steps_) save("periodic");
  }
  summary_.seconds = seconds_since(t_start);
}

TrainSummary TrainingRun::report() {
  progress_->finish();
  summarise_step_times(step_ms_, tc_.timing_warmup_steps, summary_);
  summarise_loop_rate(loop_ms_, loop_samples_, tc_.timing_warmup_steps, summary_);
  summary_.memory = model_->device_memory();
  summary_.overflow_skipped_steps = model_->overflow_skipped_steps();
  if (summary_.memory)
    log_.info("device memory: allocator peak " + std::to_string(summary_.memory->allocator_peak_bytes >> 20) +
              " MiB, reserved " + std::to_string(summary_.memory->allocator_reserved_bytes >> 20) +
              " MiB; device used " + std::to_string(summary_.memory->device_used_bytes >> 20) + " MiB (" +
              std::to_string(summary_.memory->device_used_at_start_bytes >> 20) + " MiB before the model)");
  summary_.steps = step_;
  summary_.samples_per_s = summary_.seconds > 0 ? static_cast<double>(summary_.samples) / summary_.seconds : 0.0;
  if (tc_.eval_at_end) run_eval();
  save("final");
  nlohmann::json final_record = {{"type", "final"},
                                 {"step", step_},
                                 {"samples", summary_.samples},
                                 {"seconds", summary_.seconds},
                                 {"samples_per_s", summary_.samples_per_s},
                                 {"loss", summary_.last_loss},
                                 {"device", summary_.device},
                                 {"skipped_lines", pipeline_->counters().skipped_lines}};
  if (summary_.eval.samples > 0) {
    final_record["auc"] = summary_.eval.auc;
    final_record["log_loss"] = summary_.eval.log_loss;
  }
  if (summary_.bayes_optimal_auc >= 0) final_record["bayes_optimal_auc"] = summary_.bayes_optimal_auc;
  final_record["timed_steps"] = summary_.timed_steps;
  final_record["step_ms_median"] = summary_.step_ms_median;
  final_record["step_ms_mean"] = summary_.step_ms_mean;
  final_record["step_ms_p90"] = summary_.step_ms_p90;
  final_record["loop_ms_median"] = summary_.loop_ms_median;
  final_record["loop_samples_per_s"] = summary_.loop_samples_per_s;
  final_record["overflow_skipped_steps"] = summary_.overflow_skipped_steps;
  if (summary_.memory) {
    const DeviceMemoryReport& m = *summary_.memory;
    final_record["device_memory"] = {{"allocator_peak_bytes", m.allocator_peak_bytes},
                                     {"allocator_reserved_bytes", m.allocator_reserved_bytes},
                                     {"outside_allocator_bytes", m.outside_allocator_bytes},
                                     {"device_used_at_start_bytes", m.device_used_at_start_bytes},
                                     {"device_used_bytes", m.device_used_bytes},
                                     {"device_total_bytes", m.device_total_bytes},
                                     {"host_table_bytes", m.host_table_bytes}};
  }
  metrics_->write(final_record);
  return summary_;
}

std::string TrainingRun::check_state() {
  // Where the state lives (the GPU engine scans its device memory in place: a state of tens
  // of gigabytes is not copied to the host for the check); distributed, every rank checks
  // the host copies of its replicated state and its blocks.
  std::optional<StateViolation> v;
  if (dmodel_) {
    std::vector<NamedTensor> state = model_->state();
    for (ShardTensor& s : dmodel_->embedding_shards()) state.push_back(s.tensor);
    v = find_state_violation(state);
  } else {
    v = model_->state_violation();
  }
  std::string text = v ? v->describe() : std::string();
  if (!group_) return text;
  for (const std::vector<char>& other :
       dist::all_gather_v(*group_, std::vector<char>(text.begin(), text.end()), "all_gather(state check)"))
    if (!other.empty()) return std::string(other.begin(), other.end());
  return {};
}

void TrainingRun::save(const std::string& why) {
  // Checked also without a checkpoint directory: a diverged run never ends as a success.
  const std::string violation = check_state();
  if (!violation.empty())
    throw NumericError("after step " + std::to_string(step_) + ": " + violation +
                       ". Training diverged: lower optim.lr or check the input. This state was not written. " +
                       last_good_note());
  if (tc_.checkpoint_dir.empty()) return;
  const std::string path =
      group_ ? sharded_checkpoint_path(tc_.checkpoint_dir, step_) : checkpoint_path(tc_.checkpoint_dir, step_);
  const CheckpointMeta meta{step_, epoch_, position_, signature_};
  try {
    if (group_) save_sharded_checkpoint(path, meta, *dmodel_);
    else save_checkpoint(path, meta, model_->state());
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + ". " + last_good_note());
  }
  if (group_) {
    if (rank0_) prune_distributed_checkpoints(tc_.checkpoint_dir, tc_.keep_checkpoints, log_);
  } else {
    prune_checkpoints(tc_.checkpoint_dir, tc_.keep_checkpoints, log_);
  }
  summary_.checkpoint = path;
  last_good_ = path;
  metrics_->write({{"type", "checkpoint"}, {"step", step_}, {"path", path}, {"reason", why}});
}

void TrainingRun::run_eval() {
  if (!eval_source_) return;
  const auto t0 = Clock::now();
  summary_.eval = evaluate(*model_, *eval_source_, tc_.eval_batch_size, tc_.eval_samples);
  last_auc_ = summary_.eval.auc;
  metrics_->write({{"type", "eval"}, {"step", step_}, {"auc", summary_.eval.auc}, {"log_loss", summary_.eval.log_loss},
                   {"samples", summary_.eval.samples}, {"seconds", seconds_since(t0)}});
}

std::string TrainingRun::last_good_note() const {
  if (!last_good_.empty())
    return "The last checkpoint of a state checked finite and within bounds is " + last_good_ + ".";
  if (tc_.checkpoint_dir.empty()) return "No checkpoint is written (train.checkpoint_dir is not set).";
  return "No checkpoint of this run has been written.";
}

}  // namespace

TrainSummary Trainer::run() {
  TrainingRun run(cfg_, log_, build_);
  run.observe(observer_);
  const TrainSummary summary = run.run();
  model_ = run.release_model();
  return summary;
}

}  // namespace hetrec::train::train

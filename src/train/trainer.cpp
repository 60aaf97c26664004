#include "train/trainer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/error.h"
#include "data/pipeline.h"
#include "data/bayes_auc.h"
#include "data/make_source.h"
#include "data/synthetic.h"
#include "train/auc.h"
#include "train/checkpoint.h"
#include "train/metrics_log.h"
#include "train/model_factory.h"
#include "train/progress.h"
#include "train/sharded_checkpoint.h"
#include "dist/process_group.h"
#include "model/dlrm.h"

namespace hetrec {

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

Trainer::Trainer(RunConfig config, const Logger& log) : cfg_(std::move(config)), log_(log) {}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Finds the newest checkpoint that verifies; damaged ones are reported and skipped.
std::string newest_valid_checkpoint(const std::string& dir, const Logger& log) {
  for (const auto& path : list_checkpoints(dir)) {
    try {
      verify_checkpoint(path);
      return path;
    } catch (const Error& e) {
      log.warn(std::string("skipping damaged checkpoint: ") + e.what());
    }
  }
  return {};
}

// A crash during a checkpoint write leaves its temporary file ("ckpt-*.hck.tmp-<pid>"),
// as large as a checkpoint; it is never read, so remove it before it fills the disk.
void remove_torn_writes(const std::string& dir, const Logger& log) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("ckpt-", 0) == 0 && name.find(".hck.tmp-") != std::string::npos) {
      std::error_code rm;
      std::filesystem::remove(e.path(), rm);
      log.info("removed an unfinished checkpoint write: " + e.path().string());
    }
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

}  // namespace

TrainSummary Trainer::run() {
  const TrainConfig& tc = cfg_.train;
  if (tc.threads > 0) omp_set_num_threads(tc.threads);

  TrainSummary summary;
  // Distributed: the ranks of the mpirun job; rank 0 logs, the others only warn.
  std::unique_ptr<dist::ProcessGroup> group;
  if (dist::launched_by_mpi()) group = dist::make_process_group(tc.collective_timeout_s);
  std::unique_ptr<dist::ProcessGroup> device_group;  // GPUs: the NCCL group the model exchanges over
  const bool rank0 = !group || group->rank() == 0;
  const Logger rank_log(std::max(log_.level(), LogLevel::warn));
  const Logger& log = rank0 ? log_ : rank_log;
  std::unique_ptr<Model> model;
  DistributedModel* dmodel = nullptr;
  const int world = group ? group->size() : 1;
  if (cfg_.recipe_gpus > 0 && cfg_.recipe_gpus != world)
    log.warn("the recipe was planned for " + std::to_string(cfg_.recipe_gpus) + " GPUs (recipe.gpus), this job has " +
             std::to_string(world) + " rank" + (world == 1 ? "" : "s") + "; its predictions do not apply");
  if (group) {
    const dist::ShardingPlan plan =
        dist::plan_sharding(cfg_.sharding, cfg_.model.tables, cfg_.model.embedding_dim, group->size());
    auto built = make_distributed_model(cfg_, plan, *group, device_group, log, &summary.device);
    dmodel = built.get();
    model = std::move(built);
    summary.rank = group->rank();
    summary.world_size = group->size();
    std::string placement;
    for (std::size_t t = 0; t < plan.tables.size(); ++t)
      placement += (t ? ", " : "") + cfg_.model.tables[t].name + ":" + dist::sharding_type_name(plan.tables[t].type) +
                   (plan.tables[t].type == dist::ShardingType::table_wise ? "@" + std::to_string(plan.tables[t].owner) : "");
    log.info("sharding over " + std::to_string(group->size()) + " ranks: " + placement + "; embedding exchanges in " +
             std::string(dtype_name(plan.exchange_dtype)));
  } else {
    model = make_model(cfg_, log, &summary.device);
  }
  log.info("model: " + model->describe());

  Pipeline pipeline(make_source(cfg_.data, cfg_.model, Split::train), tc.batch_size, cfg_.data.prefetch_batches);
  const bool evaluates = tc.eval_at_end || tc.eval_every > 0;
  std::unique_ptr<BatchSource> eval_source = evaluates ? make_eval_source(cfg_.data, cfg_.model) : nullptr;
  log.info("train data: " + pipeline.describe());
  if (eval_source) log.info("eval data: " + eval_source->describe());
  else if (!evaluates) log.info("evaluation off (train.eval_at_end = false, train.eval_every = 0)");
  else log.warn("no evaluation data (set data.eval_path): AUC is not computed");

  MetricsLog metrics(rank0 ? tc.metrics_path : std::string());
  const std::string signature = model_signature(cfg_.model);

  // Resume: restore every tensor and the position in the data.
  CheckpointMeta pos;
  std::string last_checkpoint;  // the newest checkpoint on disk that this run knows is good
  auto kept_note = [&]() {
    return last_checkpoint.empty() ? std::string(" No checkpoint has been written.")
                                   : " The last checkpoint, " + last_checkpoint + ", is intact.";
  };
  if (!tc.checkpoint_dir.empty() && rank0) {
    std::filesystem::create_directories(tc.checkpoint_dir);
    remove_torn_writes(tc.checkpoint_dir, log);
    if (group) remove_partial_checkpoints(tc.checkpoint_dir, log);
  }
  if (group) group->barrier("barrier(checkpoint directory ready)");
  if (tc.resume && group) {
    // Rank 0 picks the newest checkpoint that verifies; every rank loads its part of it.
    std::string path;
    if (rank0)
      for (const auto& candidate : list_distributed_checkpoints(tc.checkpoint_dir)) {
        try {
          verify_sharded_checkpoint(candidate);
          path = candidate;
          break;
        } catch (const Error& e) {
          log.warn(std::string("skipping damaged checkpoint: ") + e.what());
        }
      }
    int64_t length = static_cast<int64_t>(path.size());
    group->broadcast(&length, sizeof length, 0, "broadcast(resume checkpoint)");
    path.resize(static_cast<std::size_t>(length));
    group->broadcast(path.data(), length, 0, "broadcast(resume checkpoint)");
    if (path.empty()) {
      log.info("resume: no checkpoint in " + tc.checkpoint_dir + ", starting from step 0");
    } else {
      const CheckpointMeta found = verify_sharded_checkpoint(path);
      if (found.model_signature != signature)
        throw CheckpointError("checkpoint '" + path + "' was written for model '" + found.model_signature +
                              "', the config describes '" + signature + "'");
      pos = load_sharded_checkpoint(path, *dmodel);
      last_checkpoint = path;
      log.info("resumed from " + path + " at step " + std::to_string(pos.step) + " on " +
                std::to_string(group->size()) + " ranks");
    }
  } else if (tc.resume) {
    const std::string path = newest_valid_checkpoint(tc.checkpoint_dir, log);
    if (path.empty()) {
      log.info("resume: no checkpoint in " + tc.checkpoint_dir + ", starting from step 0");
    } else {
      const CheckpointMeta found = verify_checkpoint(path);
      if (found.model_signature != signature)
        throw CheckpointError("checkpoint '" + path + "' was written for model '" + found.model_signature +
                              "', the config describes '" + signature + "'");
      pos = load_checkpoint(path, model->state());
      last_checkpoint = path;
      log.info("resumed from " + path + " at step " + std::to_string(pos.step));
    }
  }

  const int64_t train_size = pipeline.size_hint();
  const int64_t steps_per_epoch = train_size > 0 ? (train_size + tc.batch_size - 1) / tc.batch_size : -1;
  const int64_t total_steps = tc.steps > 0 ? tc.steps : (steps_per_epoch > 0 ? steps_per_epoch * tc.epochs : -1);

  // Every rank computes it (when distributed), so that no rank waits for rank 0 in the
  // first collective for as long as this takes.
  if (eval_source) {
    if (const auto* syn = dynamic_cast<SyntheticSource*>(eval_source.get())) {
      const int64_t n = tc.eval_samples > 0 ? std::min(tc.eval_samples, syn->size_hint()) : syn->size_hint();
      summary.bayes_optimal_auc = bayes_optimal_auc(*syn, n);
      log.info("synthetic teacher: Bayes-optimal AUC on the evaluation set = " + std::to_string(summary.bayes_optimal_auc));
    }
  }

  int64_t step = pos.step, epoch = pos.epoch, position = pos.data_position;
  pipeline.seek(position);
  const bool show_progress = tc.progress == ProgressMode::on ||
                             (tc.progress == ProgressMode::auto_detect && ProgressLine::stream_is_terminal(stderr));
  ProgressLine progress(rank0 && (show_progress || tc.progress == ProgressMode::auto_detect), stderr);

  auto save = [&](const std::string& why) {
    if (tc.checkpoint_dir.empty()) return;
    const std::string path =
        group ? sharded_checkpoint_path(tc.checkpoint_dir, step) : checkpoint_path(tc.checkpoint_dir, step);
    try {
      if (group) save_sharded_checkpoint(path, CheckpointMeta{step, epoch, position, signature}, *dmodel);
      else save_checkpoint(path, CheckpointMeta{step, epoch, position, signature}, model->state());
    } catch (const IoError& e) {
      progress.finish();
      throw IoError(std::string(e.what()) + "." + kept_note());
    }
    if (group) {
      if (rank0) prune_distributed_checkpoints(tc.checkpoint_dir, tc.keep_checkpoints, log);
    } else {
      prune_checkpoints(tc.checkpoint_dir, tc.keep_checkpoints, log);
    }
    summary.checkpoint = path;
    last_checkpoint = path;
    metrics.write({{"type", "checkpoint"}, {"step", step}, {"path", path}, {"reason", why}});
  };
  double last_auc = std::numeric_limits<double>::quiet_NaN();
  auto run_eval = [&]() {
    if (!eval_source) return;
    const auto t0 = Clock::now();
    summary.eval = evaluate(*model, *eval_source, tc.eval_batch_size, tc.eval_samples);
    last_auc = summary.eval.auc;
    metrics.write({{"type", "eval"}, {"step", step}, {"auc", summary.eval.auc}, {"log_loss", summary.eval.log_loss},
                   {"samples", summary.eval.samples}, {"seconds", seconds_since(t0)}});
  };

  if (tc.checkpoint_at_start && step == 0) save("initial");

  Batch batch, next;    // next: read ahead, so the model can stage it while `batch` trains
  bool have_next = false;
  std::vector<double> step_ms;  // each train_step of this run
  // Each loop iteration's wall time (waiting for data, staging the next batch, the step,
  // logging; not evaluation or checkpoints) and its samples: the sustained rate.
  std::vector<double> loop_ms;
  std::vector<int64_t> loop_samples;
  const auto t_start = Clock::now();
  auto t_window = t_start;
  int64_t window_samples = 0, run_steps = 0;
  double window_loss = 0.0;
  int64_t window_steps = 0;
  double rate = 0.0;
  while (total_steps < 0 || step < total_steps) {
    const auto iter_start = Clock::now();
    if (have_next) {
      std::swap(batch, next);
      have_next = false;
    } else if (!pipeline.next(batch)) {
      if (position == 0) throw DataError("training data is empty: " + pipeline.describe());
      ++epoch;
      position = 0;
      if (tc.steps == 0 && epoch >= tc.epochs) break;
      pipeline.seek(0);
      continue;
    }
    // The batch after this one, within the epoch and the step budget.
    if ((total_steps < 0 || step + 1 < total_steps) && pipeline.next(next)) {
      have_next = true;
      model->prepare_next(next);
    }
    const StepRates rates = scheduled_rates(cfg_.optim, step);
    double loss = 0.0;
    try {
      const auto step_start = Clock::now();
      loss = model->train_step(batch, rates);
      step_ms.push_back(1e3 * seconds_since(step_start));
    } catch (const NumericError& e) {
      progress.finish();
      throw NumericError(std::string(e.what()) + kept_note());
    }
    if (!std::isfinite(loss)) {
      progress.finish();
      throw NumericError("step " + std::to_string(step + 1) + " (samples " + std::to_string(batch.first_sample) +
                         ".." + std::to_string(batch.first_sample + batch.size - 1) + " of the training data): loss is " +
                         (std::isnan(loss) ? "NaN" : "infinite") + "; lower optim.lr or check the input." + kept_note());
    }
    ++step;
    ++run_steps;
    position += batch.size;
    summary.samples += batch.size;
    summary.last_loss = loss;
    window_samples += batch.size;
    window_loss += loss;
    ++window_steps;
    const double window_s = seconds_since(t_window);
    if (window_s > 0) rate = static_cast<double>(window_samples) / window_s;
    if (step % tc.log_every == 0 || step == total_steps) {
      metrics.write({{"type", "train"}, {"step", step}, {"epoch", epoch}, {"loss", window_loss / static_cast<double>(window_steps)},
                     {"last_loss", loss}, {"dense_lr", rates.dense_lr}, {"sparse_lr", rates.sparse_lr},
                     {"samples_per_s", rate}, {"elapsed_s", seconds_since(t_start)},
                     {"skipped_lines", pipeline.counters().skipped_lines}});
      window_loss = 0.0;
      window_steps = 0;
    }
    if (window_s > 5.0) {  // a sliding window keeps samples/s current
      t_window = Clock::now();
      window_samples = 0;
    }
    const double per_step = seconds_since(t_start) / static_cast<double>(run_steps);
    progress.update(step, total_steps, rate, loss, last_auc,
                    total_steps > 0 ? per_step * static_cast<double>(total_steps - step) : -1.0);
    loop_ms.push_back(1e3 * seconds_since(iter_start));
    loop_samples.push_back(batch.size);
    if (tc.eval_every > 0 && step % tc.eval_every == 0 && step != total_steps) run_eval();
    if (tc.checkpoint_every > 0 && step % tc.checkpoint_every == 0 && step != total_steps) save("periodic");
  }
  progress.finish();
  summary.seconds = seconds_since(t_start);
  summarise_step_times(step_ms, tc.timing_warmup_steps, summary);
  summarise_loop_rate(loop_ms, loop_samples, tc.timing_warmup_steps, summary);
  summary.memory = model->device_memory();
  summary.overflow_skipped_steps = model->overflow_skipped_steps();
  if (summary.memory)
    log.info("device memory: allocator peak " + std::to_string(summary.memory->allocator_peak_bytes >> 20) +
              " MiB, reserved " + std::to_string(summary.memory->allocator_reserved_bytes >> 20) + " MiB; device used " +
              std::to_string(summary.memory->device_used_bytes >> 20) + " MiB (" +
              std::to_string(summary.memory->device_used_at_start_bytes >> 20) + " MiB before the model)");
  summary.steps = step;
  summary.samples_per_s = summary.seconds > 0 ? static_cast<double>(summary.samples) / summary.seconds : 0.0;
  if (tc.eval_at_end) run_eval();
  save("final");
  nlohmann::json final_record = {{"type", "final"},
                                 {"step", step},
                                 {"samples", summary.samples},
                                 {"seconds", summary.seconds},
                                 {"samples_per_s", summary.samples_per_s},
                                 {"loss", summary.last_loss},
                                 {"device", summary.device},
                                 {"skipped_lines", pipeline.counters().skipped_lines}};
  if (summary.eval.samples > 0) {
    final_record["auc"] = summary.eval.auc;
    final_record["log_loss"] = summary.eval.log_loss;
  }
  if (summary.bayes_optimal_auc >= 0) final_record["bayes_optimal_auc"] = summary.bayes_optimal_auc;
  final_record["timed_steps"] = summary.timed_steps;
  final_record["step_ms_median"] = summary.step_ms_median;
  final_record["step_ms_mean"] = summary.step_ms_mean;
  final_record["step_ms_p90"] = summary.step_ms_p90;
  final_record["loop_ms_median"] = summary.loop_ms_median;
  final_record["loop_samples_per_s"] = summary.loop_samples_per_s;
  final_record["overflow_skipped_steps"] = summary.overflow_skipped_steps;
  if (summary.memory) {
    const DeviceMemoryReport& m = *summary.memory;
    final_record["device_memory"] = {{"allocator_peak_bytes", m.allocator_peak_bytes},
                                     {"allocator_reserved_bytes", m.allocator_reserved_bytes},
                                     {"outside_allocator_bytes", m.outside_allocator_bytes},
                                     {"device_used_at_start_bytes", m.device_used_at_start_bytes},
                                     {"device_used_bytes", m.device_used_bytes},
                                     {"device_total_bytes", m.device_total_bytes},
                                     {"host_table_bytes", m.host_table_bytes}};
  }
  metrics.write(final_record);
  return summary;
}

}  // namespace hetrec

// `hetrec train` and `hetrec eval`.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "dist/process_group.h"
#include "model/dlrm.h"
#include "train/model_factory.h"
#include "train/sharded_checkpoint.h"
#include "train/trainer.h"

namespace hetrec::cli {
namespace {

struct RunOptions {
  std::string config;
  std::string recipe;
  std::vector<std::string> overrides;
};

void add_run_options(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("--config,-c", o.config, "model/data/train config (TOML)")->required();
  cmd->add_option("--recipe", o.recipe, "recipe from `hetrec plan` (TOML with a [recipe] table)");
  cmd->add_option("--set", o.overrides, "override a config key, e.g. --set train.steps=100 (repeatable)");
}

void print_summary(const TrainSummary& s) {
  std::printf("\n== hetrec train: done ==\n");
  std::printf("device            %s\n", s.device.c_str());
  std::printf("steps             %lld (%lld samples in %.1f s)\n", static_cast<long long>(s.steps),
              static_cast<long long>(s.samples), s.seconds);
  std::printf("throughput        %.0f samples/s\n", s.samples_per_s);
  if (s.timed_steps > 0)
    std::printf("step time         %.3f ms median, %.3f ms mean, %.3f ms p90 (%lld timed steps)\n", s.step_ms_median,
                s.step_ms_mean, s.step_ms_p90, static_cast<long long>(s.timed_steps));
  if (s.timed_steps > 0)
    std::printf("sustained         %.0f samples/s over the same steps (%.3f ms median per loop iteration: "
                "data, staging, step)\n",
                s.loop_samples_per_s, s.loop_ms_median);
  if (s.memory) {
    const double mib = 1024.0 * 1024.0;
    std::printf("device memory     allocator peak %.0f MiB (reserved %.0f MiB), outside it %.0f MiB; "
                "device used %.0f MiB of %.0f MiB (%.0f MiB before the model)\n",
                static_cast<double>(s.memory->allocator_peak_bytes) / mib,
                static_cast<double>(s.memory->allocator_reserved_bytes) / mib,
                static_cast<double>(s.memory->outside_allocator_bytes) / mib,
                static_cast<double>(s.memory->device_used_bytes) / mib,
                static_cast<double>(s.memory->device_total_bytes) / mib,
                static_cast<double>(s.memory->device_used_at_start_bytes) / mib);
    if (s.memory->host_table_bytes > 0)
      std::printf("host tables       %.0f MiB of mapped page-locked host memory\n",
                  static_cast<double>(s.memory->host_table_bytes) / mib);
  }
  if (s.overflow_skipped_steps > 0)
    std::printf("skipped updates   %lld (fp16 gradients overflowed; the loss scale was halved each time)\n",
                static_cast<long long>(s.overflow_skipped_steps));
  std::printf("last train loss   %.5f\n", s.last_loss);
  if (s.eval.samples > 0) {
    std::printf("eval AUC          %.5f (%lld samples)\n", s.eval.auc, static_cast<long long>(s.eval.samples));
    std::printf("eval log-loss     %.5f\n", s.eval.log_loss);
  }
  if (s.bayes_optimal_auc >= 0) {
    std::printf("teacher AUC       %.5f (Bayes-optimal for the synthetic data)\n", s.bayes_optimal_auc);
    if (s.eval.samples > 0) std::printf("gap to optimum    %.5f\n", s.bayes_optimal_auc - s.eval.auc);
  }
  if (!s.checkpoint.empty()) std::printf("checkpoint        %s\n", s.checkpoint.c_str());
  std::fflush(stdout);
}

}  // namespace

void add_train_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("train", "train a model (GPU if built and present, else CPU)");
  add_run_options(cmd, *opts);
  cmd->callback([opts, &action] {
    action = [opts] {
      RunConfig cfg = load_run_config(opts->config, opts->overrides, opts->recipe);
      Logger log(parse_log_level(cfg.train.log_level));
      Trainer trainer(cfg, log, BuildIdentity{kBuildVersion, kBuildCommit});
      const TrainSummary summary = trainer.run();
      if (summary.rank == 0) print_summary(summary);  // distributed: rank 0 reports
    };
  });
}

void add_eval_command(CLI::App& app, Action& action) {
  auto opts = std::make_shared<RunOptions>();
  auto checkpoint = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("eval", "evaluate a checkpoint on the evaluation data (AUC, log-loss)");
  add_run_options(cmd, *opts);
  cmd->add_option("--checkpoint", *checkpoint,
                  "checkpoint file (ckpt-*.hck) or sharded checkpoint directory (ckpt-*.d, any world size)")
      ->required();
  cmd->callback([opts, checkpoint, &action] {
    action = [opts, checkpoint] {
      RunConfig cfg = load_run_config(opts->config, opts->overrides, opts->recipe);
      Logger log(parse_log_level(cfg.train.log_level));
      const std::string signature = model_signature(cfg.model);
      const bool sharded = std::filesystem::is_directory(*checkpoint);
      std::unique_ptr<Model> model;
      std::unique_ptr<dist::ProcessGroup> group;
      CheckpointMeta meta;
      if (sharded || dist::launched_by_mpi()) {
        // A sharded checkpoint (any world size) loads into the data-parallel CPU model,
        // one process or the ranks of an mpirun job.
        group = dist::make_process_group(cfg.train.collective_timeout_s);
        const dist::ShardingSpec spec = group->size() == 1 ? dist::ShardingSpec{} : cfg.sharding;
        const dist::ShardingPlan plan =
            dist::plan_sharding(spec, cfg.model.tables, cfg.model.embedding_dim, group->size());
        auto distributed = make_distributed_cpu_model(cfg.model, cfg.optim, plan, *group);
        meta = verify_sharded_checkpoint(*checkpoint);
        if (meta.model_signature != signature)
          throw CheckpointError("checkpoint '" + *checkpoint + "' was written for model '" + meta.model_signature +
                                "', the config describes '" + signature + "'");
        load_sharded_checkpoint(*checkpoint, *distributed);
        model = std::move(distributed);
      } else {
        std::string device;
        model = make_model(cfg, log, &device);
        meta = verify_checkpoint(*checkpoint);
        if (meta.model_signature != signature)
          throw CheckpointError("checkpoint '" + *checkpoint + "' was written for model '" + meta.model_signature +
                                "', the config describes '" + signature + "'");
        load_checkpoint(*checkpoint, model->state());
      }
      auto source = make_eval_source(cfg.data, cfg.model);
      if (!source) throw ConfigError(cfg.source + ": config key 'data.eval_path': needed for evaluation");
      const EvalResult r = evaluate(*model, *source, cfg.train.eval_batch_size, cfg.train.eval_samples);
      if (group && group->rank() != 0) return;
      std::printf("checkpoint  %s (step %lld)\n", checkpoint->c_str(), static_cast<long long>(meta.step));
      std::printf("eval AUC    %.5f (%lld samples)\neval loss   %.5f\n", r.auc, static_cast<long long>(r.samples),
                  r.log_loss);
    };
  });
}

}  // namespace hetrec::cli

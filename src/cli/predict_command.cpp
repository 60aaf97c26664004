// `hetrec predict`: a checkpoint's logits and predictions on the first samples of the
// evaluation data, written with those samples as one safetensors file, so that another
// implementation of the network (python/hetrec_numpy.py, python/hetrec_torch.py) can be
// compared with hetrec's own outputs (docs/export.md).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "core/log.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/model_factory.h"
#include "train/safetensors.h"
#include "train/trainer.h"

namespace hetrec::cli {
namespace {

// Samples scored when --samples is not given: enough for every table to see many rows,
// small enough to write and compare in a moment.
constexpr int64_t kDefaultSamples = 4096;

struct PredictOptions {
  std::string config;
  std::string recipe;
  std::vector<std::string> overrides;
  std::string checkpoint;
  int64_t samples = kDefaultSamples;
  std::string output;
};

template <class T>
NamedTensor vector_tensor(const std::string& name, const std::vector<T>& values, std::vector<int64_t> shape,
                          DType dtype) {
  Tensor t = Tensor::empty(std::move(shape), dtype);
  HETREC_CHECK(t.nbytes() == values.size() * sizeof(T), "predict: tensor '" + name + "' size");
  if (!values.empty()) std::memcpy(t.raw(), values.data(), t.nbytes());
  return {name, std::move(t)};
}

void run_predict(const PredictOptions& o) {
  if (o.samples <= 0) throw ConfigError("--samples: expected a positive count, got " + std::to_string(o.samples));
  const RunConfig cfg = load_run_config(o.config, o.overrides, o.recipe);
  if (std::filesystem::is_directory(o.checkpoint))
    throw ConfigError("--checkpoint '" + o.checkpoint +
                      "' is a directory (a sharded checkpoint); predict reads a single-file checkpoint (ckpt-*.hck)");
  std::error_code ec;
  if (std::filesystem::equivalent(o.output, o.checkpoint, ec) && !ec)
    throw ConfigError("--output '" + o.output + "' is the checkpoint '" + o.checkpoint + "' it would read");
  Logger log(parse_log_level(cfg.train.log_level));
  std::string device;
  std::unique_ptr<Model> model = make_model(cfg, log, &device);
  const CheckpointMeta meta = verify_checkpoint(o.checkpoint);
  const std::string signature = model_signature(cfg.model);
  if (meta.model_signature != signature)
    throw CheckpointError("checkpoint '" + o.checkpoint + "' was written for model '" + meta.model_signature +
                          "', the config describes '" + signature + "'");
  load_checkpoint(o.checkpoint, model->state());

  auto source = make_eval_source(cfg.data, cfg.model);
  if (!source) throw ConfigError(cfg.source + ": config key 'data.eval_path': needed for predictions");
  source->seek(0);
  Batch batch;
  if (!source->next(batch, o.samples)) throw DataError(source->describe() + ": the evaluation data holds no sample");
  std::vector<float> logits(static_cast<std::size_t>(batch.size));
  model->predict(batch, logits);
  std::vector<float> predictions(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i)
    predictions[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(logits[i]))));

  const int64_t b = batch.size;
  std::vector<NamedTensor> tensors;
  tensors.push_back(vector_tensor("dense", batch.dense, {b, batch.num_dense}, DType::f32));
  tensors.push_back(vector_tensor("offsets", batch.offsets, {static_cast<int64_t>(batch.offsets.size())}, DType::i32));
  tensors.push_back(vector_tensor("ids", batch.ids, {static_cast<int64_t>(batch.ids.size())}, DType::i32));
  tensors.push_back(vector_tensor("labels", batch.labels, {b}, DType::f32));
  tensors.push_back(vector_tensor("logits", logits, {b}, DType::f32));
  tensors.push_back(vector_tensor("predictions", predictions, {b}, DType::f32));
  write_safetensors(o.output, tensors,
                    {{"checkpoint", o.checkpoint},
                     {"step", std::to_string(meta.step)},
                     {"device", device},
                     {"num_tables", std::to_string(batch.num_tables)},
                     {"first_sample", std::to_string(batch.first_sample)}});
  std::printf("checkpoint   %s (step %lld)\n", o.checkpoint.c_str(), static_cast<long long>(meta.step));
  std::printf("device       %s\n", device.c_str());
  std::printf("samples      %lld of the evaluation data\n", static_cast<long long>(b));
  std::printf("wrote        %s\n", o.output.c_str());
}

}  // namespace

void add_predict_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<PredictOptions>();
  CLI::App* cmd = app.add_subcommand(
      "predict", "write a checkpoint's logits and predictions on evaluation samples, with the samples (safetensors)");
  cmd->add_option("--config,-c", o->config, "model/data/train config (TOML)")->required();
  cmd->add_option("--recipe", o->recipe, "recipe from `hetrec plan` (TOML with a [recipe] table)");
  cmd->add_option("--set", o->overrides, "override a config key, e.g. --set train.device=cpu (repeatable)");
  cmd->add_option("--checkpoint", o->checkpoint, "checkpoint file (ckpt-*.hck)")->required();
  cmd->add_option("--samples", o->samples, "samples from the start of the evaluation data")->capture_default_str();
  cmd->add_option("--output,-o", o->output, "output file (safetensors: dense, offsets, ids, labels, logits, predictions)")
      ->required();
  cmd->callback([o, &action] { action = [o] { run_predict(*o); }; });
}

}  // namespace hetrec::cli

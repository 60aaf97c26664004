#include "train/config_json.h"

#include <string>

namespace hetrec::inline train {
namespace {

// The spellings the config file uses (train/config.cpp), not the enum identifiers.
std::string dtype_key(DType t) {
  switch (t) {
    case DType::f32: return "fp32";
    case DType::f16: return "fp16";
    case DType::bf16: return "bf16";
    default: return std::string(dtype_name(t));
  }
}

const char* optimizer_key(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::sgd: return "sgd";
    case OptimizerKind::adagrad: return "adagrad";
    case OptimizerKind::rowwise_adagrad: return "rowwise_adagrad";
    case OptimizerKind::adam: return "adam";
  }
  return "?";
}

const char* format_key(DataFormat f) {
  switch (f) {
    case DataFormat::synthetic: return "synthetic";
    case DataFormat::criteo_tsv: return "criteo_tsv";
    case DataFormat::binary: return "binary";
    case DataFormat::mlperf_multihot: return "mlperf_multihot";
  }
  return "?";
}

nlohmann::json model_json(const ModelConfig& m) {
  nlohmann::json tables = nlohmann::json::array();
  for (const TableConfig& t : m.tables)
    tables.push_back({{"name", t.name}, {"rows", t.rows}, {"hotness", t.hotness},
                      {"pooling", t.pooling == Pooling::sum ? "sum" : "mean"}, {"variable_bags", t.variable_bags}});
  return {{"arch", m.arch == Arch::dlrm ? "dlrm" : "dcnv2"},
          {"num_dense", m.num_dense},
          {"embedding_dim", m.embedding_dim},
          {"tables", tables},
          {"bottom_mlp", m.bottom_mlp},
          {"top_mlp", m.top_mlp},
          {"interaction_self", m.interaction_self},
          {"cross_layers", m.cross_layers},
          {"cross_rank", m.cross_rank},
          {"cross_residual", m.cross_residual_16bit ? "16bit" : "fp32"},
          {"unaligned_gemms", m.unaligned_tf32 ? "tf32" : "fp32"},
          {"relu_backward", relu_backward_name(m.relu_backward)},
          {"row_dtype", dtype_key(m.row_dtype)},
          {"dense_dtype", dtype_key(m.dense_dtype)},
          {"allow_tf32", m.allow_tf32},
          {"gemm_selection", m.gemm_selection == GemmSelection::library ? "library" : "model"},
          {"sort", m.sort == SortSelection::engine ? "engine" : m.sort == SortSelection::library ? "library" : "auto"},
          {"gemm_hardware", m.gemm_hardware},
          {"gemm_params", m.gemm_params},
          {"gemm_cache", m.gemm_cache},
          {"gemm_ranker", m.gemm_ranker},
          {"gemm_timed_shortlist", m.gemm_timed_shortlist},
          {"host_tables", m.host_tables},
          {"init_seed", m.init_seed}};
}

nlohmann::json optim_json(const OptimConfig& o) {
  return {{"dense", optimizer_key(o.dense)},
          {"sparse", optimizer_key(o.sparse)},
          {"lr", o.lr},
          {"sparse_lr", o.sparse_lr},
          {"eps", o.eps},
          {"adagrad_initial_accumulator", o.adagrad_initial_accumulator},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"warmup_steps", o.warmup_steps},
          {"decay_start", o.decay_start},
          {"decay_steps", o.decay_steps},
          {"decay_power", o.decay_power},
          {"loss_scale", o.loss_scale},
          {"loss_scale_growth_interval", o.loss_scale_growth_interval}};
}

nlohmann::json data_json(const DataConfig& d) {
  const SyntheticConfig& s = d.synthetic;
  return {{"format", format_key(d.format)},
          {"train_path", d.train_path},
          {"eval_path", d.eval_path},
          {"categorical", d.categorical == CategoricalMapping::modulo ? "modulo" : "hash"},
          {"missing_categorical_id", d.missing_categorical_id},
          {"on_error", d.on_error == OnError::fail ? "fail" : "skip"},
          {"prefetch_batches", d.prefetch_batches},
          {"reader_threads", d.reader_threads},
          {"synthetic",
           {{"train_samples", s.train_samples},
            {"eval_samples", s.eval_samples},
            {"seed", s.seed},
            {"zipf_exponent", s.zipf_exponent},
            {"teacher_dim", s.teacher_dim},
            {"teacher_scale", s.teacher_scale},
            {"label_flip", s.label_flip}}}};
}

nlohmann::json train_json(const TrainConfig& t) {
  const char* progress = t.progress == ProgressMode::on ? "on" : t.progress == ProgressMode::off ? "off" : "auto";
  const char* device = t.device == DeviceChoice::cpu ? "cpu" : t.device == DeviceChoice::gpu ? "gpu" : "auto";
  return {{"batch_size", t.batch_size},
          {"steps", t.steps},
          {"epochs", t.epochs},
          {"eval_every", t.eval_every},
          {"eval_batch_size", t.eval_batch_size},
          {"eval_samples", t.eval_samples},
          {"eval_at_end", t.eval_at_end},
          {"timing_warmup_steps", t.timing_warmup_steps},
          {"checkpoint_dir", t.checkpoint_dir},
          {"checkpoint_every", t.checkpoint_every},
          {"keep_checkpoints", t.keep_checkpoints},
          {"checkpoint_at_start", t.checkpoint_at_start},
          {"resume", t.resume},
          {"metrics_path", t.metrics_path},
          {"log_every", t.log_every},
          {"progress", progress},
          {"threads", t.threads},
          {"device", device},
          {"log_level", t.log_level},
          {"collective_timeout_s", t.collective_timeout_s}};
}

nlohmann::json sharding_json(const dist::ShardingSpec& s) {
  nlohmann::json tables = nlohmann::json::object();
  for (const auto& [name, choice] : s.tables) {
    nlohmann::json t = {{"type", dist::sharding_type_name(choice.type)}};
    if (choice.owner >= 0) t["rank"] = choice.owner;
    if (!choice.row_bounds.empty()) t["row_bounds"] = choice.row_bounds;
    tables[name] = t;
  }
  return {{"default", dist::sharding_type_name(s.default_type)},
          {"exchange_dtype", dtype_key(s.exchange_dtype)},
          {"tables", tables}};
}

}  // namespace

nlohmann::json resolved_config_json(const RunConfig& cfg) {
  nlohmann::json recipe = {{"sharding", sharding_json(cfg.sharding)}};
  if (cfg.recipe_gpus > 0) recipe["gpus"] = cfg.recipe_gpus;
  return {{"source", cfg.source},
          {"model", model_json(cfg.model)},
          {"optim", optim_json(cfg.optim)},
          {"data", data_json(cfg.data)},
          {"train", train_json(cfg.train)},
          {"recipe", recipe}};
}

}  // namespace hetrec::train::train

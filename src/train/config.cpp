#include "train/config.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "core/error.h"

namespace hetrec::inline train {
namespace {

// A config or recipe file that cannot be opened (missing, a directory, no permission) is
// a mistake in the command line, so a ConfigError (exit code 2); a read that fails once
// the file is open is an IoError.
std::string read_config_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(what + " '" + path + "': is a directory, expected a TOML file");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    throw ConfigError(what + " '" + path + "': cannot open for reading (" + std::strerror(err) + ")");
  }
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw IoError(what + " '" + path + "': read failed");
  return ss.str();
}

// The source name of the values a `--set key=value` override puts into the config: its
// nodes carry it, so that an error about such a value names the option, not the file.
constexpr std::string_view kOverridePrefix = "--set ";

toml::table parse_toml(const std::string& text, const std::string& name) {
  try {
    return toml::parse(std::string_view(text), std::string_view(name));
  } catch (const toml::parse_error& e) {
    const auto& pos = e.source().begin;
    throw ConfigError(name + ":" + std::to_string(pos.line) + ":" + std::to_string(pos.column) +
                      ": invalid TOML: " + std::string(e.description()));
  }
}

// Reads one table of the config, remembering which keys were used so that anything
// left over can be reported as unknown.
class Section {
 public:
  Section(const toml::table* table, std::string prefix, std::string file)
      : table_(table), prefix_(std::move(prefix)), file_(std::move(file)) {}

  bool has(const std::string& key) const { return table_ && table_->contains(key); }
  std::string key_name(const std::string& key) const { return prefix_.empty() ? key : prefix_ + "." + key; }
  const std::string& prefix() const { return prefix_; }

  [[noreturn]] void fail(const std::string& key, const std::string& expected) const {
    throw ConfigError(where(node(key)) + ": config key '" + key_name(key) + "': " + expected);
  }

  int64_t integer(const std::string& key, int64_t fallback, int64_t lo, int64_t hi) {
    const toml::node* n = take(key);
    if (!n) return fallback;
    if (!n->is_integer()) fail(key, "expected an integer, got " + type_name(*n));
    const int64_t v = n->as_integer()->get();
    if (v < lo || v > hi)
      fail(key, "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
    return v;
  }
  double number(const std::string& key, double fallback, double lo, double hi) {
    const toml::node* n = take(key);
    if (!n) return fallback;
    double v;
    if (n->is_floating_point()) v = n->as_floating_point()->get();
    else if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else fail(key, "expected a number, got " + type_name(*n));
    if (!(v >= lo && v <= hi))
      fail(key, "expected a number in [" + fmt_double(lo) + ", " + fmt_double(hi) + "], got " + fmt_double(v));
    return v;
  }
  bool boolean(const std::string& key, bool fallback) {
    const toml::node* n = take(key);
    if (!n) return fallback;
    if (!n->is_boolean()) fail(key, "expected true or false, got " + type_name(*n));
    return n->as_boolean()->get();
  }
  std::string string(const std::string& key, const std::string& fallback) {
    const toml::node* n = take(key);
    if (!n) return fallback;
    if (!n->is_string()) fail(key, "expected a string, got " + type_name(*n));
    return n->as_string()->get();
  }
  // A string that must be one of `allowed`.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& allowed) {
    std::string v = string(key, fallback);
    for (const auto& a : allowed)
      if (a == v) return v;
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(key, "expected one of " + list + ", got '" + v + "'");
  }
  std::vector<int64_t> int_list(const std::string& key, int64_t lo, int64_t hi) {
    const toml::node* n = take(key);
    if (!n) return {};
    if (!n->is_array()) fail(key, "expected an array of integers, got " + type_name(*n));
    std::vector<int64_t> out;
    for (const auto& e : *n->as_array()) {
      if (!e.is_integer()) fail(key, "expected an array of integers, found an element of type " + type_name(e));
      const int64_t v = e.as_integer()->get();
      if (v < lo || v > hi)
        fail(key, "element " + std::to_string(out.size()) + " must be in [" + std::to_string(lo) + ", " +
                      std::to_string(hi) + "], got " + std::to_string(v));
      out.push_back(v);
    }
    return out;
  }
  std::vector<std::string> string_list(const std::string& key) {
    const toml::node* n = take(key);
    if (!n) return {};
    if (!n->is_array()) fail(key, "expected an array of strings, got " + type_name(*n));
    std::vector<std::string> out;
    for (const auto& e : *n->as_array()) {
      if (!e.is_string()) fail(key, "expected an array of strings, found an element of type " + type_name(e));
      out.push_back(e.as_string()->get());
    }
    return out;
  }
  // The keys present in this table, in file order.
  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    if (table_)
      for (const auto& [k, v] : *table_) out.emplace_back(k.str());
    return out;
  }
  const toml::node* take(const std::string& key) {
    used_.insert(key);
    return node(key);
  }
  const toml::node* node(const std::string& key) const { return table_ ? table_->get(key) : nullptr; }
  Section sub(const std::string& key) {
    const toml::node* n = take(key);
    if (n && !n->is_table()) fail(key, "expected a table, got " + type_name(*n));
    return Section(n ? n->as_table() : nullptr, key_name(key), file_);
  }
  // Every key present but never read is an error, with the list of valid keys.
  void reject_unknown() const {
    if (!table_) return;
    for (const auto& [k, v] : *table_) {
      const std::string key(k.str());
      if (!used_.count(key)) {
        std::string valid;
        for (const auto& u : used_) valid += (valid.empty() ? "" : ", ") + u;
        throw ConfigError(where(&v) + ": unknown config key '" + key_name(key) + "' (valid keys here: " + valid + ")");
      }
    }
  }
  static std::string type_name(const toml::node& n) {
    switch (n.type()) {
      case toml::node_type::string: return "a string";
      case toml::node_type::integer: return "an integer";
      case toml::node_type::floating_point: return "a float";
      case toml::node_type::boolean: return "a boolean";
      case toml::node_type::array: return "an array";
      case toml::node_type::table: return "a table";
      default: return "a date/time";
    }
  }
  // Where a value came from: "--set key=value" for an override, else "file:line" (or the
  // file alone when the node has no line, or there is no node).
  std::string where(const toml::node* n) const { return origin(file_, n); }
  static std::string origin(const std::string& file, const toml::node* n) {
    if (!n) return file;
    const toml::source_region& src = n->source();
    if (src.path && std::string_view(*src.path).starts_with(kOverridePrefix)) return *src.path;
    return src.begin.line > 0 ? file + ":" + std::to_string(src.begin.line) : file;
  }
  static std::string fmt_double(double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  }

 private:
  const toml::table* table_;
  std::string prefix_;
  std::string file_;
  std::set<std::string> used_;
};

constexpr int64_t kMaxRows = 2147483647;  // ids are int32 in the batch layout
constexpr int64_t kMaxI = INT64_MAX / 4;

void parse_tables(Section& m, ModelConfig& model) {
  const bool has_list = m.has("table_rows");
  const bool has_array = m.has("tables");
  if (has_list == has_array)
    m.fail(has_list ? "tables" : "table_rows",
           "give the tables either as table_rows = [...] (with optional table_hotness, pooling, "
           "variable_bags) or as [[model.tables]] entries, exactly one of the two");
  if (has_list) {
    const auto rows = m.int_list("table_rows", 1, kMaxRows);
    auto hot = m.int_list("table_hotness", 1, 100000);
    if (hot.empty()) hot.assign(rows.size(), 1);
    if (hot.size() != rows.size())
      m.fail("table_hotness", "expected " + std::to_string(rows.size()) + " entries (one per table_rows entry), got " +
                                  std::to_string(hot.size()));
    const std::string pooling = m.choice("pooling", "sum", {"sum", "mean"});
    const bool variable = m.boolean("variable_bags", false);
    for (std::size_t t = 0; t < rows.size(); ++t) {
      TableConfig tc;
      tc.name = "t" + std::to_string(t);
      tc.rows = rows[t];
      tc.hotness = static_cast<int>(hot[t]);
      tc.pooling = pooling == "mean" ? Pooling::mean : Pooling::sum;
      tc.variable_bags = variable;
      model.tables.push_back(tc);
    }
    if (rows.empty()) m.fail("table_rows", "expected at least one table");
    return;
  }
  const toml::node* n = m.take("tables");
  if (!n->is_array_of_tables()) m.fail("tables", "expected [[model.tables]] entries (an array of tables)");
  std::set<std::string> names;
  int index = 0;
  for (const auto& e : *n->as_array()) {
    Section t(e.as_table(), m.key_name("tables") + "[" + std::to_string(index) + "]", "");
    TableConfig tc;
    tc.name = t.string("name", "t" + std::to_string(index));
    tc.rows = t.integer("rows", 0, 1, kMaxRows);
    if (tc.rows == 0) m.fail("tables", "entry " + std::to_string(index) + " needs rows = N");
    tc.hotness = static_cast<int>(t.integer("hotness", 1, 1, 100000));
    tc.pooling = t.choice("pooling", "sum", {"sum", "mean"}) == "mean" ? Pooling::mean : Pooling::sum;
    tc.variable_bags = t.boolean("variable_bags", false);
    t.reject_unknown();
    if (!names.insert(tc.name).second) m.fail("tables", "duplicate table name '" + tc.name + "'");
    model.tables.push_back(tc);
    ++index;
  }
  if (model.tables.empty()) m.fail("tables", "expected at least one table");
}

std::vector<int> to_int_vector(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

OptimizerKind parse_optimizer(Section& s, const std::string& key, const std::string& fallback,
                              const std::vector<std::string>& allowed) {
  const std::string v = s.choice(key, fallback, allowed);
  if (v == "sgd") return OptimizerKind::sgd;
  if (v == "adagrad") return OptimizerKind::adagrad;
  if (v == "rowwise_adagrad") return OptimizerKind::rowwise_adagrad;
  return OptimizerKind::adam;
}

// host_tables: names of the model's tables, each at most once.
std::vector<std::string> parse_host_tables(Section& s, const ModelConfig& model) {
  std::vector<std::string> names = s.string_list("host_tables");
  std::set<std::string> seen;
  for (const std::string& n : names) {
    bool known = false;
    for (const TableConfig& t : model.tables) known = known || t.name == n;
    if (!known) {
      std::string valid;
      for (const TableConfig& t : model.tables) valid += (valid.empty() ? "" : ", ") + t.name;
      s.fail("host_tables", "'" + n + "' is not a table of the model (tables: " + valid + ")");
    }
    if (!seen.insert(n).second) s.fail("host_tables", "table '" + n + "' is named twice");
  }
  return names;
}

GemmSelection parse_gemm_selection(Section& s) {
  return s.choice("gemm_selection", "library", {"library", "model"}) == "model" ? GemmSelection::model
                                                                              : GemmSelection::library;
}

void parse_model(Section m, ModelConfig& model) {
  model.arch = m.choice("arch", "dlrm", {"dlrm", "dcnv2"}) == "dcnv2" ? Arch::dcnv2 : Arch::dlrm;
  model.num_dense = static_cast<int>(m.integer("num_dense", 13, 1, 100000));
  model.embedding_dim = static_cast<int>(m.integer("embedding_dim", 16, 1, 65536));
  parse_tables(m, model);
  model.bottom_mlp = to_int_vector(m.int_list("bottom_mlp", 1, 1 << 20));
  model.top_mlp = to_int_vector(m.int_list("top_mlp", 1, 1 << 20));
  if (model.bottom_mlp.empty()) m.fail("bottom_mlp", "expected at least one layer width");
  if (model.top_mlp.empty()) m.fail("top_mlp", "expected at least one layer width");
  if (model.bottom_mlp.back() != model.embedding_dim)
    m.fail("bottom_mlp", "the last width must equal model.embedding_dim = " + std::to_string(model.embedding_dim) +
                             ", got " + std::to_string(model.bottom_mlp.back()));
  if (model.top_mlp.back() != 1)
    m.fail("top_mlp", "the last width must be 1 (the logit), got " + std::to_string(model.top_mlp.back()));
  model.interaction_self = m.boolean("interaction_self", false);
  model.cross_layers = static_cast<int>(m.integer("cross_layers", 3, 0, 64));
  model.cross_rank = static_cast<int>(m.integer("cross_rank", 0, 0, 1 << 20));
  model.cross_residual_16bit = m.choice("cross_residual", "fp32", {"fp32", "16bit"}) == "16bit";
  model.unaligned_tf32 = m.choice("unaligned_gemms", "tf32", {"tf32", "fp32"}) == "tf32";
  const std::string relu_backward = m.choice("relu_backward", "mask_pass", {"epilogue", "split", "pass", "mask_pass"});
  model.relu_backward = relu_backward == "split"       ? ReluBackward::split
                        : relu_backward == "pass"      ? ReluBackward::pass
                        : relu_backward == "mask_pass" ? ReluBackward::mask_pass
                                                       : ReluBackward::epilogue;
  model.row_dtype = parse_dtype(m.choice("row_dtype", "fp32", {"fp32", "fp16", "bf16"}), m.key_name("row_dtype"));
  model.dense_dtype =
      parse_dtype(m.choice("dense_dtype", "fp32", {"fp32", "bf16", "fp16"}), m.key_name("dense_dtype"));
  model.allow_tf32 = m.boolean("allow_tf32", false);
  model.gemm_selection = parse_gemm_selection(m);
  const std::string sort = m.choice("sort", "auto", {"auto", "engine", "library"});
  model.sort = sort == "engine" ? SortSelection::engine : sort == "library" ? SortSelection::library
                                                                            : SortSelection::automatic;
  model.gemm_hardware = m.string("gemm_hardware", "");
  model.gemm_params = m.string("gemm_params", "");
  model.gemm_cache = m.string("gemm_cache", "");
  model.gemm_ranker = m.string("gemm_ranker", "");
  model.gemm_timed_shortlist = static_cast<int>(m.integer("gemm_timed_shortlist", 0, 0, 64));
  model.host_tables = parse_host_tables(m, model);
  model.init_seed = static_cast<uint64_t>(m.integer("init_seed", 1, 0, kMaxI));
  m.reject_unknown();
}

void parse_optim(Section o, OptimConfig& opt) {
  opt.dense = parse_optimizer(o, "dense", "adagrad", {"sgd", "adagrad", "adam"});
  opt.sparse = parse_optimizer(o, "sparse", "rowwise_adagrad", {"sgd", "adagrad", "rowwise_adagrad"});
  opt.lr = o.number("lr", 0.005, 0.0, 1e6);
  opt.sparse_lr = o.number("sparse_lr", opt.lr, 0.0, 1e6);
  opt.eps = o.number("eps", 1e-8, 0.0, 1.0);
  opt.adagrad_initial_accumulator = o.number("adagrad_initial_accumulator", 0.0, 0.0, 1e6);
  opt.beta1 = o.number("beta1", 0.9, 0.0, 0.999999);
  opt.beta2 = o.number("beta2", 0.999, 0.0, 0.99999999);
  opt.warmup_steps = o.integer("warmup_steps", 0, 0, kMaxI);
  opt.decay_start = o.integer("decay_start", 0, 0, kMaxI);
  opt.decay_steps = o.integer("decay_steps", 0, 0, kMaxI);
  opt.decay_power = o.number("decay_power", 2.0, 0.0, 100.0);
  // Powers of two keep the scaled gradients exact; 2^-24 .. 2^24 (kernels/loss_scale.h).
  opt.loss_scale = o.number("loss_scale", 65536.0, 0x1p-24, 0x1p24);
  if (std::exp2(std::round(std::log2(opt.loss_scale))) != opt.loss_scale)
    o.fail("loss_scale", "expected a power of two (scaling by it is exact), got " + std::to_string(opt.loss_scale));
  opt.loss_scale_growth_interval = o.integer("loss_scale_growth_interval", 2000, 1, 1 << 30);
  if ((opt.decay_start > 0) != (opt.decay_steps > 0))
    o.fail(opt.decay_start > 0 ? "decay_steps" : "decay_start",
           "decay_start and decay_steps must both be set (> 0) to enable decay");
  o.reject_unknown();
}

void parse_data(Section d, DataConfig& data) {
  const std::string format = d.choice("format", "synthetic", {"synthetic", "criteo_tsv", "binary", "mlperf_multihot"});
  data.format = format == "synthetic"         ? DataFormat::synthetic
                : format == "criteo_tsv"      ? DataFormat::criteo_tsv
                : format == "mlperf_multihot" ? DataFormat::mlperf_multihot
                                              : DataFormat::binary;
  data.train_path = d.string("train_path", "");
  data.eval_path = d.string("eval_path", "");
  if (data.format != DataFormat::synthetic && data.train_path.empty())
    d.fail("train_path", "required when data.format = \"" + format + "\"");
  data.categorical = d.choice("categorical", "modulo", {"modulo", "hash"}) == "hash" ? CategoricalMapping::hash : CategoricalMapping::modulo;
  data.missing_categorical_id = d.integer("missing_categorical_id", 0, 0, kMaxRows);
  data.on_error = d.choice("on_error", "fail", {"fail", "skip"}) == "skip" ? OnError::skip : OnError::fail;
  data.prefetch_batches = static_cast<int>(d.integer("prefetch_batches", 4, 1, 1024));
  data.reader_threads = static_cast<int>(d.integer("reader_threads", 2, 1, 1024));
  Section s = d.sub("synthetic");
  auto& syn = data.synthetic;
  syn.train_samples = s.integer("train_samples", syn.train_samples, 1, kMaxI);
  syn.eval_samples = s.integer("eval_samples", syn.eval_samples, 1, kMaxI);
  syn.seed = static_cast<uint64_t>(s.integer("seed", static_cast<int64_t>(syn.seed), 0, kMaxI));
  syn.zipf_exponent = s.number("zipf_exponent", syn.zipf_exponent, 0.0, 10.0);
  syn.teacher_dim = static_cast<int>(s.integer("teacher_dim", syn.teacher_dim, 1, 1024));
  syn.teacher_scale = s.number("teacher_scale", syn.teacher_scale, 0.0, 1000.0);
  syn.label_flip = s.number("label_flip", syn.label_flip, 0.0, 0.5);
  syn.raw_ids_per_row = s.integer("raw_ids_per_row", syn.raw_ids_per_row, 1, 1 << 20);
  s.reject_unknown();
  d.reject_unknown();
}

void parse_train(Section t, TrainConfig& tr) {
  tr.batch_size = t.integer("batch_size", tr.batch_size, 1, 1 << 24);
  tr.steps = t.integer("steps", 0, 0, kMaxI);
  tr.epochs = t.integer("epochs", 1, 1, 1000000);
  tr.eval_every = t.integer("eval_every", 0, 0, kMaxI);
  tr.eval_batch_size = t.integer("eval_batch_size", tr.eval_batch_size, 1, 1 << 24);
  tr.eval_samples = t.integer("eval_samples", 0, 0, kMaxI);
  tr.eval_at_end = t.boolean("eval_at_end", true);
  tr.timing_warmup_steps = t.integer("timing_warmup_steps", 10, 0, kMaxI);
  tr.checkpoint_dir = t.string("checkpoint_dir", "");
  tr.checkpoint_every = t.integer("checkpoint_every", 0, 0, kMaxI);
  tr.keep_checkpoints = t.integer("keep_checkpoints", 3, 1, 1000000);
  tr.checkpoint_at_start = t.boolean("checkpoint_at_start", false);
  if (tr.checkpoint_at_start && tr.checkpoint_dir.empty())
    t.fail("checkpoint_at_start", "needs train.checkpoint_dir to be set");
  tr.resume = t.boolean("resume", false);
  if (tr.resume && tr.checkpoint_dir.empty()) t.fail("resume", "needs train.checkpoint_dir to be set");
  tr.metrics_path = t.string("metrics_path", "");
  tr.log_every = t.integer("log_every", 100, 1, kMaxI);
  const std::string progress = t.choice("progress", "auto", {"auto", "on", "off"});
  tr.progress = progress == "on" ? ProgressMode::on : progress == "off" ? ProgressMode::off : ProgressMode::auto_detect;
  tr.threads = static_cast<int>(t.integer("threads", 0, 0, 4096));
  const std::string device = t.choice("device", "auto", {"auto", "cpu", "gpu"});
  tr.device = device == "cpu" ? DeviceChoice::cpu : device == "gpu" ? DeviceChoice::gpu : DeviceChoice::auto_select;
  tr.log_level = t.choice("log_level", "info", {"debug", "info", "warn", "error", "quiet"});
  tr.collective_timeout_s = t.number("collective_timeout_s", tr.collective_timeout_s, 0.0, 1e7);
  t.reject_unknown();
}

const std::vector<std::string> kShardingTypes = {"table_wise", "row_wise", "column_wise", "replicated"};

// [recipe.sharding]: default = "<type>", exchange_dtype = "fp32" | "bf16", and
// [recipe.sharding.tables.<table>] with type = "<type>" and, for table_wise, rank = <owner>,
// for row_wise, row_bounds = [0, ..., rows] (uneven blocks; checked by dist::plan_sharding).
void parse_sharding(Section s, const ModelConfig& model, dist::ShardingSpec& spec) {
  spec.source = s.prefix();  // "recipe.sharding"
  spec.default_type = dist::parse_sharding_type(s.choice("default", "table_wise", kShardingTypes), s.key_name("default"));
  spec.exchange_dtype =
      parse_dtype(s.choice("exchange_dtype", "fp32", {"fp32", "bf16"}), s.key_name("exchange_dtype"));
  spec.tables.clear();
  Section tables = s.sub("tables");
  for (const std::string& name : tables.keys()) {
    bool known = false;
    for (const auto& t : model.tables) known = known || t.name == name;
    std::string names;
    for (const auto& t : model.tables) names += (names.empty() ? "" : ", ") + t.name;
    if (!known) tables.fail(name, "the model has no table '" + name + "' (tables: " + names + ")");
    Section t = tables.sub(name);
    dist::TableShardingChoice choice;
    choice.type = dist::parse_sharding_type(
        t.choice("type", dist::sharding_type_name(spec.default_type), kShardingTypes), t.key_name("type"));
    choice.owner = static_cast<int>(t.integer("rank", -1, 0, 1 << 20));
    if (choice.owner >= 0 && choice.type != dist::ShardingType::table_wise)
      t.fail("rank", "only a table_wise table has an owner rank, this one is " +
                         std::string(dist::sharding_type_name(choice.type)));
    if (t.has("row_bounds")) {
      choice.row_bounds = t.int_list("row_bounds", 0, int64_t{1} << 62);
      if (choice.type != dist::ShardingType::row_wise)
        t.fail("row_bounds", "only a row_wise table has row blocks, this one is " +
                                 std::string(dist::sharding_type_name(choice.type)));
    }
    t.reject_unknown();
    spec.tables[name] = choice;
  }
  tables.reject_unknown();
  s.reject_unknown();
}

// The planner's recipe: the choices it makes, applied over the model and train sections.
void apply_recipe(Section r, RunConfig& cfg) {
  if (r.has("sharding")) parse_sharding(r.sub("sharding"), cfg.model, cfg.sharding);
  if (r.has("batch_size")) cfg.train.batch_size = r.integer("batch_size", 0, 1, 1 << 24);
  if (r.has("row_dtype"))
    cfg.model.row_dtype = parse_dtype(r.choice("row_dtype", "fp32", {"fp32", "fp16", "bf16"}), r.key_name("row_dtype"));
  if (r.has("dense_dtype"))
    cfg.model.dense_dtype =
        parse_dtype(r.choice("dense_dtype", "fp32", {"fp32", "bf16", "fp16"}), r.key_name("dense_dtype"));
  if (r.has("allow_tf32")) cfg.model.allow_tf32 = r.boolean("allow_tf32", false);
  if (r.has("cross_residual"))
    cfg.model.cross_residual_16bit = r.choice("cross_residual", "fp32", {"fp32", "16bit"}) == "16bit";
  if (r.has("gemm_selection")) cfg.model.gemm_selection = parse_gemm_selection(r);
  if (r.has("host_tables")) cfg.model.host_tables = parse_host_tables(r, cfg.model);
  if (r.has("gpus")) cfg.recipe_gpus = static_cast<int>(r.integer("gpus", 1, 1, 1 << 20));
  // Informational keys written by the planner.
  r.string("hardware", "");
  r.number("predicted_step_ms", 0.0, 0.0, 1e12);
  r.number("predicted_samples_per_s", 0.0, 0.0, 1e15);
  r.reject_unknown();
}

// The value `text` of the override `assignment` as a TOML node whose source (and that of
// every node inside it) is "--set <assignment>". A bare word is a string.
toml::table parse_override_value(const std::string& text, const std::string& assignment) {
  const std::string origin = std::string(kOverridePrefix) + assignment;
  try {
    return toml::parse(std::string_view("v = " + text), std::string_view(origin));
  } catch (const toml::parse_error&) {
  }
  std::ostringstream quoted;
  quoted << toml::value<std::string>(text);  // TOML basic string, escapes included
  try {
    return toml::parse(std::string_view("v = " + quoted.str()), std::string_view(origin));
  } catch (const toml::parse_error&) {
    throw ConfigError(origin + ": the value is neither TOML nor a plain string (invalid UTF-8?)");
  }
}

void apply_override(toml::table& root, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--set '" + assignment + "': expected key=value, e.g. train.steps=100");
  const std::string key = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  toml::table* table = &root;
  std::size_t start = 0;
  for (;;) {
    const auto dot = key.find('.', start);
    const std::string part = key.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (part.empty()) throw ConfigError("--set '" + assignment + "': empty component in key '" + key + "'");
    if (dot == std::string::npos) {
      toml::table parsed = parse_override_value(text, assignment);
      table->insert_or_assign(part, std::move(*parsed.get("v")));  // moved: a copy drops the source
      return;
    }
    toml::node* child = table->get(part);
    if (!child) {
      toml::table parsed = parse_override_value("{}", assignment);
      table->insert_or_assign(part, std::move(*parsed.get("v")));
      child = table->get(part);
    }
    if (!child->is_table())
      throw ConfigError("--set '" + assignment + "': '" + key.substr(0, dot) + "' is not a table");
    table = child->as_table();
    start = dot + 1;
  }
}

}  // namespace

RunConfig parse_run_config(const std::string& toml_text, const std::string& name,
                           const std::vector<std::string>& overrides, const std::string& recipe_text,
                           const std::string& recipe_name) {
  toml::table root = parse_toml(toml_text, name);
  for (const auto& o : overrides) apply_override(root, o);
  RunConfig cfg;
  cfg.source = name;
  Section top(&root, "", name);
  parse_model(top.sub("model"), cfg.model);
  parse_optim(top.sub("optim"), cfg.optim);
  parse_data(top.sub("data"), cfg.data);
  parse_train(top.sub("train"), cfg.train);
  if (top.has("recipe")) apply_recipe(top.sub("recipe"), cfg);
  top.reject_unknown();
  if (!top.has("model")) top.fail("model", "a [model] section is required");
  if (!recipe_text.empty()) {
    toml::table recipe = parse_toml(recipe_text, recipe_name);
    Section rtop(&recipe, "", recipe_name);
    if (!rtop.has("recipe")) rtop.fail("recipe", "a recipe file needs a [recipe] table");
    apply_recipe(rtop.sub("recipe"), cfg);
    rtop.reject_unknown();
  }
  for (const auto& t : cfg.model.tables)
    if (cfg.data.missing_categorical_id >= t.rows)
      throw ConfigError(Section::origin(name, root.at_path("data.missing_categorical_id").node()) +
                        ": config key 'data.missing_categorical_id' = " +
                        std::to_string(cfg.data.missing_categorical_id) + " is not a row of table '" + t.name +
                        "' (rows " + std::to_string(t.rows) + ")");
  return cfg;
}

RunConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides,
                          const std::string& recipe_path) {
  const std::string text = read_config_file(path, "config file");
  const std::string recipe = recipe_path.empty() ? std::string() : read_config_file(recipe_path, "recipe file");
  RunConfig cfg = parse_run_config(text, path, overrides, recipe, recipe_path);
  return cfg;
}

}  // namespace hetrec::train::train

#include "plan/e2e_record.h"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/error.h"
#include "plan/json_fields.h"
#include "plan/recipe.h"
#include "plan/tuned_kernel_ratios.h"

namespace hetrec::inline plan {
namespace {

using nlohmann::json;

using json_fields::member;
using json_fields::number;
using json_fields::text;

}  // namespace

E2eRecord read_e2e_record(const std::string& path) {
  const json root = json_fields::read_results_file(path, "e2e");
  E2eRecord r;
  r.path = path;
  r.gpu = text(root, "gpu", path);
  r.date = text(root, "date", path);
  const std::string where = path + ": metrics";
  const json m = member(root, "metrics", path);  // a copy: the key argument is a temporary
  r.config = text(m, "config", where);
  r.precision = text(m, "precision", where);
  r.row_dtype = m.contains("row_dtype") ? text(m, "row_dtype", where) : "";
  if (m.contains("overrides")) {
    const json& o = m.at("overrides");
    if (!o.is_array()) throw ConfigError(where + ".overrides: expected an array of \"key=value\" strings");
    for (const json& e : o) {
      if (!e.is_string()) throw ConfigError(where + ".overrides: expected strings, got " + e.dump());
      r.overrides.push_back(e.get<std::string>());
    }
  }
  // The ReLU backward the run used, as an override for the planner's config: a record
  // from before e2e_bench wrote the key ran the default of its day, "epilogue".
  // The same for the unaligned layers' GEMMs under 16-bit compute: fp32 before the key.
  const auto ran = [&](const std::string& key, const char* before_the_key) {
    const std::string prefix = "model." + key + "=";
    for (const std::string& o : r.overrides)
      if (o.rfind(prefix, 0) == 0) return;  // the run's own override says it
    r.overrides.push_back(prefix + "\"" + (m.contains(key) ? text(m, key, where) : std::string(before_the_key)) + "\"");
  };
  ran("relu_backward", "epilogue");
  ran("unaligned_gemms", "fp32");
  const double batch = number(m, "batch", where);
  if (!(batch >= 1.0) || batch != std::floor(batch)) throw ConfigError(where + ".batch: expected a positive integer");
  r.batch = static_cast<int64_t>(batch);
  r.step_ms = number(m, "step_ms", where);
  if (!(r.step_ms > 0.0)) throw ConfigError(where + ".step_ms: expected a positive time");
  if (m.contains("cuda_graph")) {
    if (!m.at("cuda_graph").is_boolean()) throw ConfigError(where + ".cuda_graph: expected true or false");
    r.cuda_graph = m.at("cuda_graph").get<bool>();
  }
  if (m.contains("world_size")) {
    const double n = number(m, "world_size", where);
    if (!(n >= 1.0) || n != std::floor(n)) throw ConfigError(where + ".world_size: expected a positive integer");
    r.world_size = static_cast<int>(n);
  }
  if (r.world_size > 1) r.sharding = text(m, "sharding", where);
  if (m.contains("exchange_dtype")) r.exchange_dtype = text(m, "exchange_dtype", where);
  if (m.contains("batch_copied_ahead")) {
    if (!m.at("batch_copied_ahead").is_boolean()) throw ConfigError(where + ".batch_copied_ahead: expected true or false");
    r.batch_copied_ahead = m.at("batch_copied_ahead").get<bool>();
  }
  if (m.contains("overlap_exchanges")) {
    if (!m.at("overlap_exchanges").is_boolean()) throw ConfigError(where + ".overlap_exchanges: expected true or false");
    r.overlap_exchanges = m.at("overlap_exchanges").get<bool>();
  }
  if (root.contains("tuned_kernels")) r.tuned_kernels = text(root, "tuned_kernels", path);
  if (!r.tuned_kernels.empty()) r.tuned_variants = described_tuned_variants(text(root, "model", path));
  if (m.contains("phase_ms")) {
    const json& phases = m.at("phase_ms");
    if (!phases.is_object()) throw ConfigError(where + ".phase_ms: expected an object of phase -> milliseconds");
    for (const auto& [name, value] : phases.items()) {
      if (!value.is_number()) throw ConfigError(where + ".phase_ms." + name + ": expected a number");
      r.phase_ms[name] = value.get<double>();
    }
  }
  return r;
}

StepMeasurement e2e_measurement(const E2eRecord& record, const ModelConfig& model, const OptimConfig& optim,
                                const GemmSelector& gemm) {
  Recipe recipe = recipe_of_model(model, record.batch, gemm.hardware().name);
  // e2e_bench's --precision (fp32 or tf32) sets the GEMMs that are not 16-bit: with a
  // 16-bit model.dense_dtype (a config key or a recorded override) the recipe's dense
  // precision is that 16-bit type.
  if (!sixteen_bit_dense(recipe.dense)) {
    if (record.precision == "tf32") recipe.dense = DensePrecision::tf32;
    else if (record.precision == "fp32") recipe.dense = DensePrecision::fp32;
    else if (record.precision == "bf16") recipe.dense = DensePrecision::bf16;
    else if (record.precision == "fp16") recipe.dense = DensePrecision::fp16;
    else throw ConfigError(record.path + ": metrics.precision '" + record.precision + "': expected fp32, tf32, bf16 or fp16");
  }
  if (!record.row_dtype.empty()) {
    recipe.row_dtype = parse_dtype(record.row_dtype, record.path + ": metrics.row_dtype");
    if (recipe.row_dtype != DType::f32 && recipe.row_dtype != DType::f16 && recipe.row_dtype != DType::bf16)
      throw ConfigError(record.path + ": metrics.row_dtype '" + record.row_dtype + "': expected fp32, fp16 or bf16");
  }
  if (record.world_size > 1) {
    // "t0:table_wise@0, t1:row_wise, ...": every table's type, and its owner when table_wise.
    dist::ShardingSpec spec;
    spec.source = record.path + ": metrics.sharding";
    std::stringstream items(record.sharding);
    std::string item;
    while (std::getline(items, item, ',')) {
      const auto first = item.find_first_not_of(' ');
      if (first == std::string::npos) continue;
      item = item.substr(first);
      const auto colon = item.find(':');
      if (colon == std::string::npos)
        throw ConfigError(spec.source + ": '" + item + "': expected <table>:<sharding type>[@<rank>]");
      // "t3:row_wise[0 10 100]": the row blocks a recipe chose (e2e_bench writes them).
      const auto open = item.find('[', colon);
      dist::TableShardingChoice choice;
      if (open != std::string::npos) {
        const auto close = item.find(']', open);
        if (close == std::string::npos || close + 1 != item.size())
          throw ConfigError(spec.source + ": '" + item + "': expected <table>:row_wise[<first rows> <rows>]");
        std::stringstream bounds(item.substr(open + 1, close - open - 1));
        int64_t v = 0;
        while (bounds >> v) choice.row_bounds.push_back(v);
        if (!bounds.eof() || choice.row_bounds.empty())
          throw ConfigError(spec.source + ": '" + item + "': the row bounds are not whole numbers");
        item = item.substr(0, open);
      }
      const auto at = item.find('@', colon);
      choice.type = dist::parse_sharding_type(item.substr(colon + 1, at == std::string::npos ? std::string::npos : at - colon - 1),
                                              spec.source);
      if (at != std::string::npos) {
        try {
          choice.owner = std::stoi(item.substr(at + 1));
        } catch (const std::exception&) {
          throw ConfigError(spec.source + ": '" + item + "': the rank after '@' is not a number");
        }
      }
      spec.tables[item.substr(0, colon)] = choice;
    }
    spec.exchange_dtype = parse_dtype(record.exchange_dtype, record.path + ": metrics.exchange_dtype");
    apply_sharding(recipe, model, spec, record.world_size);
  }
  StepMeasurement m;
  m.label = record.path.substr(record.path.find_last_of('/') + 1);
  m.work = step_work(model, optim, recipe, gemm, kE2eBenchIds);
  m.work.embedding_stream = m.work.embedding_stream && record.overlap_exchanges;
  m.work.upload_ahead = record.batch_copied_ahead;
  m.step_ms = record.step_ms;
  for (const auto& [name, ms] : record.phase_ms) {
    const auto phase = parse_step_phase(name);
    if (!phase) throw ConfigError(record.path + ": metrics.phase_ms: unknown phase '" + name + "'");
    // A batch copied during the step before: the profiled upload is what is left to wait
    // for at the step's start, not the copy the upload terms price.
    if (*phase == StepPhase::upload && record.batch_copied_ahead) continue;
    m.phase_ms[*phase] = ms;
  }
  return m;
}

}  // namespace hetrec::plan::plan

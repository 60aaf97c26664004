#include "plan/recipe_toml.h"

#include <fmt/format.h>

namespace hetrec::inline plan {
namespace {

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += fmt::format("\\u{:04X}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A TOML key: bare when it is made of A-Z a-z 0-9 _ -, else a quoted key.
std::string key(std::string_view name) {
  bool bare = !name.empty();
  for (char c : name)
    bare = bare && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  return bare ? std::string(name) : quoted(name);
}

// A comment line's text: line breaks would end the comment.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  return text;
}

}  // namespace

std::string recipe_to_toml(const Recipe& recipe, const StepPrediction& prediction, const ModelConfig& model) {
  validate_recipe(recipe, model);
  std::string s;
  s += fmt::format("# Planned by hetrec plan for {}: {}.\n", one_line(recipe.hardware), one_line(describe_recipe(recipe, model)));
  s += fmt::format("# Predicted {:.2f} ms per step, {:.0f} samples/s.\n", prediction.step_ms, prediction.samples_per_s);
  s += "[recipe]\n";
  s += fmt::format("hardware = {}\n", quoted(recipe.hardware));
  s += fmt::format("batch_size = {}\n", recipe.batch);
  s += fmt::format("dense_dtype = \"{}\"\n", sixteen_bit_dense(recipe.dense) ? dense_precision_name(recipe.dense) : "fp32");
  s += fmt::format("allow_tf32 = {}\n", recipe.dense == DensePrecision::tf32 ? "true" : "false");
  s += fmt::format("row_dtype = \"{}\"\n", dtype_name(recipe.row_dtype));
  if (model.arch == Arch::dcnv2 && sixteen_bit_dense(recipe.dense))
    s += fmt::format("cross_residual = \"{}\"\n", cross_residual_name(recipe.cross_residual_16bit));
  if (recipe.host_tables() > 0) {
    s += "host_tables = [";
    bool first = true;
    for (std::size_t t = 0; t < recipe.placement.size(); ++t) {
      if (recipe.placement[t] != TablePlacement::host) continue;
      s += fmt::format("{}{}", first ? "" : ", ", quoted(model.tables[t].name));
      first = false;
    }
    s += "]\n";
  }
  if (recipe.gpus > 1) s += fmt::format("gpus = {}\n", recipe.gpus);
  s += fmt::format("predicted_step_ms = {:.3f}\n", prediction.step_ms);
  s += fmt::format("predicted_samples_per_s = {:.1f}\n", prediction.samples_per_s);
  if (recipe.gpus == 1) return s;
  s += fmt::format("\n[recipe.sharding]\ndefault = \"table_wise\"\nexchange_dtype = \"{}\"\n",
                   dtype_name(recipe.exchange_dtype));
  for (std::size_t t = 0; t < recipe.sharding.size(); ++t) {
    const TableSharding& sh = recipe.sharding[t];
    s += fmt::format("\n[recipe.sharding.tables.{}]\ntype = \"{}\"\n", key(model.tables[t].name),
                     dist::sharding_type_name(sh.type));
    if (sh.type == dist::ShardingType::table_wise) s += fmt::format("rank = {}\n", sh.owner);
    if (!sh.row_bounds.empty()) {
      s += "row_bounds = [";
      for (std::size_t i = 0; i < sh.row_bounds.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", sh.row_bounds[i]);
      s += "]\n";
    }
  }
  return s;
}

}  // namespace hetrec::plan::plan

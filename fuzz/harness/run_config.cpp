// Fuzz target: run configuration files (TOML), recipes and `--set` overrides.
#include <string>
#include <vector>

#include "data/criteo_tsv.h"
#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "model/dlrm.h"
#include "train/config.h"

namespace hetrec::fuzz {

void run_config(std::span<const uint8_t> data) {
  FuzzInput in(data);
  const std::string config(in.until('\0'));
  const std::string recipe(in.until('\0'));
  std::vector<std::string> overrides;
  while (!in.empty()) overrides.emplace_back(in.until('\0'));
  RunConfig cfg;
  if (!accepted([&] { cfg = parse_run_config(config, "fuzz.toml", overrides, recipe, "recipe.toml"); })) return;
  // What an accepted config promises to the layers that consume it.
  if (cfg.model.tables.empty() || cfg.model.bottom_mlp.empty() || cfg.model.top_mlp.empty())
    finding("accepted a model without tables or MLP layers");
  for (const TableConfig& t : cfg.model.tables)
    if (t.rows < 1 || t.hotness < 1) finding("accepted table '" + t.name + "' with no rows or no ids per bag");
  if (cfg.train.batch_size < 1 || cfg.train.eval_batch_size < 1) finding("accepted a batch size below 1");
  accepted([&] { validate_cpu_model_config(cfg.model, cfg.optim); });
  accepted([&] { make_criteo_layout(cfg.data, cfg.model); });
}

}  // namespace hetrec::fuzz

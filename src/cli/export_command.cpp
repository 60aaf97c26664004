// `hetrec export`: a checkpoint's parameters as a safetensors file with a JSON model
// description (docs/export.md).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"
#include "train/config.h"
#include "train/model_export.h"

namespace hetrec::cli {
namespace {

struct ExportOptions {
  std::string config;
  std::string recipe;
  std::vector<std::string> overrides;
  std::string checkpoint;
  std::string format = "safetensors";
  std::string output;
};

}  // namespace

void add_export_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export", "write a checkpoint's parameters as safetensors with a JSON model description (docs/export.md)");
  cmd->add_option("--config,-c", o->config, "the config the checkpoint was trained with (TOML)")->required();
  cmd->add_option("--recipe", o->recipe, "recipe from `hetrec plan` (TOML with a [recipe] table)");
  cmd->add_option("--set", o->overrides, "override a config key, e.g. --set model.row_dtype=bf16 (repeatable)");
  cmd->add_option("--checkpoint", o->checkpoint, "checkpoint file (ckpt-*.hck)")->required();
  cmd->add_option("--format", o->format, "output format (safetensors)")->check(CLI::IsMember({"safetensors"}));
  cmd->add_option("--output,-o", o->output,
                  "output file (<name>.safetensors; the description is written to <name>.json)")
      ->required();
  cmd->callback([o, &action] {
    action = [o] {
      const RunConfig cfg = load_run_config(o->config, o->overrides, o->recipe);
      const ExportSummary s = export_safetensors(cfg.model, o->checkpoint, o->output);
      std::printf("checkpoint   %s (step %lld)\n", o->checkpoint.c_str(), static_cast<long long>(s.step));
      std::printf("parameters   %lld tensors, %.1f MiB\n", static_cast<long long>(s.parameters),
                  static_cast<double>(s.bytes) / (1024.0 * 1024.0));
      std::printf("wrote        %s\n             %s\n", s.safetensors.c_str(), s.description.c_str());
    };
  });
}

}  // namespace hetrec::cli

#pragma once
// Each `hetrec` subcommand registers its options on the CLI11 app and returns the action
// to run once the command line has been parsed.
#include <CLI/CLI.hpp>
#include <functional>

namespace hetrec::cli {

using Action = std::function<void()>;

void add_train_command(CLI::App& app, Action& action);
void add_eval_command(CLI::App& app, Action& action);
void add_data_command(CLI::App& app, Action& action);
void add_hw_command(CLI::App& app, Action& action);
void add_gemm_command(CLI::App& app, Action& action);
void add_plan_command(CLI::App& app, Action& action);
void add_tune_command(CLI::App& app, Action& action);
void add_export_command(CLI::App& app, Action& action);
void add_predict_command(CLI::App& app, Action& action);
void add_bench_command(CLI::App& app, Action& action);
void add_report_command(CLI::App& app, Action& action);

}  // namespace hetrec::cli

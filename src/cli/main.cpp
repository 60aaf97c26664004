// hetrec: train, evaluate and plan recommendation models (see `hetrec --help`).
#include <cstdio>
#include <exception>

#include "cli/build_info.h"
#include "cli/commands.h"
#include "core/error.h"
#include "dist/process_group.h"

namespace {

// Exit codes by error kind, so scripts can tell a bad config from bad data.
constexpr int kExitInternal = 1;
constexpr int kExitConfig = 2;  // also a command line CLI11 rejects
constexpr int kExitData = 3;
constexpr int kExitIo = 4;
constexpr int kExitNumeric = 5;
constexpr int kExitMemory = 6;
constexpr int kExitDevice = 7;

// In an MPI job the message names the rank, and the whole job is ended (MPI_Abort) so
// that no other rank waits for this one in a collective.
int report(const char* kind, const std::exception& e, int code) {
  std::fflush(stdout);
  const int rank = hetrec::dist::launcher_rank();
  if (rank >= 0) std::fprintf(stderr, "hetrec: rank %d: %s: %s\n", rank, kind, e.what());
  else std::fprintf(stderr, "hetrec: %s: %s\n", kind, e.what());
  std::fflush(stderr);
  hetrec::dist::abort_job(code);
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hetrec: recommendation-model training at the speed limit of the hardware"};
  app.require_subcommand(1);
  app.set_version_flag("--version", hetrec::cli::version_text, "print the version, commit, build and libraries");
  hetrec::cli::Action action;
  hetrec::cli::add_train_command(app, action);
  hetrec::cli::add_eval_command(app, action);
  hetrec::cli::add_data_command(app, action);
  hetrec::cli::add_hw_command(app, action);
  hetrec::cli::add_gemm_command(app, action);
  hetrec::cli::add_plan_command(app, action);
  hetrec::cli::add_tune_command(app, action);
  hetrec::cli::add_export_command(app, action);
  hetrec::cli::add_predict_command(app, action);
  hetrec::cli::add_bench_command(app, action);
  hetrec::cli::add_report_command(app, action);
  // No command at all: the usage, on stderr since nothing was done.
  if (argc <= 1) {
    app.name("hetrec");
    std::fputs(app.help().c_str(), stderr);
    return kExitConfig;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A command line CLI11 rejects (unknown option, missing --config, ...) is a usage
    // error: its message, then the exit code of a config error.
    app.exit(e);
    return kExitConfig;
  }
  try {
    action();
  } catch (const hetrec::ConfigError& e) {
    return report("config error", e, kExitConfig);
  } catch (const hetrec::DataError& e) {
    return report("data error", e, kExitData);
  } catch (const hetrec::CheckpointError& e) {
    return report("checkpoint error", e, kExitIo);
  } catch (const hetrec::IoError& e) {
    return report("I/O error", e, kExitIo);
  } catch (const hetrec::NumericError& e) {
    return report("numeric error", e, kExitNumeric);
  } catch (const hetrec::OutOfMemoryError& e) {
    return report("out of memory", e, kExitMemory);
  } catch (const hetrec::DeviceError& e) {
    return report("device error", e, kExitDevice);
  } catch (const std::bad_alloc& e) {
    return report("out of memory", e, kExitMemory);
  } catch (const std::exception& e) {
    return report("internal error", e, kExitInternal);
  }
  return 0;
}

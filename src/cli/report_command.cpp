// `hetrec report`: a run's metrics file (train.metrics_path) drawn as one HTML page.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "report/html_report.h"
#include "report/metrics_series.h"

namespace hetrec::cli {

void add_report_command(CLI::App& app, Action& action) {
  struct Options {
    std::string metrics, out;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "report", "draw a run's metrics file (loss, eval AUC, samples/s over steps) as one self-contained HTML page");
  cmd->add_option("--metrics", o->metrics, "metrics file a run wrote (train.metrics_path, JSON lines)")->required();
  cmd->add_option("--out", o->out, "HTML file to write")->required();
  cmd->callback([o, &action] {
    action = [o] {
      const report::RunSeries run = report::read_metrics(o->metrics);
      try {
        write_file_atomically(o->out, report::html_report(run, o->metrics));
      } catch (const IoError& e) {
        throw IoError(std::string("report file: ") + e.what());
      }
      std::printf("wrote %s (run %s: %zu train and %zu eval records)\n", o->out.c_str(),
                  run.run_id.empty() ? "without a header" : run.run_id.c_str(), run.loss.size(), run.auc.size());
    };
  });
}

}  // namespace hetrec::cli

// `hetrec data convert | inspect | verify | synth`: binary columnar files.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/convert_progress.h"
#include "core/error.h"
#include "data/binary_tools.h"
#include "data/criteo_tsv.h"
#include "data/mlperf_convert.h"
#include "data/split.h"
#include "data/synthetic.h"
#include "train/config.h"
#include "train/progress.h"

namespace hetrec::cli {
namespace {

// The progress line of `data verify` on stderr, drawn as train's (train/progress.cpp):
// in place every kTerminalInterval seconds on a terminal, else a line every
// kLogInterval seconds; the first and the last update of each file are always shown.
class VerifyProgressLine {
 public:
  explicit VerifyProgressLine(std::FILE* out) : out_(out), tty_(ProgressLine::stream_is_terminal(out)) {}

  void start(const std::string& path) {
    path_ = path;
    start_ = std::chrono::steady_clock::now();
    shown_ = false;
  }
  void update(const VerifyProgress& p) {
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    const bool last = p.groups_done == p.groups;
    if (shown_ && since < (tty_ ? kTerminalInterval : kLogInterval) && !last) return;
    last_ = now;
    shown_ = true;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double rate = seconds > 0 ? static_cast<double>(p.bytes_done) / seconds : 0.0;
    const double eta = rate > 0 ? static_cast<double>(p.bytes - p.bytes_done) / rate : -1.0;
    const std::string line = fmt::format(
        "verify {}: row group {}/{} ({:.1f}%) | {:.1f} MB/s | ETA {}", path_, p.groups_done, p.groups,
        p.groups > 0 ? 100.0 * static_cast<double>(p.groups_done) / static_cast<double>(p.groups) : 100.0,
        rate / kBytesPerMegabyte, format_duration(eta));
    std::fputs(tty_ ? "\r\033[K" : "", out_);
    std::fputs(line.c_str(), out_);
    if (!tty_) std::fputc('\n', out_);
    std::fflush(out_);
  }
  void finish() {  // ends the in-place line of a file
    if (tty_ && shown_) std::fputc('\n', out_);
    std::fflush(out_);
  }

 private:
  static constexpr double kTerminalInterval = 0.25;
  static constexpr double kLogInterval = 10.0;
  static constexpr double kBytesPerMegabyte = 1e6;
  std::FILE* out_;
  bool tty_;
  std::string path_;
  std::chrono::steady_clock::time_point start_{}, last_{};
  bool shown_ = false;
};

}  // namespace

void add_data_command(CLI::App& app, Action& action) {
  CLI::App* data = app.add_subcommand("data", "convert, inspect and generate data files");
  data->require_subcommand(1);

  struct ConvertOptions {
    std::string config, input, output;
    std::vector<std::string> overrides;
  };
  auto conv = std::make_shared<ConvertOptions>();
  CLI::App* convert = data->add_subcommand(
      "convert", "Criteo TSV or MLPerf multi-hot days (data.format) -> binary columnar (streaming, constant memory)");
  convert->add_option("--config,-c", conv->config, "config whose [model] tables and [data] mapping apply")->required();
  convert->add_option("--input,-i", conv->input,
                      "Criteo TSV file; with data.format = \"mlperf_multihot\", the days (a directory or day prefixes)")
      ->required();
  convert->add_option("--output,-o", conv->output, "binary file to write")->required();
  convert->add_option("--set", conv->overrides, "override a config key (repeatable)");
  convert->callback([conv, &action] {
    action = [conv] {
      check_binary_output(conv->output, {{"--input", conv->input}, {"--config", conv->config}});
      const RunConfig cfg = load_run_config(conv->config, conv->overrides);
      if (cfg.data.format == DataFormat::mlperf_multihot) {
        ConvertProgressLine line(stderr, conv->output);
        const ConvertReport r = [&] {
          struct EndLine {
            ConvertProgressLine& line;
            ~EndLine() { line.finish(); }
          } end{line};
          return convert_mlperf_to_binary(conv->input, conv->output, cfg.model, cfg.data.reader_threads,
                                          kDefaultGroupSamples, [&](const ConvertProgress& p) { line.update(p); });
        }();
        std::printf("wrote %s: %lld samples in %lld row groups, %lld bytes\n", conv->output.c_str(),
                    static_cast<long long>(r.samples), static_cast<long long>(r.groups),
                    static_cast<long long>(r.bytes));
        return;
      }
      hetrec::ConvertOptions options;
      options.on_error = cfg.data.on_error;
      options.threads = cfg.data.reader_threads;
      options.allow_empty = false;
      const ConvertReport r =
          convert_tsv_to_binary(conv->input, conv->output, make_criteo_layout(cfg.data, cfg.model), options);
      std::printf("wrote %s: %lld samples in %lld row groups, %lld bytes; %lld malformed lines skipped\n",
                  conv->output.c_str(), static_cast<long long>(r.samples), static_cast<long long>(r.groups),
                  static_cast<long long>(r.bytes), static_cast<long long>(r.skipped_lines));
    };
  });

  auto path = std::make_shared<std::string>();
  CLI::App* inspect = data->add_subcommand("inspect", "summarise a binary file and verify its checksums");
  inspect->add_option("file", *path, "binary data file")->required();
  inspect->callback([path, &action] {
    action = [path] {
      const BinaryInspection report = inspect_binary_file(*path);
      std::fputs(report.text.c_str(), stdout);
      if (!report.failures.empty())
        throw DataError(fmt::format("{}: {} row group{} failed the checks (the first: {})", *path,
                                    report.failures.size(), report.failures.size() == 1 ? "" : "s",
                                    report.failures.front()));
    };
  });

  struct VerifyOptions {
    std::string config;
    std::vector<std::string> files, overrides;
  };
  auto ver = std::make_shared<VerifyOptions>();
  CLI::App* verify = data->add_subcommand(
      "verify", "check every checksum of binary files and every id against the config's tables; exit 3 if damaged");
  verify->add_option("--config,-c", ver->config, "config whose [model] tables and dense features apply")->required();
  verify->add_option("files", ver->files, "binary data files")->required();
  verify->add_option("--set", ver->overrides, "override a config key (repeatable)");
  verify->callback([ver, &action] {
    action = [ver] {
      const RunConfig cfg = load_run_config(ver->config, ver->overrides);
      VerifyProgressLine progress(stderr);
      std::size_t damaged = 0, unreadable = 0;
      std::string first_problem;
      for (const std::string& file : ver->files) {
        progress.start(file);
        try {
          const VerifyReport r = verify_binary(file, cfg.model, cfg.data.reader_threads,
                                               [&](const VerifyProgress& p) { progress.update(p); });
          progress.finish();
          if (r.ok()) {
            std::printf("%s: ok: %lld samples in %lld row groups, %lld bytes; every checksum and id checked\n",
                        file.c_str(), static_cast<long long>(r.samples), static_cast<long long>(r.groups),
                        static_cast<long long>(r.bytes));
          } else {
            ++damaged;
            if (first_problem.empty()) first_problem = r.failures.front();
            std::printf("%s: DAMAGED: %zu problem%s\n", file.c_str(), r.failures.size(),
                        r.failures.size() == 1 ? "" : "s");
            for (const std::string& f : r.failures) std::printf("  %s\n", f.c_str());
          }
        } catch (const IoError& e) {
          progress.finish();
          ++unreadable;
          if (first_problem.empty()) first_problem = e.what();
          std::printf("%s: UNREADABLE: %s\n", file.c_str(), e.what());
        }
        std::fflush(stdout);
      }
      const std::string summary = fmt::format("{} of {} files damaged, {} unreadable (the first problem: {})",
                                              damaged, ver->files.size(), unreadable, first_problem);
      if (damaged > 0) throw DataError(summary);
      if (unreadable > 0) throw IoError(summary);
    };
  });

  struct SynthOptions {
    std::string config, output, split = "train";
    int64_t samples = 0;
    std::vector<std::string> overrides;
  };
  auto syn = std::make_shared<SynthOptions>();
  CLI::App* synth = data->add_subcommand("synth", "write samples of the synthetic dataset to a binary file");
  synth->add_option("--config,-c", syn->config, "config whose [model] and [data.synthetic] apply")->required();
  synth->add_option("--output,-o", syn->output, "binary file to write")->required();
  synth->add_option("--samples,-n", syn->samples, "samples to write (default: the whole split)");
  synth->add_option("--split", syn->split, "train or eval")->check(CLI::IsMember({"train", "eval"}));
  synth->add_option("--set", syn->overrides, "override a config key (repeatable)");
  synth->callback([syn, &action] {
    action = [syn] {
      check_binary_output(syn->output, {{"--config", syn->config}});
      const RunConfig cfg = load_run_config(syn->config, syn->overrides);
      SyntheticSource source(cfg.model, cfg.data.synthetic, syn->split == "eval" ? Split::eval : Split::train,
                             cfg.data.reader_threads);
      const int64_t n = syn->samples > 0 ? syn->samples : source.size_hint();
      const ConvertReport r = write_synthetic_binary(source, n, syn->output);
      std::printf("wrote %s: %lld samples in %lld row groups, %lld bytes\n", syn->output.c_str(),
                  static_cast<long long>(r.samples), static_cast<long long>(r.groups), static_cast<long long>(r.bytes));
    };
  });
}

}  // namespace hetrec::cli

// `hetrec data convert | inspect | synth`: binary columnar files.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/convert_progress.h"
#include "data/binary_tools.h"
#include "data/criteo_tsv.h"
#include "data/mlperf_convert.h"
#include "data/split.h"
#include "data/synthetic.h"
#include "train/config.h"

namespace hetrec::cli {

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
    action = [path] { std::fputs(inspect_binary(*path).c_str(), stdout); };
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

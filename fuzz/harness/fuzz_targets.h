#pragma once
// The fuzz targets: one per parser of outside input. Each takes an arbitrary byte string,
// returns normally when the parser accepted it (and its output kept every guarantee) or
// rejected it with a typed hetrec::Error, and lets anything else escape (see
// fuzz_support.h). libFuzzer drives them (fuzz/libfuzzer_main.cpp); the test
// tests/hardening/test_fuzz_replay.cpp replays the seed corpora and every past finding.
#include <cstdint>
#include <span>
#include <string_view>

namespace hetrec::fuzz {

using TargetFunction = void (*)(std::span<const uint8_t>);

// Byte 0 picks the layout and mode, the rest is one Criteo TSV line (parse_criteo_line)
// or a whole TSV file streamed through CriteoTsvSource.
void criteo_tsv(std::span<const uint8_t> data);
// Byte 0 picks the mode (checksums kept or repaired, batch size), the rest is a binary
// columnar file read through BinaryFile, BinarySource and inspect_binary.
void binary_file(std::span<const uint8_t> data);
// NUL-separated: the config TOML, a recipe TOML, then `--set` overrides, through
// parse_run_config and the model/data validators.
void run_config(std::span<const uint8_t> data);
// Byte 0 picks the mode (checksum kept or repaired, which model), the rest is a
// checkpoint file checked by verify_checkpoint and loaded by load_checkpoint.
void checkpoint(std::span<const uint8_t> data);
// A hardware description file through load_hardware, then a GEMM selection on it.
void hardware_file(std::span<const uint8_t> data);
// A GEMM model parameter file through load_gemm_params, then saved and loaded again.
void gemm_params(std::span<const uint8_t> data);
// Byte 0 picks the mode (checksum kept or repaired), the rest is a GEMM selection cache
// file through GemmSelectionCache::load, then saved and loaded again.
void gemm_cache(std::span<const uint8_t> data);
// A tuned kernel winners file through WinnersStore::load, then saved and loaded again.
void winners_file(std::span<const uint8_t> data);
// A device probe cache file through load_device_probe, then saved and loaded again.
void probe_cache(std::span<const uint8_t> data);
// Byte 0 picks the mode (the rest as the whole response body, or as the message content
// of a well-formed completion), through the model proposer's reply parser.
void proposer_reply(std::span<const uint8_t> data);
// Byte 0 picks the mode (a .npy file or an .npz archive, the rows per read, the order),
// the rest is the file: the .npy header parser, the .npz table of contents and the row
// reader over files, stored and deflated members.
void npy_npz(std::span<const uint8_t> data);

struct Target {
  std::string_view name;  // also the corpus directory: fuzz/corpus/<name>/
  TargetFunction run;
};

inline constexpr Target kTargets[] = {
    {"criteo_tsv", criteo_tsv},   {"binary_file", binary_file},     {"run_config", run_config},
    {"checkpoint", checkpoint},   {"hardware_file", hardware_file}, {"gemm_params", gemm_params},
    {"gemm_cache", gemm_cache},
    {"winners_file", winners_file}, {"probe_cache", probe_cache},     {"proposer_reply", proposer_reply},
    {"npy_npz", npy_npz},
};

}  // namespace hetrec::fuzz

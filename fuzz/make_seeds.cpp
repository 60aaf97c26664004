// Writes the seed files of fuzz/corpus/ that are binary or derived from code: binary
// columnar files, checkpoints of the checkpoint target's models, GEMM selection caches
// under the cache target's validators, device probe caches under the probe target's,
// winners files from the committed one, and copies of the bundled hardware and GEMM
// parameter files. The text seeds (TSV lines, configs, proposer replies) are written by
// hand.
//
//   build/fuzz/make_seeds fuzz/corpus
//
// Every seed starts with the mode byte its target reads first (see harness/*.cpp), but
// those of the targets that read none (hardware_file, gemm_params, winners_file,
// probe_cache).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/rng.h"
#include "data/batch.h"
#include "data/binary_format.h"
#include "harness/checkpoint_models.h"
#include "gemm/device_probe.h"
#include "harness/gemm_cache_validators.h"
#include "harness/probe_cache_validators.h"
#include "tune/winners.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_selection_cache.h"
#include "gemm_perf/gemm_selector.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;
using namespace hetrec;

namespace {

// Seed of the generated sample values (labels, dense features, bag sizes, ids).
constexpr uint64_t kSeedDataSeed = 20261201;
// Longest bag in the generated multi-hot samples.
constexpr uint64_t kMaxBagLength = 3;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_seed(const fs::path& dir, const std::string& name, char mode, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.put(mode);
  out << bytes;
  std::printf("%s (%zu bytes)\n", (dir / name).c_str(), bytes.size() + 1);
}

// `n` samples with variable-length bags (including empty ones) over tables of `rows`.
Batch sample_batch(int64_t first, int64_t n, int num_dense, const std::vector<int64_t>& rows) {
  Rng rng(kSeedDataSeed, static_cast<uint64_t>(first));
  const int tables = static_cast<int>(rows.size());
  Batch b;
  b.reset(n, num_dense, tables);
  b.first_sample = first;
  for (int64_t s = 0; s < n; ++s) {
    b.labels[static_cast<std::size_t>(s)] = static_cast<float>(rng.below(2));
    for (int j = 0; j < num_dense; ++j)
      b.dense[static_cast<std::size_t>(s * num_dense + j)] = static_cast<float>(rng.uniform() * 4.0);
  }
  for (int t = 0; t < tables; ++t)
    for (int64_t s = 0; s < n; ++s) {
      const uint64_t length = rng.below(kMaxBagLength + 1);
      for (uint64_t k = 0; k < length; ++k)
        b.ids.push_back(static_cast<int32_t>(rng.below(static_cast<uint64_t>(rows[static_cast<std::size_t>(t)]))));
      b.offsets[static_cast<std::size_t>(t * n + s + 1)] = static_cast<int32_t>(b.ids.size());
    }
  return b;
}

std::string binary_file(const fs::path& scratch, int num_dense, const std::vector<int64_t>& rows, int64_t samples,
                        int64_t group_samples) {
  BinaryHeader header;
  header.num_dense = num_dense;
  header.rows = rows;
  header.group_samples = group_samples;
  header.mapping = IdMapping::modulo;
  const fs::path path = scratch / "seed.hbin";
  BinaryWriter writer(path.string(), header);
  if (samples > 0) writer.append(sample_batch(0, samples, num_dense, rows));
  writer.finish();
  return read_bytes(path);
}

void binary_seeds(const fs::path& corpus, const fs::path& scratch) {
  const fs::path dir = corpus / "binary_file";
  const std::string multi = binary_file(scratch, 2, {5, 1, 100}, 8, 3);
  write_seed(dir, "three_groups_multi_hot", 0x00, multi);
  write_seed(dir, "three_groups_repaired_batch7", 0x05, multi);
  write_seed(dir, "one_group_no_dense", 0x03, binary_file(scratch, 0, {2, 3}, 4, 16));
  write_seed(dir, "empty", 0x00, binary_file(scratch, 1, {4}, 0, 2));
  write_seed(dir, "truncated_in_a_group", 0x00, multi.substr(0, multi.size() / 2));
}

std::string checkpoint_bytes(const fs::path& scratch, std::size_t which, int64_t step) {
  const auto model = fuzz::make_checkpoint_model(which);
  const std::string path = checkpoint_path(scratch.string(), step);
  save_checkpoint(path, CheckpointMeta{step, 1, 48, model_signature(model->config())}, model->state());
  return read_bytes(path);
}

void checkpoint_seeds(const fs::path& corpus, const fs::path& scratch) {
  const fs::path dir = corpus / "checkpoint";
  for (std::size_t which = 0; which < std::size(fuzz::kCheckpointModelConfigs); ++which) {
    const std::string bytes = checkpoint_bytes(scratch, which, 12);
    const char model_bit = static_cast<char>(which << 1);
    write_seed(dir, "model" + std::to_string(which), model_bit, bytes);
    write_seed(dir, "model" + std::to_string(which) + "_resealed", static_cast<char>(model_bit | 1), bytes);
    write_seed(dir, "model" + std::to_string(which) + "_truncated", model_bit, bytes.substr(0, bytes.size() - 20));
  }
  // A file of one model loaded into the other: shapes differ.
  write_seed(dir, "model0_into_model1", 0x02, checkpoint_bytes(scratch, 0, 3));
}

void gemm_cache_seeds(const fs::path& corpus, const fs::path& scratch) {
  const fs::path dir = corpus / "gemm_cache";
  const Hardware hw = load_hardware(std::string(HETREC_SOURCE_DIR) + "/hw/h200_sxm.toml");
  const GemmSelector selector = GemmSelector::for_hardware(hw, GemmModelParams{});
  GemmSelectionCache cache(fuzz::fuzz_cache_validators());
  // Shapes of the reference workload's MLPs at batch 4096 (configs/dlrm_dcnv2_mlperf.toml), bf16 and fp32.
  for (const auto& [m, n, k] : {std::tuple{4096, 512, 13}, std::tuple{4096, 1024, 3456}, std::tuple{4096, 1, 256}}) {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k;
    select_cached(selector, cache, p);
    p.a_type = p.b_type = p.c_type = DType::f32;
    p.epilogue = GemmEpilogue::bias_relu;
    select_cached(selector, cache, p);
  }
  const std::string path = (scratch / "gemm_cache.txt").string();
  cache.save(path);
  const std::string text = read_bytes(path);
  write_seed(dir, "six_entries", 0x00, text);
  write_seed(dir, "six_entries_resealed", 0x01, text);
  GemmSelectionCache other(make_gemm_cache_validators("AMD Instinct MI300X", "6.4", "hipBLASLt 0.12", GemmModelParams{}));
  other.save(path);
  write_seed(dir, "other_validators", 0x00, read_bytes(path));
}

void write_raw_seed(const fs::path& dir, const std::string& name, const std::string& bytes) {
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary | std::ios::trunc) << bytes;
  std::printf("%s (%zu bytes)\n", (dir / name).c_str(), bytes.size());
}

// A probe of an H200 as the probe writes it (rates of the order measured), under the
// target's validators and under others, and one cut short.
void probe_cache_seeds(const fs::path& corpus, const fs::path& scratch) {
  const fs::path dir = corpus / "probe_cache";
  DeviceProbe p;
  p.validators = fuzz::fuzz_probe_validators();
  p.date = "2026-12-01T00:00:00Z";
  p.copy_tbs = 4.27;
  p.copy_bytes = 1073741824.0;
  p.gemm_size = 8192;
  p.gemm_tflops = {{"fp32", 51.2}, {"tf32", 378.5}, {"bf16", 742.0}, {"fp16", 751.3}};
  p.cluster_units = {{2, 1, 66}, {4, 1, 32}, {8, 2, 16}};
  const std::string path = (scratch / "device-probe.json").string();
  save_device_probe(p, path);
  const std::string text = read_bytes(path);
  write_raw_seed(dir, "h200", text);
  write_raw_seed(dir, "h200_truncated", text.substr(0, text.size() * 2 / 3));
  p.cluster_units.clear();
  p.validators.gpu = "NVIDIA H100 80GB HBM3";
  save_device_probe(p, path);
  write_raw_seed(dir, "other_validators", read_bytes(path));
}

// The committed winners file, the same with a model-rewritten header in one entry, and
// one cut short.
void winners_seeds(const fs::path& corpus, const fs::path& scratch) {
  const fs::path dir = corpus / "winners_file";
  const std::string committed = read_bytes(std::string(HETREC_SOURCE_DIR) + "/tune/winners.json");
  write_raw_seed(dir, "committed", committed);
  write_raw_seed(dir, "committed_truncated", committed.substr(0, committed.size() / 2));
  tune::WinnersStore store = tune::WinnersStore::load(std::string(HETREC_SOURCE_DIR) + "/tune/winners.json");
  tune::WinnersStore one;
  tune::Winner w = store.winners().at(0);
  w.kernel_header = "#include <cstdint>\n#include \"gpu/platform.h\"\n// a rewritten kernel\n";
  one.offer(w);
  const std::string path = (scratch / "winners.json").string();
  one.save(path);
  write_raw_seed(dir, "model_header", read_bytes(path));
}

void copy_text_seeds(const fs::path& from, const fs::path& dir) {
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(from))
    if (e.is_regular_file() && e.path().extension() == ".toml") {
      fs::copy_file(e.path(), dir / e.path().filename(), fs::copy_options::overwrite_existing);
      std::printf("%s\n", (dir / e.path().filename()).c_str());
    }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory, e.g. fuzz/corpus>\n", argv[0]);
    return 2;
  }
  const fs::path corpus = argv[1];
  const fs::path scratch = fs::temp_directory_path() / "hetrec_make_seeds";
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  binary_seeds(corpus, scratch);
  checkpoint_seeds(corpus, scratch);
  gemm_cache_seeds(corpus, scratch);
  probe_cache_seeds(corpus, scratch);
  winners_seeds(corpus, scratch);
  copy_text_seeds(std::string(HETREC_SOURCE_DIR) + "/hw", corpus / "hardware_file");
  copy_text_seeds(std::string(HETREC_SOURCE_DIR) + "/hw/params", corpus / "gemm_params");
  fs::remove_all(scratch);
  return 0;
}

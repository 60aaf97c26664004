// `hetrec export` and `hetrec predict`: a trained model written as safetensors with its
// description, rebuilt by python/hetrec_numpy.py, predicts what hetrec predicts (to 1e-6
// relative) for DLRM and DCNv2 (full and low rank, sum and mean pooling, fp32 and 16-bit
// rows); a damaged or mismatched checkpoint is refused with exit code 4, and an output
// that would replace the checkpoint with exit code 2.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli_test_support.h"

using namespace hetrec::test;
namespace fs = std::filesystem;

namespace {

// The round trip's bound: the largest relative difference of a prediction (docs/export.md).
constexpr double kTolerance = 1e-6;
// Samples hetrec predict scores for the comparison.
constexpr int kSamples = 1024;
// Training steps of the tiny models: enough to move every parameter away from its
// initial value (a round trip of an untrained model would prove less).
constexpr int kSteps = 30;

// The demo model, trained briefly on 2 threads, with a small evaluation split.
std::string base_sets(const fs::path& dir) {
  return " --set train.steps=" + std::to_string(kSteps) +
         " --set train.eval_at_end=false --set train.eval_every=0 --set train.progress=off"
         " --set train.threads=2 --set train.log_level=warn --set data.synthetic.eval_samples=4096"
         " --set train.metrics_path='" +
         (dir / "metrics.jsonl").string() + "' --set train.checkpoint_dir='" + (dir / "ckpt").string() + "'";
}

// A Python 3 with NumPy: $HETREC_PYTHON, else the first of python3 and /usr/bin/python3
// that imports numpy (a user's python3 may be another installation than the system's).
std::string python_with_numpy() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("HETREC_PYTHON")) candidates.emplace_back(env);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const std::string& py : candidates)
    if (std::system((py + " -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  return {};
}

struct Comparison {
  int code = -1;
  nlohmann::json result;
  std::string err;
};

Comparison compare_with_numpy(const fs::path& model, const fs::path& batch, const fs::path& dir) {
  const std::string py = python_with_numpy();
  Comparison c;
  if (py.empty()) {
    c.err = "no python3 with numpy (tools/install_deps.sh installs python3-numpy)";
    return c;
  }
  const fs::path out = dir / "numpy.json", err = dir / "numpy.err";
  const std::string cmd = std::string("cd ") + HETREC_SOURCE_DIR + " && " + py + " python/hetrec_numpy.py --model '" +
                          model.string() + "' --batch '" + batch.string() + "' --tolerance " +
                          std::to_string(kTolerance) + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  c.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  c.err = slurp(err);
  const std::string text = slurp(out);
  if (!text.empty()) c.result = nlohmann::json::parse(text);
  return c;
}

std::string only_checkpoint(const fs::path& dir) {
  std::string found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".hck") found = e.path().string();
  return found;
}

// Trains, exports, predicts and compares one configuration.
void round_trip(const std::string& name, const std::string& model_sets) {
  const auto dir = scratch_dir("export_" + name);
  const std::string sets = base_sets(dir) + model_sets;
  auto r = run_hetrec("train --config configs/demo.toml" + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string ckpt = only_checkpoint(dir / "ckpt");
  ASSERT_FALSE(ckpt.empty()) << "no checkpoint in " << (dir / "ckpt");

  const fs::path model = dir / "model.safetensors", batch = dir / "batch.safetensors";
  r = run_hetrec("export --config configs/demo.toml" + sets + " --checkpoint '" + ckpt + "' --format safetensors --output '" +
                     model.string() + "'",
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_TRUE(fs::exists(model));
  ASSERT_TRUE(fs::exists(dir / "model.json"));
  const auto desc = nlohmann::json::parse(slurp(dir / "model.json"));
  EXPECT_EQ(desc["format"], "hetrec-model");
  EXPECT_EQ(desc["checkpoint"]["step"], kSteps);

  r = run_hetrec("predict --config configs/demo.toml" + sets + " --checkpoint '" + ckpt + "' --samples " +
                     std::to_string(kSamples) + " --output '" + batch.string() + "'",
                 dir);
  ASSERT_EQ(r.code, 0) << r.err;

  const Comparison c = compare_with_numpy(model, batch, dir);
  ASSERT_EQ(c.code, 0) << c.err << c.result.dump();
  EXPECT_EQ(c.result["samples"], kSamples);
  EXPECT_LE(c.result["max_rel_diff"].get<double>(), kTolerance) << c.result.dump();
  std::printf("%s: %s\n", name.c_str(), c.result.dump().c_str());

  // The comparison can fail: change one parameter (the logit layer's bias, the last
  // fp32 of the top MLP's last bias: its bytes sit right before the tables' in the
  // file's order) and the predictions move beyond the bound.
  std::string bytes = slurp(model);
  const uint64_t header_len = *reinterpret_cast<const uint64_t*>(bytes.data());
  const auto header = nlohmann::json::parse(bytes.substr(8, header_len));
  const std::string bias = "top_mlp." + std::to_string(desc["top_mlp"].size() - 1) + ".bias";
  const uint64_t at = 8 + header_len + header[bias]["data_offsets"][0].get<uint64_t>();
  float value;
  std::memcpy(&value, bytes.data() + at, sizeof value);
  value += 0.01f;
  std::memcpy(bytes.data() + at, &value, sizeof value);
  const fs::path changed = dir / "changed.safetensors";
  std::ofstream(changed, std::ios::binary) << bytes;
  fs::copy_file(dir / "model.json", dir / "changed.json");
  const Comparison bad = compare_with_numpy(changed, batch, dir);
  EXPECT_EQ(bad.code, 1) << bad.err << bad.result.dump();
  fs::remove_all(dir);
}

}  // namespace

TEST(Export, DlrmPredictsAsHetrec) { round_trip("dlrm", ""); }

TEST(Export, DlrmSelfInteractionMeanPoolingBf16RowsPredictsAsHetrec) {
  round_trip("dlrm_self_mean_bf16", " --set model.interaction_self=true --set model.pooling=mean"
                                    " --set model.row_dtype=bf16");
}

TEST(Export, Dcnv2FullRankPredictsAsHetrec) {
  round_trip("dcnv2_full", " --set model.arch=dcnv2 --set model.cross_layers=2 --set model.cross_rank=0");
}

TEST(Export, Dcnv2LowRankFp16RowsPredictsAsHetrec) {
  round_trip("dcnv2_low", " --set model.arch=dcnv2 --set model.cross_layers=3 --set model.cross_rank=8"
                          " --set model.row_dtype=fp16 --set model.pooling=mean");
}

TEST(Export, DamagedOrMismatchedCheckpointIsRefused) {
  const auto dir = scratch_dir("export_damaged");
  const std::string sets = base_sets(dir);
  auto r = run_hetrec("train --config configs/demo.toml" + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string ckpt = only_checkpoint(dir / "ckpt");
  ASSERT_FALSE(ckpt.empty());

  // One byte flipped in the middle of the tensor data: the CRC no longer matches.
  std::string bytes = slurp(ckpt);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 0x10);
  const fs::path damaged = dir / "damaged.hck";
  std::ofstream(damaged, std::ios::binary) << bytes;
  const fs::path out = dir / "model.safetensors";
  r = run_hetrec("export --config configs/demo.toml" + sets + " --checkpoint '" + damaged.string() + "' --output '" +
                     out.string() + "'",
                 dir);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("checkpoint error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(damaged.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("checksum mismatch"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(dir / "model.json"));

  // A checkpoint of another model (the config's embedding width differs).
  r = run_hetrec("export --config configs/demo.toml" + sets +
                     " --set model.embedding_dim=8 --set model.bottom_mlp=[64,32,8] --checkpoint '" + ckpt +
                     "' --output '" + out.string() + "'",
                 dir);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("was written for model"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));

  // A truncated file.
  const fs::path truncated = dir / "truncated.hck";
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  r = run_hetrec("export --config configs/demo.toml" + sets + " --checkpoint '" + truncated.string() + "' --output '" +
                     out.string() + "'",
                 dir);
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find(truncated.string()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  fs::remove_all(dir);
}

TEST(Export, RefusesToReplaceItsInput) {
  const auto dir = scratch_dir("export_overwrite");
  const std::string sets = base_sets(dir);
  auto r = run_hetrec("train --config configs/demo.toml" + sets, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string ckpt = only_checkpoint(dir / "ckpt");
  ASSERT_FALSE(ckpt.empty());
  const std::string original = slurp(ckpt);

  // The checkpoint under the output's own name, and under its description's name.
  for (const char* name : {"model.safetensors", "model.json"}) {
    const fs::path input = dir / name;
    fs::copy_file(ckpt, input, fs::copy_options::overwrite_existing);
    r = run_hetrec("export --config configs/demo.toml" + sets + " --checkpoint '" + input.string() + "' --output '" +
                       (dir / "model.safetensors").string() + "'",
                   dir);
    EXPECT_EQ(r.code, 2) << name << ": " << r.err;
    EXPECT_NE(r.err.find("would replace the checkpoint"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(input), original) << name;
    fs::remove(input);
  }
  // The same file through another path (a hard link).
  const fs::path link = dir / "linked.safetensors";
  fs::create_hard_link(ckpt, link);
  r = run_hetrec("export --config configs/demo.toml" + sets + " --checkpoint '" + ckpt + "' --output '" +
                     link.string() + "'",
                 dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(slurp(ckpt), original);

  // An output name without the .safetensors suffix.
  r = run_hetrec("export --config configs/demo.toml" + sets + " --checkpoint '" + ckpt + "' --output '" +
                     (dir / "model.bin").string() + "'",
                 dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(".safetensors"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

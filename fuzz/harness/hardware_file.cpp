// Fuzz targets: hardware description files (hw/*.toml) and GEMM model parameter files
// (hw/params/*.toml).
#include <cctype>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"
#include "hw/hardware.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf/gemm_candidates.h"
#include "gemm_perf/gemm_model.h"

namespace hetrec::fuzz {
namespace {

constexpr std::size_t kMaxStemChars = 64;
// Candidate kernels predicted per precision.
constexpr std::size_t kSampledCandidates = 12;

// A mid-sized GEMM (a DLRM top-MLP layer at batch 4096) that every precision can run.
GemmProblem probe_problem(MatrixPrecision p) {
  GemmProblem problem;
  problem.m = 4096;
  problem.n = 1024;
  problem.k = 512;
  const DType t = p == MatrixPrecision::fp16 ? DType::f16
                  : p == MatrixPrecision::bf16 ? DType::bf16
                                               : DType::f32;
  problem.a_type = problem.b_type = problem.c_type = t;
  problem.allow_tf32 = p == MatrixPrecision::tf32;
  return problem;
}

// load_hardware requires the file to be named after its `name` key: the first
// `name = "<stem>"` of the text picks the file name (letters, digits, '_' only).
std::string file_stem(std::string_view text) {
  const std::string_view key = "name = \"";
  const std::size_t at = text.find(key);
  if (at == std::string_view::npos) return "fuzz";
  std::string stem;
  for (std::size_t i = at + key.size(); i < text.size() && text[i] != '"' && stem.size() < kMaxStemChars; ++i) {
    const char c = text[i];
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "fuzz";
    stem += c;
  }
  return stem.empty() ? "fuzz" : stem;
}

}  // namespace

void hardware_file(std::span<const uint8_t> data) {
  const std::string_view text(reinterpret_cast<const char*>(data.data()), data.size());
  const ScratchDirectory dir;
  const std::string path = dir.path() + "/" + file_stem(text) + ".toml";
  std::ofstream(path, std::ios::binary) << text;
  Hardware hw;
  if (!accepted([&] { hw = load_hardware(path); })) return;
  // An accepted description must be usable by the performance model: for every precision
  // it gives a rate for, kernels spread over its candidate list predict a finite, positive
  // time for a GEMM they can run. (A sample, not the whole list: a full selection costs
  // tens of milliseconds, which would slow the fuzzer a hundredfold.)
  for (MatrixPrecision p : {MatrixPrecision::fp32, MatrixPrecision::tf32, MatrixPrecision::fp16, MatrixPrecision::bf16}) {
    if (hw.dense_tflops_for(p) <= 0.0) continue;
    std::vector<GemmConfig> candidates;
    if (!accepted([&] { candidates = gemm_candidates(hw, p); })) continue;
    const std::size_t stride = std::max<std::size_t>(1, candidates.size() / kSampledCandidates);
    for (std::size_t i = 0; i < candidates.size(); i += stride) {
      GemmEstimate estimate;
      if (!accepted([&] { estimate = predict_gemm(hw, probe_problem(p), candidates[i], GemmModelParams{}); })) continue;
      if (!(std::isfinite(estimate.time_us) && estimate.time_us > 0.0))
        finding(std::string(precision_name(p)) + " GEMM predicted to take " + std::to_string(estimate.time_us) +
                " us with candidate " + std::to_string(i) + " on an accepted hardware description");
    }
  }
}

void gemm_params(std::span<const uint8_t> data) {
  const MemoryFile file(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
  GemmModelParams params;
  if (!accepted([&] { params = load_gemm_params(file.path()); })) return;
  // save() writes every field with full precision, so load(save(p)) == p.
  const ScratchDirectory dir;
  const std::string path = dir.path() + "/params.toml";
  save_gemm_params(params, path);
  if (gemm_params_fingerprint(load_gemm_params(path)) != gemm_params_fingerprint(params))
    finding("GEMM params changed in a save/load round trip");
}

}  // namespace hetrec::fuzz

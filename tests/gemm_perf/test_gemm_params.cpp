#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "gemm_perf/gemm_candidates.h"
#include "gemm_perf/gemm_config.h"
#include "gemm_perf/gemm_model_params.h"
#include "gemm_perf_test_support.h"

using namespace hetrec;
using namespace hetrec::test;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string load_error(const std::string& text) {
  TempDir dir;
  const std::string path = dir.file("params.toml");
  std::ofstream(path) << text;
  try {
    load_gemm_params(path);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

}  // namespace

TEST(GemmModelParams, ShippedFilesLoadForEveryArchitecture) {
  for (const std::string& name : list_hardware(kHwDir)) {
    SCOPED_TRACE(name);
    const Hardware hw = shipped_hardware(name);
    const GemmModelParams p = load_gemm_params_for(hw, kParamsDir);
    EXPECT_EQ(p.arch, hw.arch);
    EXPECT_FALSE(p.calibrated);
    EXPECT_NE(p.note.find("starting values"), std::string::npos);
  }
  // Hopper's bf16 efficiency and HBM efficiency come from the H200 measurements (bench/results/probe-20261130-h200.json).
  const GemmModelParams hopper = load_gemm_params(kParamsDir + "/sm_90.toml");
  EXPECT_NEAR(hopper.hbm_efficiency, 4.3 / 4.8, 0.001);
}

TEST(GemmModelParams, SaveLoadRoundTripsExactly) {
  TempDir dir;
  Rng rng(51);
  for (int trial = 0; trial < 20; ++trial) {
    GemmModelParams p;
    p.arch = "sm_" + std::to_string(rng.below(200));
    p.calibrated = rng.below(2) == 1;
    p.note = "fitted \"on\" 2026-11 \\ with\nnewline";
    p.matrix_efficiency = {rng.uniform_open(), rng.uniform_open(), rng.uniform_open(), rng.uniform_open(),
                           rng.uniform_open()};
    p.shared_memory_efficiency = rng.uniform_open();
    p.l2_bytes_per_clock_per_unit = 1 + 200 * rng.uniform();
    p.l2_usable_fraction = rng.uniform_open();
    p.llc_usable_fraction = rng.uniform_open();
    p.hbm_efficiency = rng.uniform_open();
    p.llc_efficiency = rng.uniform_open();
    p.loaded_latency_ns = 100 + 1000 * rng.uniform();
    p.tile_overhead_exposure = rng.uniform();
    p.launch_overhead_us = 10 * rng.uniform();
    p.legacy_instruction_efficiency = rng.uniform_open();
    p.async_kernel_setup_us = 5 * rng.uniform();
    p.tma_l2_rate_factor = 0.5 + 3 * rng.uniform();
    p.simt_l2_rate_factor = 0.2 + rng.uniform();
    p.family_efficiency[std::to_string(rng.below(100))] = 0.1 + rng.uniform();
    const std::string path = dir.file("p" + std::to_string(trial) + ".toml");
    save_gemm_params(p, path);
    const GemmModelParams q = load_gemm_params(path);
    EXPECT_EQ(q.arch, p.arch);
    EXPECT_EQ(q.calibrated, p.calibrated);
    EXPECT_EQ(q.note, p.note);
    for (MatrixPrecision m : kAllMatrixPrecisions)
      EXPECT_EQ(q.matrix_efficiency.of(m), p.matrix_efficiency.of(m));
    EXPECT_EQ(q.shared_memory_efficiency, p.shared_memory_efficiency);
    EXPECT_EQ(q.l2_bytes_per_clock_per_unit, p.l2_bytes_per_clock_per_unit);
    EXPECT_EQ(q.l2_usable_fraction, p.l2_usable_fraction);
    EXPECT_EQ(q.llc_usable_fraction, p.llc_usable_fraction);
    EXPECT_EQ(q.hbm_efficiency, p.hbm_efficiency);
    EXPECT_EQ(q.llc_efficiency, p.llc_efficiency);
    EXPECT_EQ(q.loaded_latency_ns, p.loaded_latency_ns);
    EXPECT_EQ(q.tile_overhead_exposure, p.tile_overhead_exposure);
    EXPECT_EQ(q.launch_overhead_us, p.launch_overhead_us);
    EXPECT_EQ(q.legacy_instruction_efficiency, p.legacy_instruction_efficiency);
    EXPECT_EQ(q.async_kernel_setup_us, p.async_kernel_setup_us);
    EXPECT_EQ(q.tma_l2_rate_factor, p.tma_l2_rate_factor);
    EXPECT_EQ(q.simt_l2_rate_factor, p.simt_l2_rate_factor);
    EXPECT_EQ(q.family_efficiency, p.family_efficiency);
    EXPECT_EQ(gemm_params_fingerprint(q), gemm_params_fingerprint(p));
  }
}

TEST(GemmModelParams, FingerprintChangesWithAnyField) {
  const GemmModelParams base;
  GemmModelParams changed = base;
  changed.loaded_latency_ns += 1;
  EXPECT_NE(gemm_params_fingerprint(base), gemm_params_fingerprint(changed));
  changed = base;
  changed.matrix_efficiency.fp8 *= 0.5;
  EXPECT_NE(gemm_params_fingerprint(base), gemm_params_fingerprint(changed));
  changed = base;
  changed.legacy_instruction_efficiency *= 0.5;
  EXPECT_NE(gemm_params_fingerprint(base), gemm_params_fingerprint(changed));
  changed = base;
  changed.async_kernel_setup_us += 1;
  EXPECT_NE(gemm_params_fingerprint(base), gemm_params_fingerprint(changed));
  changed = base;
  changed.simt_l2_rate_factor = 0.5;
  EXPECT_NE(gemm_params_fingerprint(base), gemm_params_fingerprint(changed));
  changed = base;
  changed.family_efficiency["66"] = 0.9;
  EXPECT_NE(gemm_params_fingerprint(base), gemm_params_fingerprint(changed));
}

TEST(GemmModelParams, ErrorsNameTheKey) {
  const std::string good = read_text(kParamsDir + "/sm_90.toml");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    const std::size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  std::string e = load_error(with("hbm_efficiency = 0.896", "hbm_efficiency = 1.5"));
  EXPECT_NE(e.find("'hbm_efficiency': expected a fraction in (0, 1]"), std::string::npos) << e;
  e = load_error(with("hbm_efficiency = 0.896", "hbm_efficency = 0.896"));
  EXPECT_NE(e.find("'hbm_efficiency': missing"), std::string::npos) << e;
  e = load_error(with("launch_overhead_us = 2.0", "launch_overhead_us = 2.0\nwarmup_runs = 3"));
  EXPECT_NE(e.find("'warmup_runs': unknown key"), std::string::npos) << e;
  e = load_error(with("bf16 = 0.81", "bf16 = \"0.81\""));
  EXPECT_NE(e.find("'matrix_efficiency.bf16': expected a number, found a string"), std::string::npos) << e;
  e = load_error(with("calibrated = false", "calibrated = 0"));
  EXPECT_NE(e.find("'calibrated': expected true or false"), std::string::npos) << e;
  e = load_error(with("launch_overhead_us = 2.0", "launch_overhead_us = -1.0"));
  EXPECT_NE(e.find("'launch_overhead_us': expected a non-negative number"), std::string::npos) << e;
  e = load_error(with("async_kernel_setup_us = 0.0", "async_kernel_setup_us = -0.5"));
  EXPECT_NE(e.find("'async_kernel_setup_us': expected a non-negative number"), std::string::npos) << e;
  e = load_error(with("legacy_instruction_efficiency = 0.6", "legacy_instruction_efficiency = 1.2"));
  EXPECT_NE(e.find("'legacy_instruction_efficiency': expected a fraction in (0, 1]"), std::string::npos) << e;
  e = load_error(with("simt_l2_rate_factor = 0.5", "simt_l2_rate_factor = 0.0"));
  EXPECT_NE(e.find("'simt_l2_rate_factor': expected a factor in [0.125, 8.0], found"), std::string::npos) << e;
  e = load_error(with("tma_l2_rate_factor = 1.5", "tma_l2_rate_factor = 9"));
  EXPECT_NE(e.find("'tma_l2_rate_factor': expected a factor in [0.125, 8.0], found"), std::string::npos) << e;
  e = load_error(with("legacy_instruction_efficiency = 0.6\n", ""));
  EXPECT_NE(e.find("'legacy_instruction_efficiency': missing"), std::string::npos) << e;
}

// Files written before the load-path L2 factors (the recorded calibrations) load with both
// at 1: the same L2 rate for every kernel, as when they were fitted.
TEST(GemmModelParams, FilesWithoutTheL2RateFactorsLoadWithBothAtOne) {
  TempDir dir;
  std::string text = read_text(kParamsDir + "/sm_90.toml");
  for (const std::string key : {"tma_l2_rate_factor = 1.5\n", "simt_l2_rate_factor = 0.5\n"}) {
    const std::size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos) << key;
    text.erase(at, key.size());
  }
  const std::string path = dir.file("old.toml");
  std::ofstream(path) << text;
  const GemmModelParams p = load_gemm_params(path);
  EXPECT_EQ(p.tma_l2_rate_factor, 1.0);
  EXPECT_EQ(p.simt_l2_rate_factor, 1.0);
}

TEST(GemmModelParams, MissingFileGivesDefaultsAndWrongArchIsAnError) {
  TempDir dir;
  const Hardware hw = shipped_hardware("mi300x");
  const GemmModelParams p = load_gemm_params_for(hw, dir.file("nothing_here"));
  EXPECT_EQ(p.arch, "gfx942");
  EXPECT_FALSE(p.calibrated);
  EXPECT_EQ(p.hbm_efficiency, kDefaultHbmEfficiency);
  EXPECT_NE(p.note.find("generic starting values"), std::string::npos);
  std::filesystem::create_directories(dir.file("params"));
  GemmModelParams other;
  other.arch = "sm_90";
  save_gemm_params(other, dir.file("params") + "/gfx942.toml");
  try {
    load_gemm_params_for(hw, dir.file("params"));
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'sm_90' does not match hardware 'mi300x'"), std::string::npos)
        << e.what();
  }
}

TEST(GemmConfigText, RoundTripsEveryCandidateAndRejectsBadText) {
  for (const std::string& name : list_hardware(kHwDir)) {
    const Hardware hw = shipped_hardware(name);
    for (MatrixPrecision p : kAllMatrixPrecisions)
      for (const GemmConfig& c : gemm_candidates(hw, p))
        ASSERT_EQ(parse_gemm_config(to_string(c), "test"), c);
  }
  const std::string good = to_string(GemmConfig{});
  auto error = [](const std::string& text) {
    try {
      parse_gemm_config(text, "cache.txt:7");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(
      error("tile=128x128 " + good.substr(good.find(' ') + 1)).find("cache.txt:7: GEMM config field 'tile'"),
      std::string::npos);
  EXPECT_NE(error(good + " colour=red").find("field 'colour': unknown field"), std::string::npos);
  EXPECT_NE(error(good.substr(0, good.find(" stages"))).find("field 'stages': missing"), std::string::npos);
  std::string bad = good;
  bad.replace(bad.find("data_parallel"), 13, "sideways");
  EXPECT_NE(error(bad).find("field 'decomposition': unknown 'sideways'"), std::string::npos);
  bad = good;
  bad.replace(bad.find("stages=4"), 8, "stages=-4");
  EXPECT_NE(error(bad).find("field 'stages': expected a non-negative integer"), std::string::npos);
}

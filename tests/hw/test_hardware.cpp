#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "hw/hardware.h"

using namespace hetrec;

namespace {

const std::string kHwDir = std::string(HETREC_SOURCE_DIR) + "/hw";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A scratch directory per test, removed afterwards.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("hetrec_hw_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string file = (path_ / name).string();
    std::ofstream(file) << text;
    return file;
  }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

// Replaces exactly one occurrence of `from` (which must exist) by `to`.
std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test setup: '" << from << "' not in the base file";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Loads the H100 file mutated by one replacement and returns the ConfigError message
// (empty when it loaded, which fails the calling test's expectations).
std::string load_error_of_text(const std::string& text, const std::string& file_name = "h100_sxm.toml") {
  TempDir dir;
  const std::string file = dir.write(file_name, text);
  try {
    load_hardware(file);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file), std::string::npos) << "message does not name the file: " << what;
    return what;
  }
  ADD_FAILURE() << "expected a ConfigError for the mutated file";
  return "";
}

std::string load_error(const std::string& from, const std::string& to,
                       const std::string& file_name = "h100_sxm.toml") {
  SCOPED_TRACE("replacing '" + from + "' by '" + to + "'");
  return load_error_of_text(replace_once(read_text(kHwDir + "/h100_sxm.toml"), from, to), file_name);
}

// The datasheet figures of each shipped GPU, row by row.
struct DesignRow {
  const char* name;
  double hbm_gb, hbm_tbs, bf16, fp8;
  int units, warp;
  double smem_kb;
};
constexpr DesignRow kDesignTable[] = {
    {"h100_sxm", 80, 3.35, 989, 1979, 132, 32, 228}, {"h200_sxm", 141, 4.8, 989, 1979, 132, 32, 228},
    {"b200", 180, 7.7, 2250, 4500, 148, 32, 228},    {"mi300x", 192, 5.3, 1307, 2615, 304, 64, 64},
    {"mi350x", 288, 8.0, 2307, 4614, 256, 64, 160},  {"mi355x", 288, 8.0, 2516, 5033, 256, 64, 160},
};

}  // namespace

TEST(HardwareFiles, ListsEveryShippedGpu) {
  const std::vector<std::string> expected = {"a100_sxm_40gb", "b200",   "h100_sxm", "h200_sxm",
                                             "mi300x",        "mi325x", "mi350x",   "mi355x"};
  EXPECT_EQ(list_hardware(kHwDir), expected);
}

// The runtime's device names find their descriptions: the H100 SXM5 reports a name unlike
// its display name, the H200 a prefix of its own; a name no description lists finds none,
// and the error names the setting that picks one.
TEST(HardwareFiles, RuntimeDeviceNamesFindTheirDescription) {
  EXPECT_EQ(hardware_for_device("NVIDIA H100 80GB HBM3", kHwDir, "k").name, "h100_sxm");
  EXPECT_EQ(hardware_for_device("NVIDIA H200", kHwDir, "k").name, "h200_sxm");
  EXPECT_EQ(hardware_for_device("NVIDIA A100-SXM4-40GB", kHwDir, "k").name, "a100_sxm_40gb");
  EXPECT_EQ(hardware_for_device("AMD Instinct MI300X", kHwDir, "k").name, "mi300x");
  for (const char* other : {"NVIDIA H100 PCIe", "NVIDIA H200 NVL", "NVIDIA H", ""}) {
    try {
      (void)hardware_for_device(other, kHwDir, "model.gemm_hardware");
      ADD_FAILURE() << other << " matched a description";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("set model.gemm_hardware"), std::string::npos) << e.what();
    }
  }
  const Hardware h100 = load_hardware_by_name("h100_sxm", kHwDir);
  EXPECT_TRUE(describes_device(h100, "NVIDIA H100 SXM"));
  EXPECT_FALSE(describes_device(h100, "NVIDIA H100"));
  const std::string e = load_error("device_names = [\"NVIDIA H100 80GB HBM3\"]", "device_names = [\"\"]");
  EXPECT_NE(e.find("device_names"), std::string::npos) << e;
  EXPECT_NE(e.find("must not be empty"), std::string::npos) << e;
}

TEST(HardwareFiles, MatchTheDesignTable) {
  for (const DesignRow& row : kDesignTable) {
    SCOPED_TRACE(row.name);
    const Hardware hw = load_hardware_by_name(row.name, kHwDir);
    EXPECT_EQ(hw.name, row.name);
    EXPECT_DOUBLE_EQ(hw.hbm_gb, row.hbm_gb);
    EXPECT_DOUBLE_EQ(hw.hbm_tbs, row.hbm_tbs);
    EXPECT_NEAR(hw.dense_tflops.bf16, row.bf16, 0.5);
    EXPECT_NEAR(hw.dense_tflops.fp8, row.fp8, 0.5);
    EXPECT_EQ(hw.compute_units, row.units);
    EXPECT_EQ(hw.warp_size, row.warp);
    EXPECT_DOUBLE_EQ(hw.shared_kb_per_unit, row.smem_kb);
  }
  const Hardware mi300x = load_hardware_by_name("mi300x", kHwDir);
  EXPECT_EQ(mi300x.xcds, 8);
  EXPECT_DOUBLE_EQ(mi300x.l2_mb_per_xcd(), 4.0);
  EXPECT_DOUBLE_EQ(mi300x.llc_mb, 256.0);
  EXPECT_DOUBLE_EQ(load_hardware_by_name("b200", kHwDir).l2_mb, 126.0);
}

TEST(HardwareFiles, EveryNumberHasASourceAndRatesMatchTheClock) {
  // Dense bf16 FLOP per clock per SM/CU that each architecture's documents give.
  const std::map<std::string, double> bf16_flops_per_clock = {
      {"sm_80", 2048}, {"sm_90", 4096}, {"sm_100", 8192}, {"gfx942", 2048}, {"gfx950", 4096}};
  for (const std::string& name : list_hardware(kHwDir)) {
    SCOPED_TRACE(name);
    const Hardware hw = load_hardware_by_name(name, kHwDir);
    for (const char* key : {"compute.units", "compute.clock_mhz", "dense_tflops.bf16", "memory.hbm_tbs",
                            "memory.l2_mb", "links.peer_gbs_per_direction"}) {
      ASSERT_TRUE(hw.sources.count(key)) << key;
      EXPECT_FALSE(hw.sources.at(key).empty()) << key;
    }
    for (const MatrixInstruction& mi : hw.matrix_instructions) EXPECT_FALSE(mi.source.empty()) << mi.name;
    const double per_clock = hw.dense_tflops.bf16 * 1e12 / (hw.compute_units * hw.clock_mhz * 1e6);
    EXPECT_NEAR(per_clock / bf16_flops_per_clock.at(hw.arch), 1.0, 0.01);
    EXPECT_EQ(hw.compute_units % hw.xcds, 0);
    for (MatrixPrecision p : kAllMatrixPrecisions)
      if (hw.dense_tflops_for(p) > 0.0) {
        EXPECT_GT(hw.dense_tflops_for(p), hw.dense_tflops.fp32 * 0.99);
      }
  }
}

TEST(HardwareFiles, H200CarriesItsMeasurements) {
  const Hardware hw = load_hardware_by_name("h200_sxm", kHwDir);
  ASSERT_TRUE(hw.measured.has_value());
  EXPECT_EQ(hw.measured->date, "2026-11");
  EXPECT_DOUBLE_EQ(*hw.measured->copy_tbs, 4.3);
  EXPECT_DOUBLE_EQ(*hw.measured->bf16_gemm_tflops_low, 770);
  EXPECT_DOUBLE_EQ(*hw.measured->bf16_gemm_tflops_high, 800);
  EXPECT_DOUBLE_EQ(*hw.measured->l2_mb_reported, 60);
  EXPECT_FALSE(load_hardware_by_name("b200", kHwDir).measured.has_value());
}

TEST(HardwareFiles, HostGatherRateFollowsTheMeasuredCurve) {
  const Hardware hw = load_hardware_by_name("h200_sxm", kHwDir);
  ASSERT_TRUE(hw.measured.has_value());
  const std::vector<HostGatherPoint>& c = hw.measured->host_gather;
  ASSERT_GE(c.size(), 2u);
  for (std::size_t i = 1; i < c.size(); ++i) EXPECT_GT(c[i].span_gb, c[i - 1].span_gb);
  // At the points, between them linearly in log(span), and held beyond the ends.
  for (const HostGatherPoint& p : c) EXPECT_DOUBLE_EQ(*measured_host_gather_gbs(hw, p.span_gb), p.distinct_gbs);
  const double mid = std::sqrt(c[0].span_gb * c[1].span_gb);
  EXPECT_NEAR(*measured_host_gather_gbs(hw, mid), 0.5 * (c[0].distinct_gbs + c[1].distinct_gbs), 1e-9);
  EXPECT_DOUBLE_EQ(*measured_host_gather_gbs(hw, c.front().span_gb / 10), c.front().distinct_gbs);
  EXPECT_DOUBLE_EQ(*measured_host_gather_gbs(hw, c.back().span_gb * 10), c.back().distinct_gbs);
  // Measured on the H200: a 20 GB span gathers at a fraction of a 0.5 GB one's rate.
  EXPECT_LT(*measured_host_gather_gbs(hw, 20.0), 0.25 * *measured_host_gather_gbs(hw, 0.5));
  EXPECT_FALSE(measured_host_gather_gbs(load_hardware_by_name("b200", kHwDir), 1.0).has_value());
  // For rows of another size: per row past the link's reach, at most the fastest rate measured.
  ASSERT_EQ(c.front().row_bytes, 256.0);
  EXPECT_NEAR(*measured_host_gather_gbs(hw, 20.0, 512.0), 2.0 * *measured_host_gather_gbs(hw, 20.0), 1e-9);
  EXPECT_NEAR(*measured_host_gather_gbs(hw, 20.0, 128.0), 0.5 * *measured_host_gather_gbs(hw, 20.0), 1e-9);
  EXPECT_DOUBLE_EQ(*measured_host_gather_gbs(hw, c.front().span_gb, 512.0), c.front().distinct_gbs);
}

// The H100's curve was measured with 256-byte rows; the same run with 512-byte rows
// (bench/results/host-gather-20261205-h100-uniform-fp32.json) is what the per-row rule must
// predict, at every span measured, to within 5%.
TEST(HardwareFiles, HostGatherPerRowRulePredictsTheOtherRowSize) {
  const Hardware hw = load_hardware_by_name("h100_sxm", kHwDir);
  ASSERT_TRUE(hw.measured.has_value());
  ASSERT_EQ(hw.measured->host_gather.front().row_bytes, 256.0);
  const nlohmann::json r =
      nlohmann::json::parse(read_text(std::string(HETREC_SOURCE_DIR) +
                                      "/bench/results/host-gather-20261205-h100-uniform-fp32.json"));
  ASSERT_EQ(r["metrics"]["row_bytes"].get<double>(), 512.0);
  int points = 0;
  for (const nlohmann::json& p : r["metrics"]["spans"]) {
    if (p["memory"] != "host") continue;
    const double span = p["span_gb"].get<double>(), measured = p["distinct_gbs"].get<double>();
    EXPECT_NEAR(*measured_host_gather_gbs(hw, span, 512.0), measured, 0.05 * measured) << span << " GB";
    ++points;
  }
  EXPECT_GE(points, 6);
}

TEST(HardwareFiles, InstructionsDescribeTheirShapes) {
  const Hardware h100 = load_hardware_by_name("h100_sxm", kHwDir);
  bool found_wgmma = false, found_mma_sync = false;
  for (const MatrixInstruction& mi : h100.matrix_instructions) {
    if (mi.precision == MatrixPrecision::bf16 && mi.scope == IssueScope::warpgroup) {
      found_wgmma = true;
      EXPECT_EQ(mi.m, 64);
      EXPECT_TRUE(mi.allows_n(8) && mi.allows_n(256) && mi.allows_n(192));
      EXPECT_FALSE(mi.allows_n(260) || mi.allows_n(12));
      EXPECT_FALSE(mi.k_major_only);
    }
    if (mi.precision == MatrixPrecision::bf16 && mi.scope == IssueScope::warp) {
      found_mma_sync = true;  // Ampere-generation m16n8k16
      EXPECT_EQ(mi.m, 16);
      EXPECT_TRUE(mi.allows_n(8));
      EXPECT_FALSE(mi.allows_n(16));
      EXPECT_EQ(mi.k, 16);
    }
    if (mi.precision == MatrixPrecision::fp8) {
      EXPECT_TRUE(mi.k_major_only);
    }
  }
  EXPECT_TRUE(found_wgmma);
  EXPECT_TRUE(found_mma_sync);
  const Hardware b200 = load_hardware_by_name("b200", kHwDir);
  int pairs = 0;
  for (const MatrixInstruction& mi : b200.matrix_instructions) pairs += mi.ctas == 2;
  EXPECT_EQ(pairs, 4);  // one cta_group::2 family per precision with a Tensor Core rate
  EXPECT_EQ(load_hardware_by_name("mi355x", kHwDir).dense_tflops.tf32, 0.0);
}

TEST(HardwareErrors, UnknownKeys) {
  std::string e = load_error("arch = \"sm_90\"", "arch = \"sm_90\"\nfavourite_colour = \"green\"");
  EXPECT_NE(e.find("'favourite_colour': unknown key"), std::string::npos) << e;
  e = load_error("[compute]\n", "[compute]\nsm_count = { value = 1, source = \"x\" }\n");
  EXPECT_NE(e.find("'compute.sm_count': unknown key"), std::string::npos) << e;
  e = load_error("units = { value = 132,", "units = { value = 132, note = \"x\",");
  EXPECT_NE(e.find("'compute.units.note': unknown key"), std::string::npos) << e;
  e = load_error("k = 16\nsource", "k = 16\nwidth = 3\nsource");
  EXPECT_NE(e.find("'matrix_instructions[0].width': unknown key"), std::string::npos) << e;
  // A measured host-gather curve must ascend in span, give one row size and name its source.
  const std::string base = read_text(kHwDir + "/b200.toml");
  const std::string head = "\n[measured]\ndate = \"2026-11\"\n[[measured.host_gather]]\n";
  e = load_error_of_text(base + head + "span_gb = 2\ndistinct_gbs = 15\nrow_bytes = 256\nsource = \"b\"\n" +
                         "[[measured.host_gather]]\nspan_gb = 1\ndistinct_gbs = 30\nrow_bytes = 256\nsource = \"b\"\n",
                         "b200.toml");
  EXPECT_NE(e.find("measured.host_gather[1].span_gb"), std::string::npos) << e;
  EXPECT_NE(e.find("ascending"), std::string::npos) << e;
  e = load_error_of_text(base + head + "span_gb = 2\ndistinct_gbs = 15\nrow_bytes = 256\n", "b200.toml");
  EXPECT_NE(e.find("measured.host_gather[0].source"), std::string::npos) << e;
  e = load_error_of_text(base + head + "span_gb = 2\ndistinct_gbs = 15\nsource = \"b\"\n", "b200.toml");
  EXPECT_NE(e.find("measured.host_gather[0].row_bytes"), std::string::npos) << e;
  e = load_error_of_text(base + head + "span_gb = 1\ndistinct_gbs = 30\nrow_bytes = 256\nsource = \"b\"\n" +
                         "[[measured.host_gather]]\nspan_gb = 2\ndistinct_gbs = 15\nrow_bytes = 512\nsource = \"b\"\n",
                         "b200.toml");
  EXPECT_NE(e.find("measured.host_gather[1].row_bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("one size"), std::string::npos) << e;
}

TEST(HardwareErrors, WrongTypes) {
  std::string e = load_error("units = { value = 132,", "units = { value = \"132\",");
  EXPECT_NE(e.find("'compute.units.value': expected a number, found a string"), std::string::npos) << e;
  e = load_error("units = { value = 132,", "units = { value = 132.5,");
  EXPECT_NE(e.find("'compute.units.value': expected an integer, found a float"), std::string::npos) << e;
  e = load_error("hbm_tbs = { value = 3.35, source = \"H100 datasheet (SXM): GPU memory bandwidth 3.35 TB/s\" }", "hbm_tbs = 3.35");
  EXPECT_NE(e.find("'memory.hbm_tbs': expected { value"), std::string::npos) << e;
  e = load_error("vendor = \"nvidia\"", "vendor = 7");
  EXPECT_NE(e.find("'vendor': expected a string, found an integer"), std::string::npos) << e;
  TempDir dir;
  const std::string file = dir.write("tiny.toml",
                                     "schema_version = 1\nname = \"tiny\"\ndisplay_name = \"x\"\nvendor = "
                                     "\"amd\"\narch = \"gfx942\"\ncompute = 5\n");
  try {
    load_hardware(file);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& ce) {
    EXPECT_NE(std::string(ce.what()).find(file + ":6: key 'compute': expected a table, found an integer"),
              std::string::npos)
        << ce.what();
  }
}

TEST(HardwareErrors, MissingKeysAndSources) {
  std::string e = load_error("hbm_tbs = { value = 3.35, source = \"H100 datasheet (SXM): GPU memory bandwidth 3.35 TB/s\" }\n", "");
  EXPECT_NE(e.find("'memory.hbm_tbs': missing"), std::string::npos) << e;
  e = load_error(
      "units = { value = 132, source = \"Hopper whitepaper: the H100 SXM5 enables 132 of GH100's 144 SMs\" }",
      "units = { value = 132 }");
  EXPECT_NE(e.find("'compute.units.source': missing"), std::string::npos) << e;
  e = load_error(
      "units = { value = 132, source = \"Hopper whitepaper: the H100 SXM5 enables 132 of GH100's 144 SMs\" }",
      "units = { value = 132, source = \"\" }");
  EXPECT_NE(e.find("'compute.units.source': must name where"), std::string::npos) << e;
  e = load_error(
      "source = \"PTX ISA, wgmma.mma_async: shapes m64nNk16 for .f16/.bf16, N = 8..256 in steps of 8\"\n\n"
      "[[matrix_instructions]]\nprecision = \"fp16\"",
      "\n[[matrix_instructions]]\nprecision = \"fp16\"");
  EXPECT_NE(e.find("'matrix_instructions[0].source': missing"), std::string::npos) << e;
}

TEST(HardwareErrors, ValuesOutOfRangeOrInconsistent) {
  std::string e = load_error("units = { value = 132,", "units = { value = 0,");
  EXPECT_NE(e.find("'compute.units': expected a positive integer"), std::string::npos) << e;
  e = load_error("units = { value = 132,", "units = { value = 99999999999999,");
  EXPECT_NE(e.find("'compute.units': expected a positive integer of at most 2147483647"), std::string::npos) << e;
  e = load_error("hbm_tbs = { value = 3.35,", "hbm_tbs = { value = -3.35,");
  EXPECT_NE(e.find("'memory.hbm_tbs': expected a positive number"), std::string::npos) << e;
  e = load_error("vendor = \"nvidia\"", "vendor = \"intel\"");
  EXPECT_NE(e.find("'vendor': unknown vendor 'intel'"), std::string::npos) << e;
  e = load_error("warp_size = { value = 32,", "warp_size = { value = 48,");
  EXPECT_NE(e.find("'compute.warp_size': expected 32 or 64"), std::string::npos) << e;
  e = load_error("xcds = { value = 1,", "xcds = { value = 4,");
  EXPECT_NE(e.find("'memory.l2_mb_per_xcd': missing (required when compute.xcds > 1)"), std::string::npos)
      << e;
  e = load_error("xcds = { value = 1,", "xcds = { value = 5,");
  EXPECT_NE(e.find("'compute.xcds': units (132) must divide evenly"), std::string::npos) << e;
  e = load_error(
      "l2_mb = { value = 50, source = \"Hopper whitepaper: 50 MB L2 on the H100 SXM5\" }",
      "l2_mb = { value = 50, source = \"Hopper whitepaper: 50 MB L2 on the H100 SXM5\" }\nl2_mb_per_xcd = { value = 40, source = \"x\" }");
  EXPECT_NE(e.find("'memory.l2_mb_per_xcd': times compute.xcds"), std::string::npos) << e;
  e = load_error("max_shared_kb_per_block = { value = 227,", "max_shared_kb_per_block = { value = 300,");
  EXPECT_NE(e.find("'memory.max_shared_kb_per_block': must not exceed"), std::string::npos) << e;
  e = load_error("schema_version = 1", "schema_version = 2");
  EXPECT_NE(e.find("'schema_version': expected 1, found 2"), std::string::npos) << e;
  e = load_error("name = \"h100_sxm\"", "name = \"h100\"");
  EXPECT_NE(e.find("'name': 'h100' must equal the file name"), std::string::npos) << e;
}

TEST(HardwareErrors, MatrixInstructions) {
  std::string e = load_error("precision = \"bf16\"", "precision = \"int4\"");
  EXPECT_NE(e.find("'matrix_instructions[0].precision': unknown precision 'int4'"), std::string::npos) << e;
  e = load_error("scope = \"warpgroup\"", "scope = \"grid\"");
  EXPECT_NE(e.find("'matrix_instructions[0].scope': unknown issue scope 'grid'"), std::string::npos) << e;
  e = load_error("n_step = 8\nk = 16", "n_step = 7\nk = 16");
  EXPECT_NE(e.find("'matrix_instructions[0].n_step': n_max - n_min must be a multiple"), std::string::npos)
      << e;
  e = load_error("m = 64\nn_min = 8", "m = 64\nn = 64\nn_min = 8");
  EXPECT_NE(e.find("'matrix_instructions[0].n': give either"), std::string::npos) << e;
  e = load_error("k = 16\nsource", "k = 16\nctas = 2\nsource");
  EXPECT_NE(e.find("'matrix_instructions[0].ctas': only cta-scope"), std::string::npos) << e;
  // A rate without an instruction, and an instruction without a rate.
  std::string no_tf32 = read_text(kHwDir + "/h100_sxm.toml");
  for (const char* name : {"name = \"wgmma", "name = \"mma.sync"})
    no_tf32 = replace_once(no_tf32, std::string("precision = \"tf32\"\n") + name,
                           std::string("precision = \"fp16\"\n") + name);
  e = load_error_of_text(no_tf32);
  EXPECT_NE(e.find("no instruction of precision tf32 although dense_tflops gives its rate"),
            std::string::npos)
      << e;
  e = load_error("fp8 = { value = 1979, source = \"H100 datasheet (SXM): FP8 Tensor Core 3,958 TFLOPS with sparsity, halved for dense\" }\n", "");
  EXPECT_NE(e.find("no dense_tflops.fp8 rate is given"), std::string::npos) << e;
}

TEST(HardwareErrors, MeasuredSection) {
  TempDir dir;
  std::string text = read_text(kHwDir + "/h200_sxm.toml");
  text = replace_once(text, "bf16_gemm_tflops_low = { value = 770,", "bf16_gemm_tflops_low = { value = 900,");
  const std::string file = dir.write("h200_sxm.toml", text);
  try {
    load_hardware(file);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("'measured.bf16_gemm_tflops_low': must not exceed"),
              std::string::npos)
        << e.what();
  }
}

// The AMD parts carry their published clocks under a dense GEMM; the model's matrix rate
// follows them, other GPUs run at clock_mhz.
TEST(HardwareFiles, MatrixClocksUnderLoad) {
  const Hardware mi300x = load_hardware_by_name("mi300x", kHwDir);
  EXPECT_DOUBLE_EQ(mi300x.matrix_clock_mhz.bf16, 1207.0);
  EXPECT_DOUBLE_EQ(mi300x.matrix_clock_share(MatrixPrecision::bf16), 1207.0 / 2100.0);
  EXPECT_DOUBLE_EQ(mi300x.matrix_clock_share(MatrixPrecision::tf32), 1.0);  // none published
  EXPECT_FALSE(mi300x.sources.at("matrix_clock_mhz.bf16").empty());
  const Hardware mi325x = load_hardware_by_name("mi325x", kHwDir);
  EXPECT_GT(mi325x.matrix_clock_share(MatrixPrecision::bf16), mi300x.matrix_clock_share(MatrixPrecision::bf16));
  EXPECT_DOUBLE_EQ(load_hardware_by_name("h200_sxm", kHwDir).matrix_clock_share(MatrixPrecision::bf16), 1.0);
}

TEST(HardwareErrors, MatrixClocks) {
  const std::string table = "[memory]";
  std::string e = load_error(table, "[matrix_clock_mhz]\nbf16 = { value = 2500, source = \"x\" }\n\n[memory]");
  EXPECT_NE(e.find("'matrix_clock_mhz.bf16': a clock under load of 2500"), std::string::npos) << e;
  EXPECT_NE(e.find("is above compute.clock_mhz"), std::string::npos) << e;
  e = load_error(table, "[matrix_clock_mhz]\nbf17 = { value = 1500, source = \"x\" }\n\n[memory]");
  EXPECT_NE(e.find("bf17"), std::string::npos) << e;
  e = load_error(table, "[matrix_clock_mhz]\nbf16 = { value = -1, source = \"x\" }\n\n[memory]");
  EXPECT_NE(e.find("'matrix_clock_mhz.bf16': expected a positive number"), std::string::npos) << e;
  e = load_error(table, "[matrix_clock_mhz]\nbf16 = 1500\n\n[memory]");
  EXPECT_NE(e.find("matrix_clock_mhz.bf16"), std::string::npos) << e;  // no source
}

// The H200 carries its measured cluster occupancy: 4- and 8-CTA clusters fill 120 of the
// 132 SMs at one CTA per SM. Sizes without a figure, and GPUs without one, use every unit.
TEST(HardwareFiles, ClusterUnits) {
  const Hardware h200 = load_hardware_by_name("h200_sxm", kHwDir);
  EXPECT_EQ(h200.units_for_clusters(1, 1), 132);
  EXPECT_EQ(h200.units_for_clusters(2, 1), 132);
  EXPECT_EQ(h200.units_for_clusters(4, 1), 120);
  EXPECT_EQ(h200.units_for_clusters(8, 1), 120);
  EXPECT_EQ(h200.units_for_clusters(4, 2), 124);
  EXPECT_EQ(h200.units_for_clusters(4, 3), 124);  // more CTAs per SM read the two-CTA figure
  EXPECT_FALSE(h200.sources.at("cluster_units.one_cta_per_unit.4").empty());
  const Hardware mi300x = load_hardware_by_name("mi300x", kHwDir);
  EXPECT_EQ(mi300x.units_for_clusters(1, 1), mi300x.compute_units);
  EXPECT_EQ(load_hardware_by_name("b200", kHwDir).units_for_clusters(4, 1), 148);
}

TEST(HardwareErrors, ClusterUnits) {
  const std::string table = "[memory]";
  auto with = [&](const std::string& body) {
    return load_error(table, "[cluster_units.one_cta_per_unit]\n" + body + "\n\n[memory]");
  };
  std::string e = with("3 = { value = 120, source = \"x\" }");
  EXPECT_NE(e.find("'cluster_units.one_cta_per_unit.3': expected a cluster size"), std::string::npos) << e;
  e = with("16 = { value = 112, source = \"x\" }");  // above compute.max_cluster_size (8)
  EXPECT_NE(e.find("expected a cluster size: a power of two from 2 to compute.max_cluster_size (8)"),
            std::string::npos)
      << e;
  e = with("four = { value = 120, source = \"x\" }");
  EXPECT_NE(e.find("'cluster_units.one_cta_per_unit.four'"), std::string::npos) << e;
  e = with("4 = { value = 140, source = \"x\" }");
  EXPECT_NE(e.find("expected between the cluster size and compute.units (132), found 140"), std::string::npos) << e;
  e = with("4 = { value = 120.5, source = \"x\" }");
  EXPECT_NE(e.find("cluster_units.one_cta_per_unit.4"), std::string::npos) << e;
  e = load_error(table, "[cluster_units.three_ctas_per_unit]\n4 = { value = 120, source = \"x\" }\n\n[memory]");
  EXPECT_NE(e.find("three_ctas_per_unit"), std::string::npos) << e;
}

TEST(HardwareErrors, SyntaxErrorNamesTheLine) {
  TempDir dir;
  const std::string file =
      dir.write("broken.toml", "schema_version = 1\nname = \"broken\"\nvendor = = \"amd\"\n");
  try {
    load_hardware(file);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(file + ":3: TOML syntax error"), std::string::npos) << e.what();
  }
}

TEST(HardwareErrors, MissingFilesAndNames) {
  TempDir dir;
  EXPECT_THROW(load_hardware(dir.str() + "/nothing.toml"), IoError);
  try {
    load_hardware_by_name("h300", kHwDir);
    ADD_FAILURE() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("hardware 'h300'"), std::string::npos) << what;
    EXPECT_NE(what.find("available: a100_sxm_40gb, b200, h100_sxm, h200_sxm, mi300x"), std::string::npos) << what;
  }
  EXPECT_THROW(list_hardware(dir.str() + "/no_such_dir"), IoError);
}

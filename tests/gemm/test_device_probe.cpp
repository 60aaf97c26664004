// The device probe's cache file (gemm/device_probe.h): what is written is read back
// exactly; a file of another device, driver, runtime or library, or a damaged one, is
// refused with a reason naming the file; on a GPU, a measurement gives plausible rates
// and a second call is served from the cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "gemm/device_probe.h"

namespace hetrec {
namespace {

class DeviceProbeCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hetrec-probe-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "sub" / "probe.json").string();  // save creates the missing folder
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static DeviceProbe sample() {
    DeviceProbe p;
    p.validators = {"NVIDIA H200", "13.0", "13.0", "cublaslt 130001"};
    p.date = "2026-11-30T04:00:00Z";
    p.copy_tbs = 4.27;
    p.copy_bytes = 1073741824.0;
    p.gemm_size = 8192;
    p.gemm_tflops = {{"fp32", 51.5}, {"tf32", 372.25}, {"bf16", 781.5}, {"fp16", 790.125}};
    p.cluster_units = {{2, 1, 66}, {4, 1, 31}, {8, 2, 30}};
    return p;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(DeviceProbeCache, RoundTripsExactly) {
  const DeviceProbe p = sample();
  save_device_probe(p, path_);
  std::string why;
  const auto back = load_device_probe(path_, p.validators, &why);
  ASSERT_TRUE(back.has_value()) << why;
  EXPECT_EQ(back->validators, p.validators);
  EXPECT_EQ(back->date, p.date);
  EXPECT_EQ(back->copy_tbs, p.copy_tbs);
  EXPECT_EQ(back->copy_bytes, p.copy_bytes);
  EXPECT_EQ(back->gemm_size, p.gemm_size);
  EXPECT_EQ(back->gemm_tflops, p.gemm_tflops);
  ASSERT_EQ(back->cluster_units.size(), p.cluster_units.size());
  for (std::size_t i = 0; i < p.cluster_units.size(); ++i) {
    EXPECT_EQ(back->cluster_units[i].cluster_size, p.cluster_units[i].cluster_size);
    EXPECT_EQ(back->cluster_units[i].ctas_per_unit, p.cluster_units[i].ctas_per_unit);
    EXPECT_EQ(back->cluster_units[i].max_active_clusters, p.cluster_units[i].max_active_clusters);
  }
  EXPECT_EQ(back->cluster_units[1].units(), 124.0);
  EXPECT_EQ(back->cluster_units[2].units(), 120.0);
  EXPECT_EQ(probe_gemm_tflops(*back, "bf16"), 781.5);
  EXPECT_THROW(probe_gemm_tflops(*back, "fp8"), InternalError);
}

TEST_F(DeviceProbeCache, OtherSetupIsRefusedNamingWhatDiffers) {
  const DeviceProbe p = sample();
  save_device_probe(p, path_);
  struct Change {
    ProbeValidators v;
    std::string expect;
  };
  ProbeValidators gpu = p.validators, driver = p.validators, runtime = p.validators, library = p.validators;
  gpu.gpu = "NVIDIA H100 80GB HBM3";
  driver.driver = "13.1";
  runtime.runtime = "12.9";
  library.blas_library = "cublaslt 130100";
  for (const Change& c : {Change{gpu, "gpu is"}, Change{driver, "driver is"}, Change{runtime, "runtime is"},
                          Change{library, "library is"}}) {
    std::string why;
    EXPECT_FALSE(load_device_probe(path_, c.v, &why).has_value());
    EXPECT_NE(why.find(path_), std::string::npos) << why;
    EXPECT_NE(why.find(c.expect), std::string::npos) << why;
  }
}

TEST_F(DeviceProbeCache, DamagedOrMissingFilesAreRefused) {
  const DeviceProbe p = sample();
  std::string why;
  EXPECT_FALSE(load_device_probe(path_, p.validators, &why).has_value());
  EXPECT_NE(why.find("no such file"), std::string::npos) << why;

  save_device_probe(p, path_);
  std::string text;
  {
    std::ifstream in(path_);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const auto write = [&](const std::string& t) { std::ofstream(path_, std::ios::trunc) << t; };
  write(text.substr(0, text.size() / 2));  // truncated
  EXPECT_FALSE(load_device_probe(path_, p.validators, &why).has_value());
  EXPECT_NE(why.find(path_), std::string::npos) << why;

  std::string bad = text;
  bad.replace(bad.find("\"copy_tbs\": 4.27"), 16, "\"copy_tbs\": -1.0");
  write(bad);
  EXPECT_FALSE(load_device_probe(path_, p.validators, &why).has_value());
  EXPECT_NE(why.find("copy_tbs must be positive"), std::string::npos) << why;

  bad = text;
  bad.replace(bad.find("\"schema\": 2"), 11, "\"schema\": 9");
  write(bad);
  EXPECT_FALSE(load_device_probe(path_, p.validators, &why).has_value());
  EXPECT_NE(why.find("schema"), std::string::npos) << why;

  bad = text;
  bad.replace(bad.find("\"size\": 4"), 9, "\"size\": 1");
  write(bad);
  EXPECT_FALSE(load_device_probe(path_, p.validators, &why).has_value());
  EXPECT_NE(why.find("cluster_units needs size >= 2"), std::string::npos) << why;

  bad = text;
  bad.replace(bad.find("\"gemm_size\": 8192"), 17, "\"gemm_size\": \"x\"");
  write(bad);
  EXPECT_FALSE(load_device_probe(path_, p.validators, &why).has_value());
}

TEST_F(DeviceProbeCache, MeasuresOnceThenServesTheCache) {
  // Without a GPU build or a visible device there is nothing to measure, and saying so is
  // the probe's answer.
  try {
    (void)local_probe_validators(0);
  } catch (const DeviceError& e) {
    GTEST_SKIP() << e.what();
  }
  const Logger quiet(LogLevel::quiet);
  const DeviceProbe first = probe_device(0, path_, false, quiet);
  // Plausible for any GPU this code targets: a copy above 0.1 TB/s, 16-bit GEMMs faster
  // than fp32 ones and below 10 PFLOP/s.
  EXPECT_GT(first.copy_tbs, 0.1);
  EXPECT_GT(probe_gemm_tflops(first, "bf16"), probe_gemm_tflops(first, "fp32"));
  EXPECT_LT(probe_gemm_tflops(first, "bf16"), 1e4);
  const DeviceProbe second = probe_device(0, path_, false, quiet);
  EXPECT_EQ(second.date, first.date);  // from the cache, not measured again
  EXPECT_EQ(second.gemm_tflops, first.gemm_tflops);
  std::printf("copy %.2f TB/s; fp32 %.1f, tf32 %.1f, bf16 %.1f, fp16 %.1f TFLOP/s\n", first.copy_tbs,
              probe_gemm_tflops(first, "fp32"), probe_gemm_tflops(first, "tf32"), probe_gemm_tflops(first, "bf16"),
              probe_gemm_tflops(first, "fp16"));
}

}  // namespace
}  // namespace hetrec

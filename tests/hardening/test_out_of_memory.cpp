// Out of memory, through the real program: a model too large for the machine stops with
// the out-of-memory exit code and a message saying how much it needs, instead of a crash
// or the kernel's OOM killer; it does so before it allocates (train/memory_admission.h).
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "hetrec_process.h"

#ifdef HETREC_EXE

namespace fs = std::filesystem;

namespace {

// Exit code of an out-of-memory error (README "Exit codes").
constexpr int kExitMemory = 6;
// The address space the program gets: ample for a small run, far below the model below
// (2^31-1 rows x 1024 fp32 = 8.8 TB of embedding rows).
constexpr rlim_t kAddressSpaceBytes = rlim_t{16} << 30;
constexpr const char* kTableBytes = "8796093018112";  // 2147483647 x 1024 x 4

}  // namespace

TEST(OutOfMemory, ModelLargerThanTheMachineGivesTheOutOfMemoryExitAndSize) {
  const fs::path dir = fs::temp_directory_path() / ("hetrec_oom_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path config = dir / "huge.toml";
  std::ofstream(config) << "[model]\nnum_dense = 2\nembedding_dim = 1024\ntable_rows = [2147483647]\n"
                           "bottom_mlp = [1024]\ntop_mlp = [1]\n[train]\nsteps = 1\nprogress = \"off\"\nthreads = 1\n";
  hetrec::test::ProcessLimits limits;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer reserves terabytes of shadow memory, so no address-space limit; its
  // allocator cannot map 8.8 TB either and, told so, returns null as malloc would.
  const char* inherited = std::getenv("ASAN_OPTIONS");
  limits.environment = {std::string("ASAN_OPTIONS=") + (inherited ? std::string(inherited) + ":" : "") +
                        "allocator_may_return_null=1"};
#else
  limits.address_space = kAddressSpaceBytes;
#endif
  hetrec::test::HetrecProcess p(HETREC_EXE, {"train", "--config", config.string()}, dir / "out.txt", dir / "err.txt",
                                limits);
  p.wait();
  const std::string err = hetrec::test::read_text(dir / "err.txt");
  EXPECT_EQ(p.exit_code(), kExitMemory) << err;
  EXPECT_NE(err.find("out of memory"), std::string::npos) << err;
  EXPECT_NE(err.find(kTableBytes), std::string::npos) << "the message gives the size: " << err;
  fs::remove_all(dir);
}

namespace {

// A model that the first allocations do not refuse: three tables of 768 MiB (3 x 2^20
// rows of 64 fp32), each of which the process can allocate and fill, 2.25 GiB together,
// under an address space of 2 GiB. Without an admission check the engine allocates and
// initialises table after table, touching gigabytes, before one allocation fails; on a
// machine without the memory (no address-space limit) those pages are what thrash until
// the kernel's OOM killer ends the program.
constexpr rlim_t kAdmissionAddressSpace = rlim_t{2} << 30;
constexpr const char* kAdmissionTableBytes = "805306368";  // 3145728 x 64 x 4
// The refusal comes before any allocation: well within this, even on a loaded machine
// (the program's start and its config take a fraction of a second).
constexpr double kAdmissionSeconds = 5.0;
// ... and the program never holds more than its code, libraries and small buffers: under
// half the 768 MiB table it refuses (the CUDA build's libraries alone take about 260 MiB).
constexpr long kAdmissionPeakRssKiB = 384 * 1024;

}  // namespace

TEST(OutOfMemory, ModelBeyondTheAvailableMemoryIsRefusedBeforeItsFirstAllocation) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "needs an address-space limit, which AddressSanitizer's shadow memory rules out";
#endif
  const fs::path dir = fs::temp_directory_path() / ("hetrec_oom_admission_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path config = dir / "three_tables.toml";
  std::ofstream(config) << "[model]\nnum_dense = 2\nembedding_dim = 64\nbottom_mlp = [64]\ntop_mlp = [1]\n"
                           "[[model.tables]]\nname = \"big_a\"\nrows = 3145728\n"
                           "[[model.tables]]\nname = \"big_b\"\nrows = 3145728\n"
                           "[[model.tables]]\nname = \"big_c\"\nrows = 3145728\n"
                           "[train]\nsteps = 1\nprogress = \"off\"\nthreads = 2\n";
  hetrec::test::ProcessLimits limits;
  limits.address_space = kAdmissionAddressSpace;
  const auto t0 = std::chrono::steady_clock::now();
  hetrec::test::HetrecProcess p(HETREC_EXE, {"train", "--config", config.string()}, dir / "out.txt", dir / "err.txt",
                                limits);
  p.wait();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rusage children{};
  ASSERT_EQ(::getrusage(RUSAGE_CHILDREN, &children), 0);
  const std::string err = hetrec::test::read_text(dir / "err.txt");
  EXPECT_EQ(p.exit_code(), kExitMemory) << err;
  EXPECT_LT(seconds, kAdmissionSeconds) << err;
  EXPECT_LT(children.ru_maxrss, kAdmissionPeakRssKiB) << "the program allocated before refusing: " << err;
  EXPECT_NE(err.find("out of memory: " + config.string() + ": the run needs about"), std::string::npos) << err;
  for (const char* table : {"table 'big_a' rows", "table 'big_b' rows", "table 'big_c' rows"})
    EXPECT_NE(err.find(std::string(table) + " (3145728 x 64 fp32) 768.0 MiB (" + kAdmissionTableBytes + " bytes)"),
              std::string::npos)
        << err;
  // The limit that applies is named: the address space here, unless the machine has less
  // memory available than that.
  const std::string meminfo = hetrec::test::read_text("/proc/meminfo");
  const auto at = meminfo.find("MemAvailable:");
  const bool less_memory = at != std::string::npos && std::stod(meminfo.substr(at + 13)) * 1024.0 < kAdmissionAddressSpace;
  EXPECT_NE(err.find(less_memory ? "is available: MemAvailable (/proc/meminfo)"
                                 : "is available: the address-space limit (RLIMIT_AS, ulimit -v: 2.00 GiB less "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("Nothing was allocated"), std::string::npos) << err;
  EXPECT_NE(err.find("model.row_dtype"), std::string::npos) << "it says what to change: " << err;
  fs::remove_all(dir);
}

#else

TEST(OutOfMemory, ModelLargerThanTheMachineGivesTheOutOfMemoryExitAndSize) { GTEST_SKIP() << "hetrec is not built"; }
TEST(OutOfMemory, ModelBeyondTheAvailableMemoryIsRefusedBeforeItsFirstAllocation) {
  GTEST_SKIP() << "hetrec is not built";
}

#endif

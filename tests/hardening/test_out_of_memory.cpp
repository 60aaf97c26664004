// Out of memory, through the real program: a model too large for the machine stops with
// the out-of-memory exit code and a message saying how much could not be allocated,
// instead of a crash or the kernel's OOM killer.
#include <gtest/gtest.h>

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

#else

TEST(OutOfMemory, ModelLargerThanTheMachineGivesTheOutOfMemoryExitAndSize) { GTEST_SKIP() << "hetrec is not built"; }

#endif

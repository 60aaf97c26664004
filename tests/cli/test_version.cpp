// `hetrec --version`: the version, the commit it was built from, the build type, the
// compiler and the libraries, on stdout with exit code 0.
#include <gtest/gtest.h>

#include <regex>

#include "cli_test_support.h"

using namespace hetrec::test;

TEST(Version, PrintsVersionCommitBuildAndLibraries) {
  const auto dir = scratch_dir("version");
  const RunResult r = run_hetrec("--version", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("^hetrec [0-9]+\\.[0-9]+\\.[0-9]+\n"))) << r.out;
  // The commit is `git describe` of the configure step (a hash, a tag, maybe "-dirty"),
  // or "unknown" outside a git checkout.
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\ncommit: ([0-9a-zA-Z._-]+)\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nbuild type: [A-Za-z]+\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\ncompiler: [A-Za-z]+ [0-9.]+\n"))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\nCPU BLAS: OpenBLAS [0-9.]+"))) << r.out;
  if (r.out.find("backends: cpu, gpu") != std::string::npos) {
    // A GPU build names its toolkit, and the runtime, driver, BLAS-Lt and collectives
    // libraries even on a machine without a device.
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\n(CUDA|HIP) toolkit: [0-9]+\\.[0-9]+"))) << r.out;
    for (const char* what : {" runtime: ", " driver: ", "\nBLAS-Lt: ", "\ncollectives: "})
      EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
    // And the hash of its run-time compiled kernel sources, which a tuned winner must carry.
    EXPECT_TRUE(std::regex_search(r.out, std::regex("\nkernel sources: [0-9a-f]{16}(\n|$)"))) << r.out;
  } else {
    EXPECT_NE(r.out.find("\nbackends: cpu\n"), std::string::npos) << r.out;
  }
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// Replays, through every fuzz target, its committed seed corpus (fuzz/corpus/<target>/)
// and every input that once made it fail (tests/hardening/regressions/<target>/). Built
// by the normal and the sanitizer jobs, so each past finding stays fixed under
// AddressSanitizer and UndefinedBehaviorSanitizer too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "harness/fuzz_support.h"
#include "harness/fuzz_targets.h"

namespace fs = std::filesystem;
using hetrec::fuzz::Target;

namespace {

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file()) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs one input; returns "" when the target returned normally, else what escaped.
std::string replay(const Target& target, const fs::path& input) {
  const std::vector<uint8_t> bytes = read_bytes(input);
  try {
    hetrec::fuzz::run_target(target.run, bytes);
    return {};
  } catch (const hetrec::fuzz::FindingError& e) {
    return "finding: " + e.what;
  } catch (const std::exception& e) {
    return std::string("escaped exception: ") + e.what();
  }
}

class FuzzReplay : public ::testing::TestWithParam<Target> {};

}  // namespace

namespace hetrec::fuzz {
// How GoogleTest names a target in its messages.
void PrintTo(const Target& target, std::ostream* os) { *os << target.name; }
}  // namespace hetrec::fuzz

TEST_P(FuzzReplay, SeedCorpusAndPastFindingsPass) {
  const Target& target = GetParam();
  const fs::path seeds = fs::path(HETREC_SOURCE_DIR) / "fuzz" / "corpus" / std::string(target.name);
  const fs::path findings = fs::path(HETREC_SOURCE_DIR) / "tests" / "hardening" / "regressions" / std::string(target.name);
  const auto seed_files = files_in(seeds);
  EXPECT_GE(seed_files.size(), 3u) << "the seed corpus " << seeds << " is missing or too small";
  std::vector<fs::path> all = seed_files;
  const auto finding_files = files_in(findings);
  all.insert(all.end(), finding_files.begin(), finding_files.end());
  for (const fs::path& input : all) EXPECT_EQ(replay(target, input), "") << input;
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(hetrec::fuzz::kTargets),
                         [](const ::testing::TestParamInfo<Target>& param_info) { return std::string(param_info.param.name); });

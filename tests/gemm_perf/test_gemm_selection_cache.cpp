#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "gemm_perf/gemm_candidates.h"
#include "gemm_perf/gemm_selection_cache.h"
#include "gemm_perf/gemm_selector.h"
#include "gemm_perf_test_support.h"

using namespace hetrec;
using namespace hetrec::test;

namespace {

// A Logger writing into a temporary file whose text the test can read back.
class CapturedLog {
 public:
  CapturedLog() : file_(std::tmpfile()), log_(LogLevel::debug, file_) {}
  ~CapturedLog() { std::fclose(file_); }
  const Logger& log() const { return log_; }
  std::string text() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string out;
    char buf[512];
    while (std::fgets(buf, sizeof buf, file_)) out += buf;
    return out;
  }

 private:
  std::FILE* file_;
  Logger log_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

struct Fixture {
  Hardware hw = shipped_hardware("h200_sxm");
  GemmModelParams params = shipped_params(hw);
  GemmSelector selector = GemmSelector::for_hardware(hw, params);
  GemmCacheValidators validators =
      make_gemm_cache_validators("NVIDIA H200", "570.86.15", "hetrec 0.1.0", params);
};

}  // namespace

TEST(GemmSelectionCache, SaveLoadRoundTripsEveryField) {
  Fixture f;
  TempDir dir;
  Rng rng(41);
  GemmSelectionCache cache(f.validators);
  std::vector<GemmProblem> problems;
  for (int i = 0; i < 30; ++i) {
    problems.push_back(random_problem(rng, f.hw));
    // Every third as packed operands: some with rows aligned to fewer than 16 bytes.
    if (i % 3 == 0 && problems.back().a_type != DType::f8e4m3) problems.back() = with_packed_alignment(problems.back());
    select_cached(f.selector, cache, problems.back());
  }
  ASSERT_GT(cache.size(), 20u);
  const std::string path = dir.file("gemm_cache.txt");
  cache.save(path);
  CapturedLog log;
  const GemmSelectionCache loaded = GemmSelectionCache::load(path, f.validators, log.log());
  EXPECT_EQ(loaded.size(), cache.size()) << log.text();
  for (const GemmProblem& p : problems) {
    const auto a = cache.find(p), b = loaded.find(p);
    ASSERT_TRUE(a && b) << describe_gemm_problem(p);
    EXPECT_EQ(a->config, b->config);
    EXPECT_EQ(a->predicted_us, b->predicted_us);
    EXPECT_EQ(b->config, f.selector.select(p).config);
  }
  // Saving is deterministic.
  const std::string again = dir.file("again.txt");
  loaded.save(again);
  EXPECT_EQ(read_text(again), read_text(path));
}

TEST(GemmSelectionCache, KeyCoversLayoutDtypesEpilogueAndAlignment) {
  Fixture f;
  GemmSelectionCache cache(f.validators);
  GemmProblem p;
  p.m = 1024, p.n = 512, p.k = 256;
  const GemmConfig sentinel = gemm_candidates(f.hw, MatrixPrecision::bf16)[5];
  cache.insert(p, {sentinel, 1.0, {}});
  EXPECT_TRUE(cache.find(p).has_value());
  EXPECT_FALSE(cache.find(p, 3).has_value());  // another variant of the same problem
  for (auto change : std::initializer_list<void (*)(GemmProblem&)>{
           [](GemmProblem& q) { q.trans_a = true; }, [](GemmProblem& q) { q.trans_b = true; },
           [](GemmProblem& q) { q.c_type = DType::f32; },
           [](GemmProblem& q) { q.epilogue = GemmEpilogue::bias; },
           [](GemmProblem& q) { q.accumulate = true; }, [](GemmProblem& q) { q.batch = 2; },
           [](GemmProblem& q) { q.a_type = q.b_type = DType::f16; }, [](GemmProblem& q) { q.k = 257; },
           [](GemmProblem& q) { q.a_alignment = 4; }, [](GemmProblem& q) { q.b_alignment = 2; }}) {
    GemmProblem q = p;
    change(q);
    EXPECT_FALSE(cache.find(q).has_value()) << describe_gemm_problem(q);
  }
  // A hit is returned as stored, without selecting again.
  EXPECT_EQ(select_cached(f.selector, cache, p).config, sentinel);
  EXPECT_EQ(select_cached(f.selector, cache, p).predicted_us, 1.0);
}

// The engine's entries: a library configuration key and a variant (its cuBLASLt epilogue)
// beside the model's description, through the file and back.
TEST(GemmSelectionCache, LibraryKeysAndVariantsRoundTrip) {
  Fixture f;
  TempDir dir;
  GemmSelectionCache cache(f.validators);
  GemmProblem p;
  p.m = 65536, p.n = 1024, p.k = 512;
  const GemmConfig a = gemm_candidates(f.hw, MatrixPrecision::bf16)[3];
  const GemmConfig b = gemm_candidates(f.hw, MatrixPrecision::bf16)[7];
  cache.insert(p, {a, 12.5, "a66.t13.s35.k1.r0.w0.c2.o3"}, 4);
  cache.insert(p, {b, 13.25, "a21.t15.s12.k2.r2.w0.c0.o0"}, 5);
  cache.insert(p, {a, 14.0, {}});
  const std::string path = dir.file("cache.txt");
  cache.save(path);
  CapturedLog log;
  const GemmSelectionCache loaded = GemmSelectionCache::load(path, f.validators, log.log());
  ASSERT_EQ(loaded.size(), 3u) << log.text();
  const auto v4 = loaded.find(p, 4), v5 = loaded.find(p, 5), v0 = loaded.find(p);
  ASSERT_TRUE(v4 && v5 && v0);
  EXPECT_EQ(v4->config, a);
  EXPECT_EQ(v4->vendor_config, "a66.t13.s35.k1.r0.w0.c2.o3");
  EXPECT_EQ(v4->predicted_us, 12.5);
  EXPECT_EQ(v5->config, b);
  EXPECT_EQ(v5->vendor_config, "a21.t15.s12.k2.r2.w0.c0.o0");
  EXPECT_TRUE(v0->vendor_config.empty());
  EXPECT_EQ(v0->predicted_us, 14.0);
}

TEST(GemmSelectionCache, OtherValidatorsDiscardTheFile) {
  Fixture f;
  TempDir dir;
  GemmSelectionCache cache(f.validators);
  GemmProblem p;
  p.m = p.n = p.k = 2048;
  select_cached(f.selector, cache, p);
  const std::string path = dir.file("cache.txt");
  cache.save(path);

  const GemmCacheValidators new_driver =
      make_gemm_cache_validators("NVIDIA H200", "575.51.03", "hetrec 0.1.0", f.params);
  CapturedLog log;
  const GemmSelectionCache loaded = GemmSelectionCache::load(path, new_driver, log.log());
  EXPECT_EQ(loaded.size(), 0u);
  EXPECT_EQ(loaded.validators(), new_driver);
  EXPECT_NE(log.text().find("discarding GEMM selection cache " + path +
                            ": validator 'driver' is '570.86.15' in the file, '575.51.03' now"),
            std::string::npos)
      << log.text();

  // New model parameters change the fingerprint and invalidate the file too.
  GemmModelParams recalibrated = f.params;
  recalibrated.matrix_efficiency.bf16 *= 0.99;
  CapturedLog log2;
  const GemmSelectionCache stale = GemmSelectionCache::load(
      path, make_gemm_cache_validators("NVIDIA H200", "570.86.15", "hetrec 0.1.0", recalibrated), log2.log());
  EXPECT_EQ(stale.size(), 0u);
  EXPECT_NE(log2.text().find("validator 'model_params'"), std::string::npos) << log2.text();

  // The same validators keep it.
  CapturedLog log3;
  EXPECT_EQ(GemmSelectionCache::load(path, f.validators, log3.log()).size(), 1u);
  EXPECT_EQ(log3.text().find("discarding"), std::string::npos);
}

TEST(GemmSelectionCache, DamagedOrMissingFilesStartEmpty) {
  Fixture f;
  TempDir dir;
  GemmSelectionCache cache(f.validators);
  for (int64_t n : {256, 512, 1024}) {
    GemmProblem p;
    p.m = p.n = p.k = n;
    select_cached(f.selector, cache, p);
  }
  const std::string path = dir.file("cache.txt");
  cache.save(path);
  const std::string text = read_text(path);

  {  // missing: empty, only a debug note
    CapturedLog log;
    EXPECT_EQ(GemmSelectionCache::load(dir.file("none.txt"), f.validators, log.log()).size(), 0u);
    EXPECT_NE(log.text().find("none yet"), std::string::npos);
  }
  {  // truncated: the end line is gone
    const std::string cut = dir.file("cut.txt");
    write_text(cut, text.substr(0, text.rfind("end ")));
    CapturedLog log;
    EXPECT_EQ(GemmSelectionCache::load(cut, f.validators, log.log()).size(), 0u);
    EXPECT_NE(log.text().find("truncated"), std::string::npos) << log.text();
  }
  {  // an edited entry fails the checksum
    std::string edited = text;
    const std::size_t at = edited.find("predicted_us=");
    edited[at + 13] = edited[at + 13] == '9' ? '8' : '9';
    const std::string file = dir.file("edited.txt");
    write_text(file, edited);
    CapturedLog log;
    EXPECT_EQ(GemmSelectionCache::load(file, f.validators, log.log()).size(), 0u);
    EXPECT_NE(log.text().find("checksum does not match"), std::string::npos) << log.text();
  }
  {  // garbage: the header is wrong
    const std::string file = dir.file("garbage.txt");
    write_text(file, "not a cache\n");
    CapturedLog log;
    EXPECT_EQ(GemmSelectionCache::load(file, f.validators, log.log()).size(), 0u);
    EXPECT_NE(log.text().find(file + ":1: first line is not"), std::string::npos) << log.text();
  }
  {  // a malformed entry line names its line
    std::string bad = text;
    const std::size_t at = bad.find("tile=");
    bad.replace(at, 5, "tyle=");
    const std::string file = dir.file("bad.txt");
    write_text(file, bad);
    CapturedLog log;
    EXPECT_EQ(GemmSelectionCache::load(file, f.validators, log.log()).size(), 0u);
    EXPECT_NE(log.text().find("field 'tile': missing"), std::string::npos) << log.text();
  }
}

TEST(GemmSelectionCache, ValidatorsMustBeOneLine) {
  EXPECT_THROW(make_gemm_cache_validators("GPU\nname", "1", "2", GemmModelParams{}), ConfigError);
}

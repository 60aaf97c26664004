// The broad oracle corpus (gemm_perf/gemm_corpus.h): its families, points and shards, and the
// merge of its pieces (gemm_perf/gemm_oracle_merge.h) with its validation.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/text_file.h"
#include "gemm_perf/gemm_corpus.h"
#include "gemm_perf/gemm_oracle.h"
#include "gemm_perf/gemm_oracle_merge.h"

namespace hetrec {
namespace {

TEST(GemmCorpus, SixtyFamiliesAllBatchesAndPrecisions) {
  const auto families = gemm_corpus_families();
  EXPECT_GE(families.size(), 60u);
  std::set<std::string> names;
  for (const auto& f : families) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_FALSE(f.source.empty()) << f.name;
    EXPECT_FALSE(f.layers.empty()) << f.name;
  }
  const auto shapes = gemm_corpus();
  std::set<std::string> ids, precisions, shape_families;
  int64_t lo = INT64_MAX, hi = 0;
  for (const auto& s : shapes) {
    EXPECT_TRUE(ids.insert(s.id).second) << s.id;
    precisions.insert(s.precision);
    shape_families.insert(s.model);
    lo = std::min(lo, s.batch), hi = std::max(hi, s.batch);
  }
  EXPECT_EQ(precisions, (std::set<std::string>{"bf16", "fp16", "fp32", "tf32"}));
  EXPECT_EQ(lo, 1024);
  EXPECT_EQ(hi, 256 * 1024);
  EXPECT_EQ(shape_families, names);  // every family keeps shapes under the work cap
}

TEST(GemmCorpus, FamiliesSelectAndUnknownOnesAreNamed) {
  for (const auto& s : gemm_corpus({"hstu_512"})) EXPECT_EQ(s.model, "hstu_512");
  try {
    (void)gemm_corpus({"hstu_512", "no_such_family"});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_family"), std::string::npos) << e.what();
  }
}

TEST(GemmCorpus, ShardsPartitionTheShapes) {
  const auto all = gemm_corpus();
  std::multiset<std::string> seen;
  for (int i = 0; i < 7; ++i)
    for (const auto& s : gemm_shard(all, i, 7)) seen.insert(s.id);
  EXPECT_EQ(seen.size(), all.size());
  for (const auto& s : all) EXPECT_EQ(seen.count(s.id), 1u) << s.id;
  EXPECT_THROW((void)gemm_shard(all, 7, 7), ConfigError);
  int i = 0, n = 0;
  parse_shard("3/8", "--shard", i, n);
  EXPECT_EQ(i, 3);
  EXPECT_EQ(n, 8);
  for (const char* bad : {"8/8", "3", "a/b", "1/0", "-1/4", "1/4x"})
    EXPECT_THROW(parse_shard(bad, "--shard", i, n), ConfigError) << bad;
}

// Two pieces cut from the recorded oracle, written to scratch files.
struct Pieces {
  std::string a, b;
  std::size_t shapes = 0;
};
Pieces write_pieces(const std::string& name, const std::function<void(nlohmann::json&)>& edit_b) {
  const nlohmann::json full = nlohmann::json::parse(
      read_text_file(std::string(HETREC_SOURCE_DIR) + "/bench/results/gemm-oracle-20261130d-h200.json.xz"));
  nlohmann::json a = full, b = full;
  a["shapes"] = nlohmann::json::array();
  b["shapes"] = nlohmann::json::array();
  for (std::size_t i = 0; i < 40; ++i) (i % 2 ? b : a)["shapes"].push_back(full["shapes"][i]);
  a["shard"] = "0/2";
  b["shard"] = "1/2";
  edit_b(b);
  Pieces p{::testing::TempDir() + name + "_a.json", ::testing::TempDir() + name + "_b.json", 40};
  std::ofstream(p.a) << a.dump();
  std::ofstream(p.b) << b.dump();
  return p;
}

TEST(GemmOracleMerge, MergesPiecesMeasuredAlike) {
  const Pieces p = write_pieces("alike", [](nlohmann::json&) {});
  const GemmOracle merged = parse_gemm_oracle(merge_gemm_oracles({p.a, p.b}), "merged");
  EXPECT_EQ(merged.shapes.size(), p.shapes);
  const nlohmann::json j = nlohmann::json::parse(merge_gemm_oracles({p.a, p.b}));
  EXPECT_EQ(j["merged_from"].size(), 2u);
  // Each piece's shard is kept beside it; the merged record is no one shard.
  EXPECT_EQ(j["merged_from"][0]["shard"], "0/2");
  EXPECT_EQ(j["merged_from"][1]["shard"], "1/2");
  EXPECT_FALSE(j.contains("shard"));
}

TEST(GemmOracleMerge, RefusesPiecesOfAnotherGpuDriverOrLibrary) {
  for (const char* field : {"gpu", "driver", "cublaslt_version", "launches"}) {
    const Pieces p = write_pieces(std::string("differ_") + field, [&](nlohmann::json& b) {
      b[field] = b[field].is_string() ? nlohmann::json("other") : nlohmann::json(99);
    });
    try {
      (void)merge_gemm_oracles({p.a, p.b});
      FAIL() << "expected a ConfigError for " << field;
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p.b), std::string::npos) << e.what();
    }
  }
}

TEST(GemmOracleMerge, RefusesAShapeTwiceAndASinglePiece) {
  const Pieces p = write_pieces("twice", [](nlohmann::json&) {});
  EXPECT_THROW((void)merge_gemm_oracles({p.a, p.a}), ConfigError);
  EXPECT_THROW((void)merge_gemm_oracles({p.a}), ConfigError);
}

}  // namespace
}  // namespace hetrec

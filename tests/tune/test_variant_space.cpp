// Variant spaces as data: enumeration, description and the JSON form of a parameter set.
#include <gtest/gtest.h>

#include <set>

#include "core/error.h"
#include "tunable/embedding_forward/embedding_forward_cost.h"
#include "tune/variant_space.h"

namespace hetrec::tune {
namespace {

TEST(VariantSpace, EnumeratesEveryCombinationOnce) {
  const VariantSpace s{"k", {{"a", {1, 2, 3}, ""}, {"b", {10, 20}, ""}}};
  const auto all = enumerate(s);
  ASSERT_EQ(all.size(), 6u);
  std::set<std::pair<int, int>> seen;
  for (const ParameterSet& p : all) {
    ASSERT_EQ(p.size(), 2u);
    seen.insert({p.at("a"), p.at("b")});
  }
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(all.front(), (ParameterSet{{"a", 1}, {"b", 10}}));
  EXPECT_EQ(all.back(), (ParameterSet{{"a", 3}, {"b", 20}}));
}

TEST(VariantSpace, EmptyValueListIsAnError) {
  EXPECT_THROW(enumerate(VariantSpace{"k", {{"a", {}, ""}}}), InternalError);
}

TEST(VariantSpace, DescribeAndJsonRoundTrip) {
  const ParameterSet p{{"vec_bytes", 16}, {"lanes", 8}};
  EXPECT_EQ(describe(p), "lanes=8 vec_bytes=16");
  EXPECT_EQ(parameters_from_json(to_json(p), "x"), p);
}

TEST(VariantSpace, NonIntegerParameterNamesTheKey) {
  try {
    parameters_from_json(nlohmann::json{{"lanes", "eight"}}, "winners.json: winners[0].params");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("winners[0].params"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("'lanes'"), std::string::npos);
  }
  EXPECT_THROW(parameters_from_json(nlohmann::json::array(), "x"), ConfigError);
}

TEST(VariantSpace, EmbeddingForwardSpaceConvertsToVariants) {
  const VariantSpace s = embedding_forward_space();
  EXPECT_EQ(s.kernel, "embedding_bag_forward");
  for (const ParameterSet& p : enumerate(s)) {
    const kernels::EmbeddingForwardVariant v = to_forward_variant(p);
    EXPECT_EQ(v.vec_bytes, p.at("vec_bytes"));
    EXPECT_EQ(v.lanes, p.at("lanes"));
    EXPECT_EQ(v.ids_in_flight, p.at("ids_in_flight"));
    EXPECT_EQ(v.block_threads, p.at("block_threads"));
  }
  ParameterSet missing{{"vec_bytes", 16}, {"lanes", 8}, {"ids_in_flight", 4}};
  EXPECT_THROW(to_forward_variant(missing), ConfigError);
  missing["block_threads"] = 256;
  missing["unroll"] = 2;
  EXPECT_THROW(to_forward_variant(missing), ConfigError);
}

}  // namespace
}  // namespace hetrec::tune

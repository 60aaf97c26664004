#include "gemm_perf/gemm_corpus.h"

#include <set>
#include <tuple>

#include "core/error.h"

namespace hetrec::inline gemm_perf {

namespace {

// The most work one corpus GEMM may take, 2*M*N*K FLOPs: one launch of the slowest
// configuration worth timing then stays in the milliseconds (fp32's SIMT pipe runs the H200
// at 67 TFLOP/s, its bf16 tensor cores at 989: NVIDIA H200 datasheet), so a shape's timed
// launches fit a share of one bench run of minutes.
constexpr double kMaxFlopsFp32 = 2e11;
constexpr double kMaxFlopsTensor = 2e12;

int64_t dot_width(int64_t tables, int64_t dim) { return dim + (tables + 1) * tables / 2; }

// An MLP of `widths` (widths[0] the input); a ReLU after every layer but the last.
GemmCorpusFamily mlp(const std::string& name, const std::string& source, const std::vector<int64_t>& widths,
                     bool relu_last = false, const std::string& prefix = "l") {
  GemmCorpusFamily f{name, source, {}};
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    const bool last = i + 2 == widths.size();
    f.layers.push_back({name, prefix + std::to_string(i), widths[i], widths[i + 1], !last || relu_last});
  }
  return f;
}

// A low-rank cross layer: x V (in -> rank) then U (rank -> in), no ReLU (DCN V2, Wang et al. 2021).
GemmCorpusFamily low_rank(const std::string& name, const std::string& source, int64_t in, int64_t rank) {
  return {name, source, {{name, "v", in, rank, false}, {name, "u", rank, in, false}}};
}

// Single projections (no ReLU): attention's input and output projections.
GemmCorpusFamily projections(const std::string& name, const std::string& source,
                             const std::vector<std::pair<int64_t, int64_t>>& in_out) {
  GemmCorpusFamily f{name, source, {}};
  for (std::size_t i = 0; i < in_out.size(); ++i)
    f.layers.push_back({name, "p" + std::to_string(i), in_out[i].first, in_out[i].second, false});
  return f;
}

}  // namespace

std::vector<GemmCorpusFamily> gemm_corpus_families() {
  std::vector<GemmCorpusFamily> f;
  const std::string dlrm = "DLRM (Naumov et al. 2019, facebookresearch/dlrm)";
  const std::string mlperf = "MLPerf Training DLRM / DLRM-DCNv2 reference";
  const std::string dcn = "DCN V2 (Wang et al. 2021)";
  const std::string wukong = "Wukong (Zhang et al. 2024): FMB MLPs and LCB compressions";
  const std::string dhen = "DHEN (Zhang et al. 2022): interaction modules over embedding widths";
  const std::string hstu = "HSTU (Zhai et al. 2024): U,V,Q,K projection 4d and output projection";
  const std::string tower = "two-tower retrieval (Covington et al. 2016; Yi et al. 2019)";
  const std::string odd = "odd and unaligned widths (no power-of-two factor)";
  // DLRM.
  f.push_back(mlp("dlrm_demo_bot", "configs/demo.toml", {13, 64, 32, 16}, true));
  f.push_back(mlp("dlrm_demo_top", "configs/demo.toml", {dot_width(8, 16), 64, 32, 1}));
  f.push_back(mlp("dlrm_mlperf_bot", mlperf, {13, 512, 256, 128}, true));
  f.push_back(mlp("dlrm_mlperf_top", mlperf, {dot_width(26, 128), 1024, 1024, 512, 256, 1}));
  f.push_back(mlp("dlrm_kaggle_bot", dlrm + " Criteo Kaggle", {13, 512, 256, 64, 16}, true));
  f.push_back(mlp("dlrm_kaggle_top", dlrm + " Criteo Kaggle", {dot_width(26, 16), 512, 256, 1}));
  f.push_back(mlp("dlrm_wide_bot", "DLRM bottom MLP at twice the MLPerf widths", {13, 1024, 512, 256}, true));
  f.push_back(mlp("dlrm_terabyte_top", dlrm + " Criteo Terabyte", {dot_width(26, 64), 512, 512, 256, 1}));
  f.push_back(mlp("dlrm_large_top", "DLRM scaled top (4K wide)", {4096, 4096, 4096, 2048, 1}));
  f.push_back(mlp("dlrm_narrow_top", "40 tables of dim 64", {dot_width(40, 64), 256, 256}, true));
  f.push_back(mlp("dlrm_wide_top", "wide ranking top", {2048, 2048, 1024}, true));
  // DCNv2.
  f.push_back(low_rank("dcnv2_mlperf_cross", mlperf, 3456, 512));
  f.push_back(mlp("dcnv2_mlperf_top", mlperf, {3456, 1024, 1024, 512, 256, 1}));
  f.push_back(low_rank("dcnv2_criteo_r128", dcn + " Criteo, 39 x 16", 624, 128));
  f.push_back(low_rank("dcnv2_criteo_r256", dcn + " Criteo, 39 x 16", 624, 256));
  f.push_back(mlp("dcnv2_criteo_deep", dcn + " Criteo deep tower", {624, 1024, 1024, 1024}, true));
  f.push_back(projections("dcnv2_full_1024", dcn + " full-rank cross", {{1024, 1024}}));
  f.push_back(projections("dcnv2_full_2048", dcn + " full-rank cross", {{2048, 2048}}));
  f.push_back(low_rank("dcnv2_r32_2048", dcn + " very low rank", 2048, 32));
  f.push_back(low_rank("dcnv2_r64_4096", dcn + " low rank on a wide input", 4096, 64));
  f.push_back(low_rank("dcnv2_r1024_6912", dcn + " 54 x 128 input", 6912, 1024));
  // Wukong / DHEN interaction widths.
  f.push_back(mlp("wukong_fmb_1024", wukong, {40 * 64, 1024, 640}, true));
  f.push_back(mlp("wukong_fmb_2048", wukong, {48 * 128, 2048, 1536}, true));
  f.push_back(mlp("wukong_fmb_8192", wukong, {8192, 8192, 4096}, true));
  f.push_back(projections("wukong_lcb_32", wukong, {{32, 32}, {64, 32}}));
  f.push_back(projections("wukong_lcb_192", wukong, {{192, 96}, {160, 192}}));
  f.push_back(mlp("dhen_linear_1536", dhen, {1536, 768, 1536}, true));
  f.push_back(mlp("dhen_dot_600", dhen, {dot_width(34, 40), 600, 300}, true));
  f.push_back(projections("dhen_dcn_800", dhen, {{800, 800}}));
  f.push_back(mlp("dhen_mlp_5120", dhen, {5120, 2560, 1280}, true));
  // HSTU and other sequential recommenders' attention projections (rows: batch x tokens).
  f.push_back(projections("hstu_256", hstu + " d=256", {{256, 1024}, {256, 256}}));
  f.push_back(projections("hstu_512", hstu + " d=512", {{512, 2048}, {512, 512}}));
  f.push_back(projections("hstu_1024", hstu + " d=1024", {{1024, 4096}, {1024, 1024}}));
  f.push_back(projections("sasrec_50", "SASRec (Kang & McAuley 2018) d=50", {{50, 150}, {50, 50}}));
  f.push_back(mlp("bert4rec_64", "BERT4Rec (Sun et al. 2019) d=64, FFN 4d", {64, 256, 64}));
  f.push_back(mlp("bst_ffn_768", "transformer FFN d=768 (BST, Chen et al. 2019)", {768, 3072, 768}));
  f.push_back(projections("autoint_16", "AutoInt (Song et al. 2019) d=16, 2 heads of 32", {{16, 192}, {64, 16}}));
  f.push_back(projections("din_attention", "DIN (Zhou et al. 2018) attention unit", {{144, 80}, {80, 40}, {40, 1}}));
  f.push_back(projections("dien_gru_36", "DIEN (Zhou et al. 2019) GRU gates, hidden 36", {{36, 108}}));
  // Two-tower retrieval MLPs.
  f.push_back(mlp("youtube_dnn_tower", tower, {512, 1024, 512, 256}, true));
  f.push_back(mlp("two_tower_query_128", tower, {320, 256, 128}));
  f.push_back(mlp("two_tower_item_64", tower, {192, 128, 64}));
  f.push_back(mlp("two_tower_wide_512", tower, {1536, 1024, 512}));
  f.push_back(mlp("dssm_300", "DSSM (Huang et al. 2013) hidden 300, out 128", {2000, 300, 300, 128}));
  // Other ranking models' towers.
  f.push_back(mlp("wide_deep", "Wide & Deep (Cheng et al. 2016)", {1200, 1024, 512, 256, 1}));
  f.push_back(mlp("deepfm_400", "DeepFM (Guo et al. 2017) 39 x 10 input", {390, 400, 400, 400, 1}));
  f.push_back(projections("xdeepfm_cin_200", "xDeepFM (Lian et al. 2018) CIN, 39 fields, 200 maps",
                          {{39 * 39, 200}, {39 * 200, 200}}));
  f.push_back(mlp("mmoe_expert", "MMoE (Ma et al. 2018) expert", {1024, 768, 384}, true));
  f.push_back(projections("mmoe_gate", "MMoE (Ma et al. 2018) gate over 8 experts", {{1024, 8}}));
  f.push_back(mlp("masknet_1560", "MaskNet (Wang et al. 2021) instance mask, ratio 2", {1560, 3120, 1560}));
  f.push_back(mlp("finalmlp_800", "FinalMLP (Mao et al. 2023) two streams", {1024, 800, 800, 400}, true));
  f.push_back(mlp("din_mlp", "DIN (Zhou et al. 2018) main MLP", {600, 200, 80, 2}));
  // Odd and unaligned widths.
  f.push_back(mlp("odd_13_100_37", odd, {13, 100, 37, 1}));
  f.push_back(mlp("odd_primes", odd, {127, 251, 509, 1021}, true));
  f.push_back(projections("odd_255", odd, {{255, 255}}));
  f.push_back(mlp("odd_1000", odd, {1000, 500, 250, 1}));
  f.push_back(mlp("odd_1023", odd, {1023, 1000, 997}, true));
  f.push_back(mlp("odd_600_75", odd, {600, 300, 150, 75}, true));
  f.push_back(projections("odd_4097", odd, {{4097, 4095}}));
  f.push_back(mlp("odd_3_7_11", odd, {3, 7, 11, 5}, true));
  f.push_back(mlp("odd_1500_2999", odd, {1500, 2999, 1500}, true));
  f.push_back(projections("odd_6000_33", odd, {{6000, 33}, {33, 6000}}));
  f.push_back(mlp("odd_96_160_224", "widths of 32 but not of 64", {96, 160, 224, 96}, true));
  return f;
}

std::vector<GemmCorpusPoint> gemm_corpus_points() {
  // bf16 (what a tuned run uses) at five batches over 1K..256K, fp16 and tf32 at three,
  // fp32 (the SIMT fallback) at two.
  std::vector<GemmCorpusPoint> p;
  for (const int64_t b : {1024, 4096, 16384, 65536, 262144}) p.push_back({b, "bf16"});
  for (const int64_t b : {2048, 32768, 131072}) p.push_back({b, "fp16"});
  for (const int64_t b : {1024, 16384, 262144}) p.push_back({b, "tf32"});
  for (const int64_t b : {4096, 65536}) p.push_back({b, "fp32"});
  return p;
}

std::vector<GemmSuiteShape> gemm_corpus(const std::vector<std::string>& families) {
  const auto all = gemm_corpus_families();
  std::set<std::string> wanted(families.begin(), families.end());
  std::string known;
  for (const auto& fam : all) {
    known += (known.empty() ? "" : ", ") + fam.name;
    wanted.erase(fam.name);
  }
  if (!wanted.empty()) throw ConfigError("--families: '" + *wanted.begin() + "' is not a corpus family (" + known + ")");
  const std::set<std::string> chosen(families.begin(), families.end());
  auto points = gemm_corpus_points();
  std::set<int64_t> batches;
  for (const auto& p : points) batches.insert(p.batch);
  std::vector<GemmSuiteShape> out;
  std::set<std::tuple<int64_t, int64_t, int64_t, bool, bool, std::string, std::string>> gemms;
  for (const int64_t batch : batches)
    for (const auto& fam : all) {
      if (!chosen.empty() && !chosen.count(fam.name)) continue;
      for (const auto& layer : fam.layers)
        for (const auto& p : points) {
          if (p.batch != batch) continue;
          for (auto& s : gemm_layer_shapes(layer, batch, p.precision)) {
            const double flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
            if (flops > (p.precision == "fp32" ? kMaxFlopsFp32 : kMaxFlopsTensor)) continue;
            if (!gemms.insert({s.m, s.n, s.k, s.trans_a, s.trans_b, s.precision, s.epilogue}).second) continue;
            out.push_back(std::move(s));
          }
        }
    }
  return out;
}

std::vector<GemmSuiteShape> gemm_shard(std::vector<GemmSuiteShape> shapes, int index, int count) {
  if (count < 1 || index < 0 || index >= count)
    throw ConfigError("--shard " + std::to_string(index) + "/" + std::to_string(count) +
                      ": expected i/n with 0 <= i < n");
  std::vector<GemmSuiteShape> out;
  for (std::size_t i = static_cast<std::size_t>(index); i < shapes.size(); i += static_cast<std::size_t>(count))
    out.push_back(std::move(shapes[i]));
  return out;
}

void parse_shard(const std::string& text, const std::string& option, int& index, int& count) {
  const auto slash = text.find('/');
  std::size_t used_i = 0, used_n = 0;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("no slash");
    index = std::stoi(text.substr(0, slash), &used_i);
    count = std::stoi(text.substr(slash + 1), &used_n);
  } catch (const std::exception&) {
    throw ConfigError(option + " '" + text + "': expected i/n (e.g. 0/8)");
  }
  if (used_i != slash || used_n != text.size() - slash - 1)
    throw ConfigError(option + " '" + text + "': expected i/n (e.g. 0/8)");
  if (count < 1 || index < 0 || index >= count)
    throw ConfigError(option + " '" + text + "': expected i/n with 0 <= i < n");
}

}  // namespace hetrec::gemm_perf::gemm_perf

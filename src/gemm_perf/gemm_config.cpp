#include "gemm_perf/gemm_config.h"

#include <charconv>
#include <map>
#include <vector>

#include "core/error.h"

namespace hetrec::inline gemm_perf {

namespace {

[[noreturn]] void bad(std::string_view where, std::string_view field, const std::string& what) {
  throw ConfigError(std::string(where) + ": GEMM config field '" + std::string(field) + "': " + what);
}

int parse_int(std::string_view text, std::string_view where, std::string_view field) {
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0)
    bad(where, field, "expected a non-negative integer, found '" + std::string(text) + "'");
  return value;
}

// Parses "AxB" or "AxBxC" into `count` integers.
std::vector<int> parse_dims(std::string_view text, std::size_t count, std::string_view where,
                            std::string_view field) {
  std::vector<int> out;
  while (true) {
    const std::size_t x = text.find('x');
    out.push_back(parse_int(text.substr(0, x), where, field));
    if (x == std::string_view::npos) break;
    text.remove_prefix(x + 1);
  }
  if (out.size() != count)
    bad(where, field, "expected " + std::to_string(count) + " dimensions separated by 'x'");
  return out;
}

}  // namespace

std::string_view decomposition_name(GemmDecomposition d) {
  switch (d) {
    case GemmDecomposition::data_parallel:
      return "data_parallel";
    case GemmDecomposition::split_k:
      return "split_k";
    case GemmDecomposition::stream_k:
      return "stream_k";
  }
  return "?";
}

std::string_view raster_name(GemmRaster r) { return r == GemmRaster::along_m ? "along_m" : "along_n"; }

std::string_view reduction_name(GemmReduction r) {
  switch (r) {
    case GemmReduction::workspace_fp32:
      return "workspace_fp32";
    case GemmReduction::workspace_output:
      return "workspace_output";
    case GemmReduction::in_place:
      return "in_place";
  }
  return "?";
}

std::string to_string(const GemmConfig& c) {
  auto dims = [](int a, int b) { return std::to_string(a) + "x" + std::to_string(b); };
  return "tile=" + dims(c.tile_m, c.tile_n) + "x" + std::to_string(c.tile_k) +
         " inst=" + dims(c.inst_m, c.inst_n) + "x" + std::to_string(c.inst_k) +
         " warps=" + dims(c.warps_m, c.warps_n) + " stages=" + std::to_string(c.stages) +
         " cluster=" + dims(c.cluster_m, c.cluster_n) +
         " decomposition=" + std::string(decomposition_name(c.decomposition)) +
         " split=" + std::to_string(c.split_k) + " raster=" + std::string(raster_name(c.raster)) +
         " swizzle=" + std::to_string(c.swizzle) + " xcd_remap=" + (c.xcd_remap ? "1" : "0") +
         (c.reduction != GemmReduction::workspace_fp32 ? " reduction=" + std::string(reduction_name(c.reduction))
                                                       : std::string()) +
         (c.family >= 0 ? " family=" + std::to_string(c.family) : std::string()) +
         (c.family_variant != 0 ? " variant=" + std::to_string(c.family_variant) : std::string());
}

GemmConfig parse_gemm_config(std::string_view text, std::string_view where) {
  std::map<std::string, std::string, std::less<>> fields;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    std::string_view item = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) bad(where, item, "expected key=value");
    if (!fields.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1))).second)
      bad(where, item.substr(0, eq), "given twice");
  }
  auto take = [&](std::string_view key) {
    auto it = fields.find(key);
    if (it == fields.end()) bad(where, key, "missing");
    std::string value = it->second;
    fields.erase(it);
    return value;
  };
  GemmConfig c;
  auto tile = parse_dims(take("tile"), 3, where, "tile");
  c.tile_m = tile[0], c.tile_n = tile[1], c.tile_k = tile[2];
  auto inst = parse_dims(take("inst"), 3, where, "inst");
  c.inst_m = inst[0], c.inst_n = inst[1], c.inst_k = inst[2];
  auto warps = parse_dims(take("warps"), 2, where, "warps");
  c.warps_m = warps[0], c.warps_n = warps[1];
  c.stages = parse_int(take("stages"), where, "stages");
  auto cluster = parse_dims(take("cluster"), 2, where, "cluster");
  c.cluster_m = cluster[0], c.cluster_n = cluster[1];
  const std::string decomposition = take("decomposition");
  bool known = false;
  for (GemmDecomposition d :
       {GemmDecomposition::data_parallel, GemmDecomposition::split_k, GemmDecomposition::stream_k})
    if (decomposition_name(d) == decomposition) c.decomposition = d, known = true;
  if (!known)
    bad(where, "decomposition",
        "unknown '" + decomposition + "', expected data_parallel, split_k or stream_k");
  c.split_k = parse_int(take("split"), where, "split");
  const std::string raster = take("raster");
  if (raster == "along_m")
    c.raster = GemmRaster::along_m;
  else if (raster == "along_n")
    c.raster = GemmRaster::along_n;
  else
    bad(where, "raster", "unknown '" + raster + "', expected along_m or along_n");
  c.swizzle = parse_int(take("swizzle"), where, "swizzle");
  const std::string remap = take("xcd_remap");
  if (remap != "0" && remap != "1") bad(where, "xcd_remap", "expected 0 or 1, found '" + remap + "'");
  c.xcd_remap = remap == "1";
  if (fields.count("reduction")) {
    const std::string reduction = take("reduction");
    known = false;
    for (GemmReduction r : {GemmReduction::workspace_fp32, GemmReduction::workspace_output, GemmReduction::in_place})
      if (reduction_name(r) == reduction) c.reduction = r, known = true;
    if (!known)
      bad(where, "reduction",
          "unknown '" + reduction + "', expected workspace_fp32, workspace_output or in_place");
  }
  if (fields.count("family")) c.family = parse_int(take("family"), where, "family");
  if (fields.count("variant")) c.family_variant = parse_int(take("variant"), where, "variant");
  if (!fields.empty()) bad(where, fields.begin()->first, "unknown field");
  return c;
}

}  // namespace hetrec::gemm_perf::gemm_perf

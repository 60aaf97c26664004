#include "gemm_perf/gemm_selection_cache.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "core/checksum.h"
#include "core/error.h"
#include "core/exclusive_file.h"

namespace hetrec::inline gemm_perf {

namespace {

constexpr std::string_view kHeader = "hetrec-gemm-selection-cache 1";
constexpr std::string_view kValidatorPrefix = "validator ";
constexpr std::string_view kEntryPrefix = "entry ";
constexpr std::string_view kEndPrefix = "end ";
constexpr std::string_view kFieldSeparator = " | ";
constexpr std::string_view kPredictedKey = "predicted_us=";
constexpr std::string_view kVendorKey = " library=";

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string problem_text(const GemmProblem& p) {
  auto flag = [](bool b) { return b ? "1" : "0"; };
  return "m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
         " batch=" + std::to_string(p.batch) + " a=" + std::string(dtype_name(p.a_type)) +
         " b=" + std::string(dtype_name(p.b_type)) + " c=" + std::string(dtype_name(p.c_type)) +
         " acc=" + std::string(dtype_name(p.compute_type)) + " trans_a=" + flag(p.trans_a) +
         " trans_b=" + flag(p.trans_b) + " tf32=" + flag(p.allow_tf32) + " accumulate=" + flag(p.accumulate) +
         " epilogue=" + std::string(epilogue_name(p.epilogue)) +
         " fp8_scaling=" + std::string(fp8_scaling_name(p.fp8_scaling)) +
         (operands_fully_aligned(p)
              ? std::string()
              : " align_a=" + std::to_string(p.a_alignment) + " align_b=" + std::to_string(p.b_alignment));
}

// Thrown inside load() for a damaged line; turned into a warning and an empty cache.
struct Damaged {
  std::string what;
};

std::map<std::string, std::string, std::less<>> split_fields(std::string_view text) {
  std::map<std::string, std::string, std::less<>> out;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view item = text.substr(0, space);
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
    if (item.empty()) continue;
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos) throw Damaged{"field '" + std::string(item) + "' is not key=value"};
    out[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
  }
  return out;
}

int64_t parse_count(const std::string& text, const char* field) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) throw Damaged{std::string("bad ") + field};
  return v;
}

bool parse_flag(const std::string& text, const char* field) {
  if (text != "0" && text != "1") throw Damaged{std::string("bad ") + field};
  return text == "1";
}

GemmProblem parse_problem(std::string_view text, int& variant) {
  auto f = split_fields(text);
  auto take = [&](const char* key) {
    auto it = f.find(key);
    if (it == f.end()) throw Damaged{std::string("missing problem field '") + key + "'"};
    std::string v = it->second;
    f.erase(it);
    return v;
  };
  GemmProblem p;
  try {
    p.m = parse_count(take("m"), "m");
    p.n = parse_count(take("n"), "n");
    p.k = parse_count(take("k"), "k");
    p.batch = parse_count(take("batch"), "batch");
    p.a_type = parse_dtype(take("a"), "a");
    p.b_type = parse_dtype(take("b"), "b");
    p.c_type = parse_dtype(take("c"), "c");
    p.compute_type = parse_dtype(take("acc"), "acc");
    p.trans_a = parse_flag(take("trans_a"), "trans_a");
    p.trans_b = parse_flag(take("trans_b"), "trans_b");
    p.allow_tf32 = parse_flag(take("tf32"), "tf32");
    p.accumulate = parse_flag(take("accumulate"), "accumulate");
    p.epilogue = parse_epilogue(take("epilogue"), "epilogue");
    p.fp8_scaling = parse_fp8_scaling(take("fp8_scaling"), "fp8_scaling");
    variant = f.count("variant") ? static_cast<int>(parse_count(take("variant"), "variant")) : 0;
    // Written only for operands aligned to fewer than kFullOperandAlignment bytes.
    if (f.count("align_a")) p.a_alignment = static_cast<int>(parse_count(take("align_a"), "align_a"));
    if (f.count("align_b")) p.b_alignment = static_cast<int>(parse_count(take("align_b"), "align_b"));
    validate_gemm_problem(p);
  } catch (const ConfigError& e) {
    throw Damaged{e.what()};
  }
  if (!f.empty()) throw Damaged{"unknown problem field '" + f.begin()->first + "'"};
  return p;
}

}  // namespace

GemmCacheValidators make_gemm_cache_validators(const std::string& gpu_name, const std::string& driver_version,
                                               const std::string& library_version,
                                               const GemmModelParams& params) {
  GemmCacheValidators v;
  v.items = {{"gpu", gpu_name},
             {"driver", driver_version},
             {"library", library_version},
             {"model_params", params.arch + ":" + gemm_params_fingerprint(params)}};
  for (const auto& [name, value] : v.items)
    if (value.find_first_of("\r\n") != std::string::npos)
      throw ConfigError("selection-cache validator '" + name + "': value must be one line");
  return v;
}

GemmSelectionCache::GemmSelectionCache(GemmCacheValidators validators) : validators_(std::move(validators)) {}

std::size_t GemmSelectionCache::KeyHash::operator()(const Key& k) const {
  // FNV-1a style mixing of the fields.
  std::size_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(uint64_t(k.m)), mix(uint64_t(k.n)), mix(uint64_t(k.k)), mix(uint64_t(k.batch));
  mix(uint64_t(k.trans_a) | uint64_t(k.trans_b) << 8 | uint64_t(k.a_type) << 16 | uint64_t(k.b_type) << 24 |
      uint64_t(k.c_type) << 32 | uint64_t(k.compute_type) << 40 | uint64_t(k.allow_tf32) << 48 |
      uint64_t(k.accumulate) << 56);
  mix(uint64_t(k.epilogue) | uint64_t(k.fp8_scaling) << 8 | uint64_t(k.a_alignment) << 16 |
      uint64_t(k.b_alignment) << 24);
  mix(uint64_t(uint32_t(k.variant)));
  return h;
}

GemmSelectionCache::Key GemmSelectionCache::key_of(const GemmProblem& p, int variant) {
  return Key{p.m,
             p.n,
             p.k,
             p.batch,
             uint8_t(p.trans_a),
             uint8_t(p.trans_b),
             uint8_t(p.a_type),
             uint8_t(p.b_type),
             uint8_t(p.c_type),
             uint8_t(p.compute_type),
             uint8_t(p.allow_tf32),
             uint8_t(p.accumulate),
             uint8_t(p.epilogue),
             uint8_t(p.fp8_scaling),
             uint8_t(p.a_alignment),
             uint8_t(p.b_alignment),
             variant};
}

std::optional<CachedGemmChoice> GemmSelectionCache::find(const GemmProblem& problem, int variant) const {
  auto it = entries_.find(key_of(problem, variant));
  if (it == entries_.end()) return std::nullopt;
  return it->second.choice;
}

void GemmSelectionCache::insert(const GemmProblem& problem, const CachedGemmChoice& choice, int variant) {
  entries_.insert_or_assign(key_of(problem, variant), Entry{problem, variant, choice});
}

void GemmSelectionCache::save(const std::string& path) const {
  const std::string separator(kFieldSeparator);
  std::string body = std::string(kHeader) + "\n";
  for (const auto& [name, value] : validators_.items)
    body += std::string(kValidatorPrefix) + name + "=" + value + "\n";
  std::vector<std::string> lines;
  for (const auto& [key, entry] : entries_)
    lines.push_back(std::string(kEntryPrefix) + problem_text(entry.problem) +
                    (entry.variant != 0 ? " variant=" + std::to_string(entry.variant) : std::string()) + separator +
                    to_string(entry.choice.config) + separator + std::string(kPredictedKey) +
                    number_text(entry.choice.predicted_us) +
                    (entry.choice.vendor_config.empty() ? std::string()
                                                         : std::string(kVendorKey) + entry.choice.vendor_config) +
                    "\n");
  std::sort(lines.begin(), lines.end());  // deterministic files
  for (const std::string& line : lines) body += line;
  char crc[12];
  std::snprintf(crc, sizeof crc, "%08x", crc32c(body.data(), body.size()));
  body += std::string(kEndPrefix) + "entries=" + std::to_string(lines.size()) + " crc32c=" + crc + "\n";

  try {
    write_file_atomically(path, body);  // core/exclusive_file.h
  } catch (const IoError& e) {
    throw IoError(std::string("GEMM selection cache: ") + e.what());
  }
}

GemmSelectionCache GemmSelectionCache::load(const std::string& path, const GemmCacheValidators& current,
                                            const Logger& log) {
  GemmSelectionCache cache(current);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    log.debug("GEMM selection cache " + path + ": none yet, starting empty");
    return cache;
  }
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::size_t line_no = 1;
  try {
    if (lines.empty() || lines[0] != kHeader)
      throw Damaged{"first line is not '" + std::string(kHeader) + "'"};
    std::string body = lines[0] + "\n";
    GemmCacheValidators found;
    std::size_t i = 1;
    for (; i < lines.size() && lines[i].rfind(kValidatorPrefix, 0) == 0; ++i) {
      line_no = i + 1;
      const std::string item = lines[i].substr(kValidatorPrefix.size());
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos) throw Damaged{"validator line without '='"};
      found.items.emplace_back(item.substr(0, eq), item.substr(eq + 1));
      body += lines[i] + "\n";
    }
    if (found != current) {
      std::string why = "the validators differ";
      for (const auto& [name, value] : current.items) {
        auto it = std::find_if(found.items.begin(), found.items.end(),
                               [&wanted = name](const auto& f) { return f.first == wanted; });
        if (it == found.items.end()) {
          why = "validator '" + name + "' is missing from the file";
          break;
        }
        if (it->second != value) {
          why = "validator '" + name + "' is '" + it->second + "' in the file, '" + value + "' now";
          break;
        }
      }
      log.info("discarding GEMM selection cache " + path + ": " + why);
      return cache;
    }
    std::size_t count = 0;
    bool ended = false;
    for (; i < lines.size(); ++i) {
      line_no = i + 1;
      const std::string& line = lines[i];
      if (line.rfind(kEndPrefix, 0) == 0) {
        auto f = split_fields(std::string_view(line).substr(kEndPrefix.size()));
        char crc[12];
        std::snprintf(crc, sizeof crc, "%08x", crc32c(body.data(), body.size()));
        if (f["entries"] != std::to_string(count)) throw Damaged{"entry count does not match"};
        if (f["crc32c"] != crc) throw Damaged{"checksum does not match"};
        ended = true;
        break;
      }
      if (line.rfind(kEntryPrefix, 0) != 0) throw Damaged{"expected an entry line"};
      const std::string_view rest = std::string_view(line).substr(kEntryPrefix.size());
      const std::size_t sep = kFieldSeparator.size();
      const std::size_t s1 = rest.find(kFieldSeparator);
      const std::size_t s2 = s1 == std::string_view::npos ? s1 : rest.find(kFieldSeparator, s1 + sep);
      if (s2 == std::string_view::npos) throw Damaged{"entry needs problem | config | prediction"};
      int variant = 0;
      const GemmProblem problem = parse_problem(rest.substr(0, s1), variant);
      CachedGemmChoice choice;
      try {
        choice.config =
            parse_gemm_config(rest.substr(s1 + sep, s2 - s1 - sep), path + ":" + std::to_string(line_no));
      } catch (const ConfigError& e) {
        throw Damaged{e.what()};
      }
      std::string_view predicted = rest.substr(s2 + sep);
      if (predicted.rfind(kPredictedKey, 0) != 0) throw Damaged{"missing predicted_us"};
      if (const std::size_t lib = predicted.find(kVendorKey); lib != std::string_view::npos) {
        choice.vendor_config = std::string(predicted.substr(lib + kVendorKey.size()));
        if (choice.vendor_config.empty() || choice.vendor_config.find_first_of(" |") != std::string::npos)
          throw Damaged{"bad library configuration key"};
        predicted = predicted.substr(0, lib);
      }
      try {
        std::size_t used = 0;
        const std::string number(predicted.substr(kPredictedKey.size()));
        choice.predicted_us = std::stod(number, &used);
        if (used != number.size()) throw Damaged{"bad predicted_us"};
      } catch (const std::exception&) {
        throw Damaged{"bad predicted_us"};
      }
      cache.insert(problem, choice, variant);
      body += line + "\n";
      ++count;
    }
    if (!ended) throw Damaged{"truncated: no end line"};
  } catch (const Damaged& d) {
    log.warn("discarding GEMM selection cache " + path + ":" + std::to_string(line_no) + ": " + d.what);
    return GemmSelectionCache(current);
  }
  return cache;
}

CachedGemmChoice select_cached(const GemmSelector& selector, GemmSelectionCache& cache,
                               const GemmProblem& problem) {
  if (auto hit = cache.find(problem)) return *hit;
  const RankedConfig best = selector.select(problem);
  CachedGemmChoice choice{best.config, best.estimate.time_us, {}};
  cache.insert(problem, choice);
  return choice;
}

}  // namespace hetrec::gemm_perf::gemm_perf

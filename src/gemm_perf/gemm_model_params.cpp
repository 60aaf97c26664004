#include "gemm_perf/gemm_model_params.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/checksum.h"
#include "core/error.h"
#include "core/exclusive_file.h"
#include "hw/toml_reader.h"

namespace hetrec::inline gemm_perf {

namespace {

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  // TOML needs a '.' or exponent to read a float back as a float.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (c == '\n')
      out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else
      out += c;
  }
  return out + "\"";
}

std::string serialize(const GemmModelParams& p) {
  std::string s;
  s += "# GEMM model parameters (docs/perf_model.md explains each one).\n";
  s += "arch = " + toml_string(p.arch) + "\n";
  s += std::string("calibrated = ") + (p.calibrated ? "true" : "false") + "\n";
  s += "note = " + toml_string(p.note) + "\n";
  s += "legacy_instruction_efficiency = " + number_text(p.legacy_instruction_efficiency) + "\n";
  s += "shared_memory_efficiency = " + number_text(p.shared_memory_efficiency) + "\n";
  s += "l2_bytes_per_clock_per_unit = " + number_text(p.l2_bytes_per_clock_per_unit) + "\n";
  s += "tma_l2_rate_factor = " + number_text(p.tma_l2_rate_factor) + "\n";
  s += "simt_l2_rate_factor = " + number_text(p.simt_l2_rate_factor) + "\n";
  s += "l2_usable_fraction = " + number_text(p.l2_usable_fraction) + "\n";
  s += "llc_usable_fraction = " + number_text(p.llc_usable_fraction) + "\n";
  s += "hbm_efficiency = " + number_text(p.hbm_efficiency) + "\n";
  s += "llc_efficiency = " + number_text(p.llc_efficiency) + "\n";
  s += "loaded_latency_ns = " + number_text(p.loaded_latency_ns) + "\n";
  s += "tile_overhead_exposure = " + number_text(p.tile_overhead_exposure) + "\n";
  s += "launch_overhead_us = " + number_text(p.launch_overhead_us) + "\n";
  s += "async_kernel_setup_us = " + number_text(p.async_kernel_setup_us) + "\n";
  s += "\n[matrix_efficiency]\n";
  for (MatrixPrecision prec : kAllMatrixPrecisions)
    s += std::string(precision_name(prec)) + " = " + number_text(p.matrix_efficiency.of(prec)) + "\n";
  if (!p.family_efficiency.empty()) {
    s += "\n# Share of the modelled main-loop speed per library kernel family (its algorithm id, and\n# \".<custom option>\" for a variant of it).\n";
    s += "[family_efficiency]\n";
    for (const auto& [key, value] : p.family_efficiency) s += toml_string(key) + " = " + number_text(value) + "\n";
  }
  return s;
}

double fraction(TomlTableReader& r, std::string_view key) {
  const double v = r.number(key);
  if (!(v > 0.0 && v <= 1.0)) r.fail(key, "expected a fraction in (0, 1], found " + number_text(v));
  return v;
}

double positive(TomlTableReader& r, std::string_view key) {
  const double v = r.number(key);
  if (!(v > 0.0) || !std::isfinite(v)) r.fail(key, "expected a positive number, found " + number_text(v));
  return v;
}

}  // namespace

double l2_rate_factor(TomlTableReader& r, std::string_view key, double absent) {
  const std::optional<double> v = r.optional_number(key);
  if (!v) return absent;
  if (!(*v >= 1.0 / kMaxL2RateFactor && *v <= kMaxL2RateFactor))
    r.fail(key, "expected a factor in [" + number_text(1.0 / kMaxL2RateFactor) + ", " + number_text(kMaxL2RateFactor) +
                    "], found " + number_text(*v));
  return *v;
}

std::string family_key(int family, int variant) {
  return std::to_string(family) + (variant != 0 ? "." + std::to_string(variant) : std::string());
}

double GemmModelParams::family_factor(int family, int variant) const {
  if (family < 0) return 1.0;
  if (variant != 0) {
    const auto it = family_efficiency.find(family_key(family, variant));
    if (it != family_efficiency.end()) return it->second;
  }
  const auto it = family_efficiency.find(family_key(family));
  return it == family_efficiency.end() ? 1.0 : it->second;
}

GemmModelParams load_gemm_params(const std::string& path) {
  const toml::table doc = parse_toml_file(path);
  TomlTableReader r(doc, path, "");
  GemmModelParams p;
  p.arch = r.string("arch");
  p.calibrated = r.boolean("calibrated");
  p.note = r.string("note");
  p.legacy_instruction_efficiency = fraction(r, "legacy_instruction_efficiency");
  p.shared_memory_efficiency = fraction(r, "shared_memory_efficiency");
  p.l2_bytes_per_clock_per_unit = positive(r, "l2_bytes_per_clock_per_unit");
  // Files written before the per-load-path L2 factors hold none: the rate is then the same.
  p.tma_l2_rate_factor = l2_rate_factor(r, "tma_l2_rate_factor", kDefaultTmaL2RateFactor);
  p.simt_l2_rate_factor = l2_rate_factor(r, "simt_l2_rate_factor", kDefaultSimtL2RateFactor);
  p.l2_usable_fraction = fraction(r, "l2_usable_fraction");
  p.llc_usable_fraction = fraction(r, "llc_usable_fraction");
  p.hbm_efficiency = fraction(r, "hbm_efficiency");
  p.llc_efficiency = fraction(r, "llc_efficiency");
  p.loaded_latency_ns = positive(r, "loaded_latency_ns");
  const double exposure = r.number("tile_overhead_exposure");
  if (!(exposure >= 0.0 && exposure <= 1.0))
    r.fail("tile_overhead_exposure", "expected a fraction in [0, 1], found " + number_text(exposure));
  p.tile_overhead_exposure = exposure;
  const double launch = r.number("launch_overhead_us");
  if (!(launch >= 0.0) || !std::isfinite(launch))
    r.fail("launch_overhead_us", "expected a non-negative number, found " + number_text(launch));
  p.launch_overhead_us = launch;
  const double setup = r.number("async_kernel_setup_us");
  if (!(setup >= 0.0) || !std::isfinite(setup))
    r.fail("async_kernel_setup_us", "expected a non-negative number, found " + number_text(setup));
  p.async_kernel_setup_us = setup;
  TomlTableReader eff = r.table("matrix_efficiency");
  p.matrix_efficiency.fp32 = fraction(eff, "fp32");
  p.matrix_efficiency.tf32 = fraction(eff, "tf32");
  p.matrix_efficiency.fp16 = fraction(eff, "fp16");
  p.matrix_efficiency.bf16 = fraction(eff, "bf16");
  p.matrix_efficiency.fp8 = fraction(eff, "fp8");
  eff.finish();
  if (std::optional<TomlTableReader> fam = r.optional_table("family_efficiency")) {
    for (const std::string& key : fam->keys()) {
      const double v = fam->number(key);
      if (!(v > 0.0 && v <= 4.0)) fam->fail(key, "expected a factor in (0, 4], found " + number_text(v));
      p.family_efficiency[key] = v;
    }
    fam->finish();
  }
  r.finish();
  return p;
}

void save_gemm_params(const GemmModelParams& params, const std::string& path) {
  write_file_atomically(path, serialize(params));
}

GemmModelParams load_gemm_params_for(const Hardware& hw, const std::string& params_dir) {
  const std::filesystem::path file = std::filesystem::path(params_dir) / (hw.arch + ".toml");
  if (!std::filesystem::is_regular_file(file)) {
    GemmModelParams p;
    p.arch = hw.arch;
    p.note = "generic starting values (no " + file.string() + ")";
    return p;
  }
  GemmModelParams p = load_gemm_params(file.string());
  if (p.arch != hw.arch)
    throw ConfigError(file.string() + ": key 'arch': '" + p.arch + "' does not match hardware '" + hw.name +
                      "' (arch " + hw.arch + ")");
  return p;
}

std::string gemm_params_fingerprint(const GemmModelParams& params) {
  const std::string text = serialize(params);
  char buf[12];
  std::snprintf(buf, sizeof buf, "%08x", crc32c(text.data(), text.size()));
  return buf;
}

}  // namespace hetrec::gemm_perf::gemm_perf

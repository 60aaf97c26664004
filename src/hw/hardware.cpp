#include "hw/hardware.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/error.h"
#include "core/install_paths.h"
#include "hw/toml_reader.h"

namespace hetrec::inline hw {

namespace {

// The only layout of hardware files this loader understands.
constexpr int64_t kHardwareSchemaVersion = 1;
// Relative tolerance when checking that per-XCD L2 times the XCD count equals the total.
constexpr double kL2ConsistencyTolerance = 1e-6;

class HardwareReader {
 public:
  explicit HardwareReader(Hardware& hw) : hw_(hw) {}

  double positive(TomlTableReader& r, std::string_view key) {
    SourcedNumber n = r.sourced(key);
    if (!(n.value > 0.0) || !std::isfinite(n.value))
      r.fail(key, "expected a positive number, found " + std::to_string(n.value));
    hw_.sources[r.key_path(key)] = n.source;
    return n.value;
  }

  int positive_int(TomlTableReader& r, std::string_view key) {
    SourcedNumber n = r.sourced_integer(key);
    if (!(n.value >= 1.0 && n.value <= static_cast<double>(std::numeric_limits<int>::max())))
      r.fail(key, "expected a positive integer of at most " + std::to_string(std::numeric_limits<int>::max()) +
                      ", found " + std::to_string(n.value));
    hw_.sources[r.key_path(key)] = n.source;
    return static_cast<int>(n.value);
  }

  double optional_positive(TomlTableReader& r, std::string_view key) {
    if (!r.has(key)) return 0.0;
    return positive(r, key);
  }

  std::optional<double> optional_measured(TomlTableReader& r, std::string_view key) {
    if (!r.has(key)) return std::nullopt;
    return positive(r, key);
  }

 private:
  Hardware& hw_;
};

std::optional<IssueScope> parse_issue_scope(std::string_view name) {
  if (name == "warp") return IssueScope::warp;
  if (name == "warpgroup") return IssueScope::warpgroup;
  if (name == "cta") return IssueScope::cta;
  return std::nullopt;
}

int positive_plain_int(TomlTableReader& r, std::string_view key) {
  const int64_t v = r.integer(key);
  if (v < 1 || v > std::numeric_limits<int>::max())
    r.fail(key, "expected a positive integer of at most " + std::to_string(std::numeric_limits<int>::max()) +
                    ", found " + std::to_string(v));
  return static_cast<int>(v);
}

MatrixInstruction read_instruction(TomlTableReader& r) {
  MatrixInstruction mi;
  const std::string precision = r.string("precision");
  const auto p = parse_precision(precision);
  if (!p)
    r.fail("precision", "unknown precision '" + precision + "', expected fp32, tf32, fp16, bf16 or fp8");
  mi.precision = *p;
  mi.name = r.string("name");
  const std::string scope = r.string("scope");
  const auto s = parse_issue_scope(scope);
  if (!s) r.fail("scope", "unknown issue scope '" + scope + "', expected warp, warpgroup or cta");
  mi.scope = *s;
  mi.m = positive_plain_int(r, "m");
  mi.k = positive_plain_int(r, "k");
  if (r.has("n")) {
    if (r.has("n_min") || r.has("n_max") || r.has("n_step"))
      r.fail("n", "give either a fixed n or the range n_min/n_max/n_step, not both");
    mi.n_min = mi.n_max = mi.n_step = positive_plain_int(r, "n");
  } else {
    mi.n_min = positive_plain_int(r, "n_min");
    mi.n_max = positive_plain_int(r, "n_max");
    mi.n_step = positive_plain_int(r, "n_step");
    if (mi.n_max < mi.n_min) r.fail("n_max", "must not be smaller than n_min");
    if ((mi.n_max - mi.n_min) % mi.n_step != 0)
      r.fail("n_step", "n_max - n_min must be a multiple of n_step");
  }
  mi.ctas = r.has("ctas") ? positive_plain_int(r, "ctas") : 1;
  if (mi.ctas > 2) r.fail("ctas", "expected 1 or 2 (a CTA pair)");
  if (mi.ctas == 2 && mi.scope != IssueScope::cta)
    r.fail("ctas", "only cta-scope instructions can span a CTA pair");
  mi.k_major_only = r.optional_boolean("k_major_only").value_or(false);
  mi.source = r.string("source");
  if (mi.source.empty()) r.fail("source", "must name where the instruction shape comes from");
  r.finish();
  return mi;
}

}  // namespace

std::string_view vendor_name(Vendor v) { return v == Vendor::nvidia ? "nvidia" : "amd"; }

std::string_view precision_name(MatrixPrecision p) {
  switch (p) {
    case MatrixPrecision::fp32:
      return "fp32";
    case MatrixPrecision::tf32:
      return "tf32";
    case MatrixPrecision::fp16:
      return "fp16";
    case MatrixPrecision::bf16:
      return "bf16";
    case MatrixPrecision::fp8:
      return "fp8";
  }
  return "?";
}

std::optional<MatrixPrecision> parse_precision(std::string_view name) {
  for (MatrixPrecision p : kAllMatrixPrecisions)
    if (precision_name(p) == name) return p;
  return std::nullopt;
}

double precision_operand_bytes(MatrixPrecision p) {
  switch (p) {
    case MatrixPrecision::fp32:
    case MatrixPrecision::tf32:
      return 4.0;
    case MatrixPrecision::fp16:
    case MatrixPrecision::bf16:
      return 2.0;
    case MatrixPrecision::fp8:
      return 1.0;
  }
  return 0.0;
}

std::string_view issue_scope_name(IssueScope s) {
  switch (s) {
    case IssueScope::warp:
      return "warp";
    case IssueScope::warpgroup:
      return "warpgroup";
    case IssueScope::cta:
      return "cta";
  }
  return "?";
}

double PrecisionValues::of(MatrixPrecision p) const {
  switch (p) {
    case MatrixPrecision::fp32:
      return fp32;
    case MatrixPrecision::tf32:
      return tf32;
    case MatrixPrecision::fp16:
      return fp16;
    case MatrixPrecision::bf16:
      return bf16;
    case MatrixPrecision::fp8:
      return fp8;
  }
  return 0.0;
}

double Hardware::matrix_clock_share(MatrixPrecision p) const {
  const double mhz = matrix_clock_mhz.of(p);
  return mhz > 0.0 ? mhz / clock_mhz : 1.0;
}

double Hardware::dense_tflops_for(MatrixPrecision p) const { return dense_tflops.of(p); }

int Hardware::units_for_clusters(int cluster_size, int ctas_per_unit) const {
  if (cluster_size < 2) return compute_units;
  const std::map<int, int>& table = ctas_per_unit >= 2 ? cluster_units_two_ctas : cluster_units_one_cta;
  const auto it = table.find(cluster_size);
  return it == table.end() ? compute_units : it->second;
}

Hardware load_hardware(const std::string& path) {
  const toml::table doc = parse_toml_file(path);
  TomlTableReader root(doc, path, "");
  Hardware hw;
  hw.path = path;
  HardwareReader read(hw);

  const int64_t schema = root.integer("schema_version");
  if (schema != kHardwareSchemaVersion)
    root.fail("schema_version",
              "expected " + std::to_string(kHardwareSchemaVersion) + ", found " + std::to_string(schema));
  hw.name = root.string("name");
  const std::string stem = std::filesystem::path(path).stem().string();
  if (hw.name != stem)
    root.fail("name", "'" + hw.name + "' must equal the file name without extension ('" + stem + "')");
  hw.display_name = root.string("display_name");
  if (root.has("device_names")) {
    hw.device_names = root.string_array("device_names");
    for (const std::string& n : hw.device_names)
      if (n.empty()) root.fail("device_names", "names must not be empty");
  }
  const std::string vendor = root.string("vendor");
  if (vendor == "nvidia")
    hw.vendor = Vendor::nvidia;
  else if (vendor == "amd")
    hw.vendor = Vendor::amd;
  else
    root.fail("vendor", "unknown vendor '" + vendor + "', expected nvidia or amd");
  hw.arch = root.string("arch");
  if (hw.arch.empty()) root.fail("arch", "must not be empty");

  {
    TomlTableReader c = root.table("compute");
    hw.compute_units = read.positive_int(c, "units");
    hw.xcds = read.positive_int(c, "xcds");
    if (hw.compute_units % hw.xcds != 0)
      c.fail("xcds", "units (" + std::to_string(hw.compute_units) + ") must divide evenly over " +
                         std::to_string(hw.xcds) + " XCDs");
    hw.clock_mhz = read.positive(c, "clock_mhz");
    hw.warp_size = read.positive_int(c, "warp_size");
    if (hw.warp_size != 32 && hw.warp_size != 64)
      c.fail("warp_size", "expected 32 or 64, found " + std::to_string(hw.warp_size));
    hw.max_threads_per_unit = read.positive_int(c, "max_threads_per_unit");
    hw.max_threads_per_block = read.positive_int(c, "max_threads_per_block");
    hw.max_cluster_size = read.positive_int(c, "max_cluster_size");
    c.finish();
  }
  {
    TomlTableReader d = root.table("dense_tflops");
    hw.dense_tflops.fp32 = read.positive(d, "fp32");
    hw.dense_tflops.tf32 = read.optional_positive(d, "tf32");
    hw.dense_tflops.fp16 = read.positive(d, "fp16");
    hw.dense_tflops.bf16 = read.positive(d, "bf16");
    hw.dense_tflops.fp8 = read.optional_positive(d, "fp8");
    d.finish();
  }
  if (std::optional<TomlTableReader> mc = root.optional_table("matrix_clock_mhz")) {
    const std::pair<const char*, double PrecisionValues::*> keys[] = {{"fp32", &PrecisionValues::fp32},
                                                                      {"tf32", &PrecisionValues::tf32},
                                                                      {"fp16", &PrecisionValues::fp16},
                                                                      {"bf16", &PrecisionValues::bf16},
                                                                      {"fp8", &PrecisionValues::fp8}};
    for (const auto& [key, field] : keys) {
      const double mhz = read.optional_positive(*mc, key);
      if (mhz > hw.clock_mhz)
        mc->fail(key, "a clock under load of " + std::to_string(mhz) + " MHz is above compute.clock_mhz (" +
                          std::to_string(hw.clock_mhz) + ")");
      hw.matrix_clock_mhz.*field = mhz;
    }
    mc->finish();
  }
  if (std::optional<TomlTableReader> cu = root.optional_table("cluster_units")) {
    if (hw.max_cluster_size < 2)
      root.fail("cluster_units", "given although compute.max_cluster_size allows no clusters");
    const std::pair<const char*, std::map<int, int> Hardware::*> tables[] = {
        {"one_cta_per_unit", &Hardware::cluster_units_one_cta},
        {"two_ctas_per_unit", &Hardware::cluster_units_two_ctas}};
    for (const auto& [name, field] : tables) {
      std::optional<TomlTableReader> t = cu->optional_table(name);
      if (!t) continue;
      for (const std::string& key : t->keys()) {
        int size = 0;
        const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), size);
        if (ec != std::errc() || end != key.data() + key.size() || size < 2 || size > hw.max_cluster_size ||
            (size & (size - 1)) != 0)
          t->fail(key, "expected a cluster size: a power of two from 2 to compute.max_cluster_size (" +
                           std::to_string(hw.max_cluster_size) + ")");
        const int units = read.positive_int(*t, key);
        if (units > hw.compute_units || units < size)
          t->fail(key, "expected between the cluster size and compute.units (" + std::to_string(hw.compute_units) +
                           "), found " + std::to_string(units));
        (hw.*field)[size] = units;
      }
      t->finish();
    }
    cu->finish();
  }
  {
    TomlTableReader m = root.table("memory");
    hw.shared_kb_per_unit = read.positive(m, "shared_kb_per_unit");
    hw.max_shared_kb_per_block = read.positive(m, "max_shared_kb_per_block");
    if (hw.max_shared_kb_per_block > hw.shared_kb_per_unit)
      m.fail("max_shared_kb_per_block", "must not exceed shared_kb_per_unit");
    hw.shared_bytes_per_clock = read.positive(m, "shared_bytes_per_clock");
    hw.register_file_kb_per_unit = read.positive(m, "register_file_kb_per_unit");
    hw.tensor_memory_kb_per_unit = read.optional_positive(m, "tensor_memory_kb_per_unit");
    hw.l2_mb = read.positive(m, "l2_mb");
    if (m.has("l2_mb_per_xcd")) {
      const double per_xcd = read.positive(m, "l2_mb_per_xcd");
      if (std::abs(per_xcd * hw.xcds - hw.l2_mb) > kL2ConsistencyTolerance * hw.l2_mb)
        m.fail("l2_mb_per_xcd", "times compute.xcds (" + std::to_string(hw.xcds) + ") must equal l2_mb (" +
                                    std::to_string(hw.l2_mb) + ")");
    } else if (hw.xcds > 1) {
      m.fail("l2_mb_per_xcd", "missing (required when compute.xcds > 1)");
    }
    hw.llc_mb = read.optional_positive(m, "llc_mb");
    hw.llc_tbs = read.optional_positive(m, "llc_tbs");
    if (hw.llc_tbs > 0.0 && hw.llc_mb == 0.0) m.fail("llc_tbs", "given without llc_mb");
    hw.hbm_gb = read.positive(m, "hbm_gb");
    hw.hbm_tbs = read.positive(m, "hbm_tbs");
    m.finish();
  }
  {
    TomlTableReader l = root.table("links");
    hw.host_pcie_gen = read.positive_int(l, "host_pcie_gen");
    hw.host_gbs_per_direction = read.positive(l, "host_gbs_per_direction");
    hw.peer_link = l.string("peer_link");
    hw.peer_links = read.positive_int(l, "peer_links");
    hw.peer_gbs_per_direction = read.positive(l, "peer_gbs_per_direction");
    l.finish();
  }
  for (TomlTableReader& r : root.array_of_tables("matrix_instructions")) {
    MatrixInstruction mi = read_instruction(r);
    if (hw.dense_tflops_for(mi.precision) <= 0.0)
      r.fail("precision", "no dense_tflops." + std::string(precision_name(mi.precision)) +
                              " rate is given for this instruction's precision");
    if (mi.ctas > 1 && hw.max_cluster_size < mi.ctas)
      r.fail("ctas", "needs clusters of " + std::to_string(mi.ctas) +
                         " CTAs but compute.max_cluster_size is " + std::to_string(hw.max_cluster_size));
    hw.matrix_instructions.push_back(std::move(mi));
  }
  for (MatrixPrecision p : kAllMatrixPrecisions) {
    if (hw.dense_tflops_for(p) <= 0.0) continue;
    const bool has_instruction = std::any_of(hw.matrix_instructions.begin(), hw.matrix_instructions.end(),
                                             [p](const MatrixInstruction& mi) { return mi.precision == p; });
    if (!has_instruction)
      root.fail("matrix_instructions", "no instruction of precision " + std::string(precision_name(p)) +
                                           " although dense_tflops gives its rate");
  }
  if (auto meas = root.optional_table("measured")) {
    MeasuredFacts facts;
    facts.date = meas->string("date");
    if (facts.date.empty()) meas->fail("date", "must give the date of the measurement");
    facts.copy_tbs = read.optional_measured(*meas, "copy_tbs");
    facts.bf16_gemm_tflops_low = read.optional_measured(*meas, "bf16_gemm_tflops_low");
    facts.bf16_gemm_tflops_high = read.optional_measured(*meas, "bf16_gemm_tflops_high");
    facts.l2_mb_reported = read.optional_measured(*meas, "l2_mb_reported");
    if (meas->has("host_gather")) {
      for (TomlTableReader& r : meas->array_of_tables("host_gather")) {
        HostGatherPoint point;
        point.span_gb = r.number("span_gb");
        point.distinct_gbs = r.number("distinct_gbs");
        point.row_bytes = r.number("row_bytes");
        point.source = r.string("source");
        if (!(point.span_gb > 0.0)) r.fail("span_gb", "must be > 0");
        if (!(point.distinct_gbs > 0.0)) r.fail("distinct_gbs", "must be > 0");
        if (!(point.row_bytes > 0.0)) r.fail("row_bytes", "must be > 0 (the bytes of the rows measured)");
        if (!facts.host_gather.empty() && point.row_bytes != facts.host_gather.front().row_bytes)
          r.fail("row_bytes", "every point of the curve measures rows of one size, the first point's " +
                                  std::to_string(facts.host_gather.front().row_bytes));
        if (point.source.empty()) r.fail("source", "must name the measurement");
        if (!facts.host_gather.empty() && point.span_gb <= facts.host_gather.back().span_gb)
          r.fail("span_gb", "points must come in ascending span");
        r.finish();
        facts.host_gather.push_back(std::move(point));
      }
    }
    if (facts.bf16_gemm_tflops_low.has_value() != facts.bf16_gemm_tflops_high.has_value())
      meas->fail("bf16_gemm_tflops_low", "give both ends of the range or neither");
    if (facts.bf16_gemm_tflops_low && *facts.bf16_gemm_tflops_low > *facts.bf16_gemm_tflops_high)
      meas->fail("bf16_gemm_tflops_low", "must not exceed bf16_gemm_tflops_high");
    meas->finish();
    hw.measured = std::move(facts);
  }
  root.finish();
  return hw;
}

std::optional<double> measured_host_gather_gbs(const Hardware& hw, double span_gb) {
  if (!hw.measured || hw.measured->host_gather.empty()) return std::nullopt;
  const std::vector<HostGatherPoint>& c = hw.measured->host_gather;
  if (span_gb <= c.front().span_gb) return c.front().distinct_gbs;
  if (span_gb >= c.back().span_gb) return c.back().distinct_gbs;
  std::size_t i = 1;
  while (c[i].span_gb < span_gb) ++i;
  const double t = std::log(span_gb / c[i - 1].span_gb) / std::log(c[i].span_gb / c[i - 1].span_gb);
  return c[i - 1].distinct_gbs + t * (c[i].distinct_gbs - c[i - 1].distinct_gbs);
}

std::optional<double> measured_host_gather_gbs(const Hardware& hw, double span_gb, double row_bytes) {
  const std::optional<double> measured = measured_host_gather_gbs(hw, span_gb);
  if (!measured) return std::nullopt;
  const std::vector<HostGatherPoint>& c = hw.measured->host_gather;
  // Rows per second at this span, from the points' own row size (one size per curve).
  const double rows_per_s = *measured * 1e9 / c.front().row_bytes;
  double fastest = 0.0;
  for (const HostGatherPoint& p : c) fastest = std::max(fastest, p.distinct_gbs);
  return std::min(fastest, rows_per_s * row_bytes / 1e9);
}

std::vector<std::string> list_hardware(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec)
    throw IoError(dir + ": cannot list hardware directory: " + ec.message() +
                  " (set HETREC_HW_DIR or --hw-dir to a folder of hardware descriptions)");
  std::vector<std::string> names;
  for (const auto& entry : it) {
    if (entry.is_regular_file() && entry.path().extension() == ".toml")
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Hardware load_hardware_by_name(std::string_view name, const std::string& search_dir) {
  const std::filesystem::path file = std::filesystem::path(search_dir) / (std::string(name) + ".toml");
  if (!std::filesystem::is_regular_file(file)) {
    std::string known;
    for (const std::string& n : list_hardware(search_dir)) known += (known.empty() ? "" : ", ") + n;
    throw ConfigError("hardware '" + std::string(name) + "': no file " + file.string() +
                      "; available: " + (known.empty() ? "(none)" : known));
  }
  return load_hardware(file.string());
}

std::string default_hardware_dir() {
  if (const char* env = std::getenv("HETREC_HW_DIR")) return env;
  return (std::filesystem::path(data_dir()) / "hw").string();
}

bool describes_device(const Hardware& hw, std::string_view device_name) {
  if (device_name.empty()) return false;
  if (hw.display_name == device_name) return true;
  return std::find(hw.device_names.begin(), hw.device_names.end(), device_name) != hw.device_names.end();
}

Hardware hardware_for_device(std::string_view device_name, const std::string& dir, std::string_view key) {
  std::vector<Hardware> matches;
  for (const std::string& name : list_hardware(dir)) {
    Hardware hw = load_hardware((std::filesystem::path(dir) / (name + ".toml")).string());
    if (describes_device(hw, device_name)) matches.push_back(std::move(hw));
  }
  if (matches.size() == 1) return std::move(matches.front());
  std::string names;
  for (const Hardware& hw : matches) names += (names.empty() ? "" : ", ") + hw.name;
  throw ConfigError(std::string(key) + ": the GPU '" + std::string(device_name) + "' matches " +
                    (matches.empty() ? "no hardware description in " + dir : "several descriptions (" + names + ")") +
                    "; set " + std::string(key) + " to a description's name (hetrec hw list)");
}

}  // namespace hetrec::hw::hw

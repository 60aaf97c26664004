#pragma once
// A GPU described as data: the facts the performance models need, each read from a TOML
// file under hw/ where every number carries the document it comes from. The value type is
// passed to whoever needs it; nothing here is global.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hetrec::inline hw {

enum class Vendor { nvidia, amd };

// The dense-rate classes of a GPU's datasheet: which pipe a GEMM runs on.
enum class MatrixPrecision { fp32, tf32, fp16, bf16, fp8 };
inline constexpr MatrixPrecision kAllMatrixPrecisions[] = {MatrixPrecision::fp32, MatrixPrecision::tf32,
                                                           MatrixPrecision::fp16, MatrixPrecision::bf16,
                                                           MatrixPrecision::fp8};

std::string_view vendor_name(Vendor v);
std::string_view precision_name(MatrixPrecision p);
// Parses "fp32", "tf32", "fp16", "bf16", "fp8"; nullopt when unknown.
std::optional<MatrixPrecision> parse_precision(std::string_view name);
// Bytes of one operand element of this precision (tf32 operands are stored as fp32).
double precision_operand_bytes(MatrixPrecision p);

// Who issues one matrix instruction: a warp/wavefront (MFMA, SIMT FMA), a warpgroup of
// four warps (Hopper wgmma) or the whole CTA (Blackwell tcgen05, issued by one thread).
enum class IssueScope { warp, warpgroup, cta };
std::string_view issue_scope_name(IssueScope s);

// One matrix-multiply instruction family: m x n x k per issue, where n may range over
// [n_min, n_max] in steps of n_step (wgmma/tcgen05) or be fixed (MFMA: n_min == n_max).
// `ctas` > 1 marks instructions that span a CTA pair (tcgen05 cta_group::2): m counts the
// rows of the pair.
struct MatrixInstruction {
  MatrixPrecision precision = MatrixPrecision::bf16;
  std::string name;
  IssueScope scope = IssueScope::warp;
  int m = 0;
  int n_min = 0;
  int n_max = 0;
  int n_step = 0;
  int k = 0;
  int ctas = 1;
  bool k_major_only = false;  // operands must be K-contiguous in shared memory
  std::string source;

  bool allows_n(int n) const { return n >= n_min && n <= n_max && (n - n_min) % n_step == 0; }
};

// Facts measured on a real device (optional), with the date of the measurement.
// One point of a measured curve: the rate at which the GPU gathers distinct embedding
// rows from a table in mapped page-locked host memory spanning `span_gb` (bench/
// host_gather_bench.cpp). The rate falls as the span outgrows what the address
// translation caches cover.
struct HostGatherPoint {
  double span_gb = 0.0;
  double distinct_gbs = 0.0;
  double row_bytes = 0.0;  // of the rows measured
  std::string source;
};

struct MeasuredFacts {
  std::string date;
  std::vector<HostGatherPoint> host_gather;     // ascending span; empty: not measured
  std::optional<double> copy_tbs;               // device-to-device copy, read + write
  std::optional<double> bf16_gemm_tflops_low;   // large bf16 GEMM, lower end of the range
  std::optional<double> bf16_gemm_tflops_high;  // upper end
  std::optional<double> l2_mb_reported;         // L2 size the driver reports
};

// One number per matrix precision (0 = none given).
struct PrecisionValues {
  double fp32 = 0.0;
  double tf32 = 0.0;
  double fp16 = 0.0;
  double bf16 = 0.0;
  double fp8 = 0.0;
  double of(MatrixPrecision p) const;
};

// Dense (non-sparse) TFLOP/s by precision; 0 = not supported natively. fp32 is the
// non-matrix FP32 FMA pipes (AMD: also the FP32 MFMA rate).
using DenseRates = PrecisionValues;

// Engine clock (MHz) measured under a sustained dense GEMM, by the pipe's precision; 0 = not
// published (the GPU is then modelled at `clock_mhz`). Power-limited parts run dense matrix
// work well below the boost clock their datasheet rates assume.
using MatrixClocks = PrecisionValues;

struct Hardware {
  std::string name;          // file stem, e.g. "h200_sxm"
  std::string display_name;  // "NVIDIA H200 SXM"
  // The names the GPU runtime reports for this part (cudaDeviceProp::name,
  // hipDeviceProp_t::name), e.g. "NVIDIA H100 80GB HBM3" for the H100 SXM5; optional.
  std::vector<std::string> device_names;
  Vendor vendor = Vendor::nvidia;
  std::string arch;  // "sm_90", "sm_100", "gfx942", "gfx950"

  // compute
  int compute_units = 0;   // SMs or CUs
  int xcds = 1;            // accelerator dies with their own L2 (AMD XCDs); 1 = one L2
  double clock_mhz = 0.0;  // clock at which the dense matrix rates are quoted
  int warp_size = 0;
  int max_threads_per_unit = 0;
  int max_threads_per_block = 0;
  int max_cluster_size = 1;  // thread-block cluster limit; 1 = no clusters
  // [cluster_units], optional: the SMs a grid of clusters of a size occupies at once, at one
  // ([cluster_units.one_cta_per_unit]) and at two resident CTAs per SM; a cluster's CTAs
  // share one GPC, whose SMs need not divide by the cluster size. Keyed by cluster size.
  std::map<int, int> cluster_units_one_cta;
  std::map<int, int> cluster_units_two_ctas;
  DenseRates dense_tflops;
  MatrixClocks matrix_clock_mhz;  // [matrix_clock_mhz], optional
  std::vector<MatrixInstruction> matrix_instructions;

  // memory
  double shared_kb_per_unit = 0.0;  // shared memory / LDS per SM or CU
  double max_shared_kb_per_block = 0.0;
  double shared_bytes_per_clock = 0.0;  // shared memory / LDS bandwidth per SM or CU
  double register_file_kb_per_unit = 0.0;
  double tensor_memory_kb_per_unit = 0.0;  // Blackwell TMEM (accumulators); 0 = none
  double l2_mb = 0.0;                      // total over all XCDs
  double llc_mb = 0.0;                     // memory-side last-level cache (Infinity Cache); 0 = none
  double llc_tbs = 0.0;                    // its peak bandwidth; 0 = not published
  double hbm_gb = 0.0;
  double hbm_tbs = 0.0;

  // links
  int host_pcie_gen = 0;
  double host_gbs_per_direction = 0.0;
  std::string peer_link;  // "nvlink4", "nvlink5", "infinity_fabric"
  int peer_links = 0;
  double peer_gbs_per_direction = 0.0;  // aggregate over all peer links

  std::optional<MeasuredFacts> measured;

  // Where every number came from: dotted key ("compute.units") -> source note.
  std::map<std::string, std::string> sources;
  std::string path;  // the file it was loaded from

  int units_per_xcd() const { return compute_units / xcds; }
  // The units a grid of `cluster_size`-CTA clusters keeps busy at `ctas_per_unit` resident
  // CTAs per unit ([cluster_units]; two or more CTAs read the two-CTA figure). All units
  // where the file gives no figure for the size.
  int units_for_clusters(int cluster_size, int ctas_per_unit) const;
  double l2_mb_per_xcd() const { return l2_mb / xcds; }
  // Dense TFLOP/s of the precision's pipe; 0 when the GPU has no such pipe.
  double dense_tflops_for(MatrixPrecision p) const;
  // The clock a dense GEMM of precision p runs at, as a share of clock_mhz (1 where no
  // measured clock is given).
  double matrix_clock_share(MatrixPrecision p) const;
};

// Loads and validates one hardware file. Unknown keys, wrong types, missing keys, numbers
// without a source and values out of range are ConfigErrors naming the file and the key.
Hardware load_hardware(const std::string& path);
// Loads `<search_dir>/<name>.toml`; a ConfigError lists the available names when absent.
Hardware load_hardware_by_name(std::string_view name, const std::string& search_dir);
// Names (file stems) of the hardware files in `dir`, sorted.
std::vector<std::string> list_hardware(const std::string& dir);

// Where the hardware descriptions live: $HETREC_HW_DIR when set, else hw/ in the data
// folder (core/install_paths.h: <prefix>/share/hetrec/hw when installed, the source tree's
// hw/ for a binary in its build tree).
std::string default_hardware_dir();
// Whether `hw` describes the GPU the runtime names `device_name`: one of its
// `device_names`, or its display name itself.
bool describes_device(const Hardware& hw, std::string_view device_name);
// The description of a local GPU from the runtime's device name (e.g. "NVIDIA H200"): the
// one file in `dir` that describes_device. ConfigError naming `key` (the setting that
// picks a description by name) when none or several match.
Hardware hardware_for_device(std::string_view device_name, const std::string& dir, std::string_view key);

// The measured host-gather rate (GB/s of distinct rows) at a host span of `span_gb`, for the
// rows the curve measured: interpolated linearly in log(span) between the measured points
// and held at the end points' rates beyond them. Empty when the hardware file has no such
// measurement.
std::optional<double> measured_host_gather_gbs(const Hardware& hw, double span_gb);

// The same for rows of `row_bytes`. Past the link's reach, a gather costs per row, not per
// byte (each row's address translation; measured on an H100 with 256- and 512-byte rows,
// bench/results/host-gather-20261205-h100-uniform-{bf16,fp32}.json: equal times per batch
// at equal spans from 2 GB up): the curve's rows per second times `row_bytes`, at most the
// fastest rate the curve measured (the link's own limit).
std::optional<double> measured_host_gather_gbs(const Hardware& hw, double span_gb, double row_bytes);

}  // namespace hetrec::hw::hw

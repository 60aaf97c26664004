#pragma once
// The local GPU's measured rates: device-to-device copy bandwidth and the peak rate of a
// large GEMM in each dense precision, measured once and kept in a cache file. The
// benchmarks' floors (FLOPs over measured peak plus bytes over measured bandwidth) and
// `hetrec hw probe` use them.
//
// Cache file (JSON, one object): "schema", the validators "gpu", "driver", "runtime",
// "library" (what the rates depend on), "date", "copy_tbs", "copy_bytes", "gemm_size",
// "gemm_tflops" {precision: TFLOP/s} and "cluster_units" [{"size", "ctas_per_unit",
// "max_active_clusters"}] (empty without thread-block clusters). A file written under
// other validators is measured again; a damaged one is replaced with a warning naming the
// file and what was wrong.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "gemm/device_validators.h"
#include "kernels/cluster_occupancy.h"

namespace hetrec::inline gemm {

struct DeviceProbe {
  ProbeValidators validators;
  std::string date;        // UTC time of the measurement
  double copy_tbs = 0;     // (bytes read + bytes written) / time of a device-to-device copy, TB/s
  double copy_bytes = 0;   // size of the copied buffer
  int gemm_size = 0;       // M = N = K of the timed GEMMs
  std::map<std::string, double> gemm_tflops;  // "fp32", "tf32", "bf16", "fp16": median TFLOP/s
  std::vector<kernels::ClusterUnits> cluster_units;  // the driver's cluster occupancy
};

// The dense rate for a precision name, or InternalError naming the missing precision.
double probe_gemm_tflops(const DeviceProbe& probe, const std::string& precision);

// Reads a cache file. Returns nothing (and says why in *why) when it is missing, damaged,
// of another schema or written under other validators.
std::optional<DeviceProbe> load_device_probe(const std::string& path, const ProbeValidators& expected, std::string* why);
// Writes the file atomically (a temporary beside it, then a rename); IoError on failure.
void save_device_probe(const DeviceProbe& probe, const std::string& path);

// $HETREC_CACHE_DIR/<file>, else $XDG_CACHE_HOME/hetrec/<file>, else
// $HOME/.cache/hetrec/<file>; empty when none of them is set.
std::string default_cache_path(const std::string& file);
// default_cache_path("device-probe-<index>.json").
std::string default_device_probe_path(int device_index);

// Measures the device now (a few seconds). DeviceError without a GPU build or device.
DeviceProbe measure_device_probe(int device_index);
// The cached probe when the file matches this device, else a new measurement written to
// `path` (when not empty). refresh: always measure.
DeviceProbe probe_device(int device_index, const std::string& path, bool refresh, const Logger& log);

}  // namespace hetrec::gemm::gemm

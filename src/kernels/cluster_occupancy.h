#pragma once
// How many SMs a grid of thread-block clusters can keep busy at once. Every CTA of a
// cluster must run in one GPC, and a GPC's SM count need not divide by the cluster size
// (the SMs left over idle), so clusters of 4 or more CTAs may use fewer than all SMs.
// The driver's occupancy query (cudaOccupancyMaxActiveClusters) answers for this chip's
// own GPC layout.
#include <vector>

namespace hetrec::kernels {

struct ClusterUnits {
  int cluster_size = 0;      // CTAs per cluster
  int ctas_per_unit = 0;     // resident CTAs per SM the probe kernel was sized for
  int max_active_clusters = 0;
  // max_active_clusters x cluster_size / ctas_per_unit: the SMs the clusters occupy.
  double units() const { return double(max_active_clusters) * cluster_size / ctas_per_unit; }
};

// For each cluster size 2, 4, ..., up to the largest the device launches (16 where
// non-portable sizes are allowed), at 1 and 2 resident CTAs per SM: the driver's maximum
// of co-resident clusters. Empty on GPUs without clusters (before sm_90, and HIP).
std::vector<ClusterUnits> measure_cluster_units(int device_index);

}  // namespace hetrec::kernels

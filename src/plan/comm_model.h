#pragma once
// Communication times of data-parallel training (dist/), from a link's bandwidth and
// per-step latency: the model the multi-GPU work validates against measurements.
//   ring all-reduce of S bytes over N ranks: 2(N-1) steps, each moving S/N bytes per rank
//       t = 2(N-1)/N * S / bw + 2(N-1) * latency
//   all-to-all where each rank sends S bytes in total, S/N to every rank (its own share
//   stays local): N-1 exchange steps
//       t = (N-1)/N * S / bw + (N-1) * latency
//   all-gather of S bytes per rank (ring): t = (N-1) * S / bw + (N-1) * latency
// bw is the bandwidth one rank injects into the fabric in one direction. With one rank
// every time is 0.
#include <cstdint>

#include "hw/hardware.h"
#include "model/model_config.h"

namespace hetrec {

struct LinkModel {
  double bytes_per_s = 0.0;     // per rank, one direction
  double step_latency_s = 0.0;  // one step of a collective algorithm
};

// Assumed latency of one collective step between GPUs of one host (kernel launch plus a
// peer round trip, order of 10 us); not a measurement: the multi-GPU calibration
// replaces it. The hardware files hold no latency yet.
inline constexpr double kAssumedPeerStepLatencyS = 10e-6;

// The GPU-to-GPU link of `hw` ([links] peer_gbs_per_direction, the aggregate over its
// peer links: the model assumes a switch fabric, or rings over every link of a mesh).
LinkModel peer_link_model(const Hardware& hw, double step_latency_s = kAssumedPeerStepLatencyS);

double ring_all_reduce_seconds(double bytes, int ranks, const LinkModel& link);
double all_to_all_seconds(double bytes_per_rank, int ranks, const LinkModel& link);
double all_gather_seconds(double bytes_per_rank, int ranks, const LinkModel& link);

// One training step of the data-parallel DLRM (model/dlrm.h) with global batch B over N
// ranks: pooled embeddings of the B/N local samples (B/N x T x D fp32) cross the fabric
// once forward and once backward (all-to-all; an upper bound for replicated tables,
// which move nothing forward), and the dense gradients (fp32) are all-reduced.
struct DataParallelCommTimes {
  double embedding_forward_s = 0.0;
  double embedding_backward_s = 0.0;
  double dense_all_reduce_s = 0.0;
  double total_s() const { return embedding_forward_s + embedding_backward_s + dense_all_reduce_s; }
};
DataParallelCommTimes data_parallel_comm_times(const ModelConfig& model, int64_t dense_parameters,
                                               int64_t global_batch, int ranks, const LinkModel& link);

}  // namespace hetrec

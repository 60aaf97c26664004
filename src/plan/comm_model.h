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
//
// An all-to-all with uneven messages (all_to_all_v: what the GPU engine's embedding
// exchanges are) takes as long as its busiest rank: each rank sends and receives at the
// same time (full duplex), so that is the largest of any rank's bytes sent to others and
// bytes received from others; what a rank sends itself is a local copy and crosses no link.
//       t = max over ranks r of max(sent_r, received_r) / bw + (N-1) * latency
// Each collective is split into its two parts, CollectiveCost: the bytes on the busiest
// rank's link and the count of latency steps, so that the step model can give each its
// own calibration factor.
#include <cstdint>
#include <vector>

#include "hw/hardware.h"
#include "model/model_config.h"

namespace hetrec::inline plan {

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

struct CollectiveCost {
  double link_bytes = 0.0;     // bytes the busiest rank moves over its link in one direction
  double latency_steps = 0.0;  // algorithm steps, each paying the link's latency
  double seconds(const LinkModel& link) const;
};

CollectiveCost ring_all_reduce_cost(double bytes, int ranks);
CollectiveCost all_to_all_cost(double bytes_per_rank, int ranks);
CollectiveCost all_gather_cost(double bytes_per_rank, int ranks);
// bytes[r][s]: what rank r sends to rank s (a square matrix, one row per rank; the
// diagonal stays local). An exchange that moves no bytes at all costs nothing (the GPU
// engine posts no sends or receives for it).
CollectiveCost all_to_all_v_cost(const std::vector<std::vector<double>>& bytes);

double ring_all_reduce_seconds(double bytes, int ranks, const LinkModel& link);
double all_to_all_seconds(double bytes_per_rank, int ranks, const LinkModel& link);
double all_gather_seconds(double bytes_per_rank, int ranks, const LinkModel& link);
double all_to_all_v_seconds(const std::vector<std::vector<double>>& bytes, const LinkModel& link);

// One training step of the data-parallel CPU DLRM (model/dlrm.h) with global batch B over N
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

}  // namespace hetrec::plan::plan

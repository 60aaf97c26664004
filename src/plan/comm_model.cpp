#include "plan/comm_model.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace hetrec::inline plan {
namespace {

constexpr double kBytesPerGB = 1e9;  // link rates in the hardware files are decimal GB/s
constexpr double kFp32Bytes = 4.0;

void check_ranks(int ranks) {
  if (ranks < 1) throw ConfigError("communication model: expected at least 1 rank, got " + std::to_string(ranks));
}

void check(int ranks, const LinkModel& link) {
  check_ranks(ranks);
  if (ranks > 1 && !(link.bytes_per_s > 0.0))
    throw ConfigError("communication model: the link has no bandwidth (hardware [links] peer_gbs_per_direction)");
}

}  // namespace

double CollectiveCost::seconds(const LinkModel& link) const {
  if (link_bytes <= 0.0 && latency_steps <= 0.0) return 0.0;
  if (!(link.bytes_per_s > 0.0))
    throw ConfigError("communication model: the link has no bandwidth (hardware [links] peer_gbs_per_direction)");
  return link_bytes / link.bytes_per_s + latency_steps * link.step_latency_s;
}

CollectiveCost ring_all_reduce_cost(double bytes, int ranks) {
  check_ranks(ranks);
  if (ranks == 1) return {};
  const double n = ranks;
  return {2.0 * (n - 1.0) / n * bytes, 2.0 * (n - 1.0)};
}

CollectiveCost all_to_all_cost(double bytes_per_rank, int ranks) {
  check_ranks(ranks);
  if (ranks == 1) return {};
  const double n = ranks;
  return {(n - 1.0) / n * bytes_per_rank, n - 1.0};
}

CollectiveCost all_gather_cost(double bytes_per_rank, int ranks) {
  check_ranks(ranks);
  if (ranks == 1) return {};
  const double n = ranks;
  return {(n - 1.0) * bytes_per_rank, n - 1.0};
}

CollectiveCost all_to_all_v_cost(const std::vector<std::vector<double>>& bytes) {
  const std::size_t n = bytes.size();
  check_ranks(static_cast<int>(n));
  std::vector<double> received(n, 0.0);
  double busiest = 0.0, total = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    if (bytes[r].size() != n)
      throw InternalError("all_to_all_v_cost: row " + std::to_string(r) + " has " + std::to_string(bytes[r].size()) +
                          " entries for " + std::to_string(n) + " ranks");
    double sent = 0.0;
    for (std::size_t s = 0; s < n; ++s) {
      total += bytes[r][s];
      if (s == r) continue;
      sent += bytes[r][s];
      received[s] += bytes[r][s];
    }
    busiest = std::max(busiest, sent);
  }
  for (double v : received) busiest = std::max(busiest, v);
  if (n == 1 || total <= 0.0) return {};
  return {busiest, static_cast<double>(n) - 1.0};
}

LinkModel peer_link_model(const Hardware& hw, double step_latency_s) {
  return {hw.peer_gbs_per_direction * kBytesPerGB, step_latency_s};
}

double ring_all_reduce_seconds(double bytes, int ranks, const LinkModel& link) {
  check(ranks, link);
  return ring_all_reduce_cost(bytes, ranks).seconds(link);
}

double all_to_all_seconds(double bytes_per_rank, int ranks, const LinkModel& link) {
  check(ranks, link);
  return all_to_all_cost(bytes_per_rank, ranks).seconds(link);
}

double all_gather_seconds(double bytes_per_rank, int ranks, const LinkModel& link) {
  check(ranks, link);
  return all_gather_cost(bytes_per_rank, ranks).seconds(link);
}

double all_to_all_v_seconds(const std::vector<std::vector<double>>& bytes, const LinkModel& link) {
  check(static_cast<int>(bytes.size()), link);
  return all_to_all_v_cost(bytes).seconds(link);
}

DataParallelCommTimes data_parallel_comm_times(const ModelConfig& model, int64_t dense_parameters,
                                               int64_t global_batch, int ranks, const LinkModel& link) {
  check(ranks, link);
  const double local_batch = static_cast<double>(global_batch) / ranks;
  const double pooled_bytes = local_batch * model.num_tables() * model.embedding_dim * kFp32Bytes;
  DataParallelCommTimes t;
  t.embedding_forward_s = all_to_all_seconds(pooled_bytes, ranks, link);
  t.embedding_backward_s = all_to_all_seconds(pooled_bytes, ranks, link);
  t.dense_all_reduce_s = ring_all_reduce_seconds(static_cast<double>(dense_parameters) * kFp32Bytes, ranks, link);
  return t;
}

}  // namespace hetrec::plan::plan

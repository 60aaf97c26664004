#include "plan/comm_model.h"

#include <string>

#include "core/error.h"

namespace hetrec {
namespace {

constexpr double kBytesPerGB = 1e9;  // link rates in the hardware files are decimal GB/s
constexpr double kFp32Bytes = 4.0;

void check(int ranks, const LinkModel& link) {
  if (ranks < 1) throw ConfigError("communication model: expected at least 1 rank, got " + std::to_string(ranks));
  if (ranks > 1 && !(link.bytes_per_s > 0.0))
    throw ConfigError("communication model: the link has no bandwidth (hardware [links] peer_gbs_per_direction)");
}

}  // namespace

LinkModel peer_link_model(const Hardware& hw, double step_latency_s) {
  return {hw.peer_gbs_per_direction * kBytesPerGB, step_latency_s};
}

double ring_all_reduce_seconds(double bytes, int ranks, const LinkModel& link) {
  check(ranks, link);
  if (ranks == 1) return 0.0;
  const double n = ranks;
  return 2.0 * (n - 1.0) / n * bytes / link.bytes_per_s + 2.0 * (n - 1.0) * link.step_latency_s;
}

double all_to_all_seconds(double bytes_per_rank, int ranks, const LinkModel& link) {
  check(ranks, link);
  if (ranks == 1) return 0.0;
  const double n = ranks;
  return (n - 1.0) / n * bytes_per_rank / link.bytes_per_s + (n - 1.0) * link.step_latency_s;
}

double all_gather_seconds(double bytes_per_rank, int ranks, const LinkModel& link) {
  check(ranks, link);
  if (ranks == 1) return 0.0;
  const double n = ranks;
  return (n - 1.0) * bytes_per_rank / link.bytes_per_s + (n - 1.0) * link.step_latency_s;
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

}  // namespace hetrec

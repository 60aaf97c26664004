#pragma once
// A process group: the ranks of one training job and the collectives they run together.
// One interface for every transport: MPI between processes and hosts (CPU backend),
// NCCL between GPUs (bootstrapped through MPI), and a single-process group for world
// size 1 without any launcher.
//
// Every collective takes an operation name ("all_to_all_v(embedding ids)"): a failure or
// a timeout throws DeviceError naming this rank, the operation and the cause, so a job
// that ends on one rank says where it stopped. Every rank must call the same collectives
// in the same order with matching sizes (the MPI rule).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hetrec::dist {

// A collective started with a *_start call; wait() blocks until it has completed on
// this rank (throwing DeviceError as the blocking form would).
class PendingCollective {
 public:
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single", "mpi" or "nccl", with the host or device where useful.
  virtual std::string describe() const = 0;

  // Sum over ranks, in place; every rank receives the same values.
  virtual void all_reduce_sum(std::span<float> data, std::string_view op) = 0;
  virtual void all_reduce_sum(std::span<double> data, std::string_view op) = 0;
  // Non-blocking form (the data must stay alive and untouched until wait()).
  virtual std::unique_ptr<PendingCollective> all_reduce_sum_start(std::span<float> data, std::string_view op) = 0;

  // Personalised exchange of bytes: send_bytes[r] bytes (contiguous in rank order in
  // `send`) go to rank r; recv_bytes[r] bytes arrive from rank r into `recv` (contiguous
  // in rank order). Both count lists have size() entries.
  virtual void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                            std::span<const int64_t> recv_bytes, std::string_view op) = 0;
  // Every rank contributes `bytes` bytes; `recv` receives size() blocks in rank order.
  virtual void all_gather(const void* send, int64_t bytes, void* recv, std::string_view op) = 0;
  // `bytes` bytes from `root` to every rank.
  virtual void broadcast(void* data, int64_t bytes, int root, std::string_view op) = 0;
  virtual void barrier(std::string_view op) = 0;
};

// The group of this process: MPI when the process was started by an MPI launcher
// (mpirun sets OMPI_COMM_WORLD_SIZE / PMIX_RANK / PMI_SIZE) and MPI was built in, else
// the single-process group. Throws ConfigError when launched by mpirun in a build without
// MPI. `timeout_s` bounds every collective of the MPI group (0: no bound).
std::unique_ptr<ProcessGroup> make_process_group(double timeout_s);

// True when an MPI launcher started this process.
bool launched_by_mpi();

// This process's rank as the MPI launcher set it (-1 when not launched by one); usable
// before any group exists, e.g. in error messages.
int launcher_rank();

// After a fatal error on this rank: ends every rank of the job (MPI_Abort with
// `exit_code`) when MPI is running, so no rank waits forever in a collective. Returns
// when this process is not part of an MPI job.
void abort_job(int exit_code);

// World size 1, no launcher: every collective is a copy (or nothing).
class SingleProcessGroup final : public ProcessGroup {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "single process"; }
  void all_reduce_sum(std::span<float>, std::string_view) override {}
  void all_reduce_sum(std::span<double>, std::string_view) override {}
  std::unique_ptr<PendingCollective> all_reduce_sum_start(std::span<float> data, std::string_view op) override;
  void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes, std::string_view op) override;
  void all_gather(const void* send, int64_t bytes, void* recv, std::string_view op) override;
  void broadcast(void*, int64_t, int root, std::string_view op) override;
  void barrier(std::string_view) override {}
};

// ---- Typed helpers over the byte collectives ----

// Sends per_rank[r] to rank r; returns what each rank sent to this one (indexed by
// source rank). Two collectives: the element counts, then the data.
template <class T>
std::vector<std::vector<T>> exchange(ProcessGroup& pg, const std::vector<std::vector<T>>& per_rank,
                                     std::string_view op);

// Every rank's vector (sizes may differ), indexed by rank.
template <class T>
std::vector<std::vector<T>> all_gather_v(ProcessGroup& pg, const std::vector<T>& mine, std::string_view op);

// Sum of one value over ranks.
double all_reduce_sum_value(ProcessGroup& pg, double value, std::string_view op);

// ---- Implementation of the typed helpers ----

template <class T>
std::vector<std::vector<T>> exchange(ProcessGroup& pg, const std::vector<std::vector<T>>& per_rank,
                                     std::string_view op) {
  const auto n = static_cast<std::size_t>(pg.size());
  std::vector<int64_t> send_counts(n), recv_counts(n), eight(n, sizeof(int64_t));
  for (std::size_t r = 0; r < n; ++r) send_counts[r] = static_cast<int64_t>(per_rank[r].size());
  pg.all_to_all_v(send_counts.data(), eight, recv_counts.data(), eight, std::string(op) + " (sizes)");
  std::vector<T> send;
  std::vector<int64_t> send_bytes(n), recv_bytes(n);
  int64_t recv_total = 0;
  for (std::size_t r = 0; r < n; ++r) {
    send.insert(send.end(), per_rank[r].begin(), per_rank[r].end());
    send_bytes[r] = send_counts[r] * static_cast<int64_t>(sizeof(T));
    recv_bytes[r] = recv_counts[r] * static_cast<int64_t>(sizeof(T));
    recv_total += recv_counts[r];
  }
  std::vector<T> recv(static_cast<std::size_t>(recv_total));
  pg.all_to_all_v(send.data(), send_bytes, recv.data(), recv_bytes, op);
  std::vector<std::vector<T>> out(n);
  std::size_t at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    const auto count = static_cast<std::size_t>(recv_counts[r]);
    out[r].assign(recv.begin() + static_cast<std::ptrdiff_t>(at), recv.begin() + static_cast<std::ptrdiff_t>(at + count));
    at += count;
  }
  return out;
}

template <class T>
std::vector<std::vector<T>> all_gather_v(ProcessGroup& pg, const std::vector<T>& mine, std::string_view op) {
  return exchange(pg, std::vector<std::vector<T>>(static_cast<std::size_t>(pg.size()), mine), op);
}

}  // namespace hetrec::dist

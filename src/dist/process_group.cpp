#include "dist/process_group.h"

#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "dist/mpi_process_group.h"

namespace hetrec::dist {
namespace {

class DonePending final : public PendingCollective {
 public:
  void wait() override {}
};

}  // namespace

std::unique_ptr<PendingCollective> SingleProcessGroup::all_reduce_sum_start(std::span<float>, std::string_view) {
  return std::make_unique<DonePending>();
}

void SingleProcessGroup::all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                                      std::span<const int64_t> recv_bytes, std::string_view op) {
  if (send_bytes.size() != 1 || recv_bytes.size() != 1 || send_bytes[0] != recv_bytes[0])
    throw InternalError("rank 0 of 1: " + std::string(op) + ": the byte counts of a one-rank exchange must match");
  if (send_bytes[0] > 0) std::memmove(recv, send, static_cast<std::size_t>(send_bytes[0]));
}

void SingleProcessGroup::all_gather(const void* send, int64_t bytes, void* recv, std::string_view) {
  if (bytes > 0) std::memmove(recv, send, static_cast<std::size_t>(bytes));
}

void SingleProcessGroup::broadcast(void*, int64_t, int root, std::string_view op) {
  if (root != 0) throw InternalError("rank 0 of 1: " + std::string(op) + ": root " + std::to_string(root) + " is not a rank");
}

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return -1;
}

std::unique_ptr<ProcessGroup> make_process_group(double timeout_s) {
  if (!launched_by_mpi()) return std::make_unique<SingleProcessGroup>();
#if defined(HETREC_WITH_MPI)
  return std::make_unique<MpiProcessGroup>(timeout_s);
#else
  (void)timeout_s;
  throw ConfigError("this process was started by an MPI launcher, but this build has no MPI support "
                    "(install libopenmpi-dev and configure again)");
#endif
}

double all_reduce_sum_value(ProcessGroup& pg, double value, std::string_view op) {
  double v = value;
  pg.all_reduce_sum(std::span<double>(&v, 1), op);
  return v;
}

void abort_job(int exit_code) {
#if defined(HETREC_WITH_MPI)
  mpi_abort_if_running(exit_code);
#else
  (void)exit_code;
#endif
}

}  // namespace hetrec::dist

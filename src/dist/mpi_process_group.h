#pragma once
// The MPI process group (CPU backend, and the bootstrap of NCCL): collectives on a
// duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, each started non-blocking and
// waited for with a deadline, so that an MPI error or a collective that does not complete
// in time becomes a DeviceError naming the rank and the operation. While a collective is
// in flight its name is kept where a SIGTERM handler can print it: when another rank dies,
// mpirun terminates the survivors and each says which collective it was waiting in.
// Built only when CMake found MPI (HETREC_WITH_MPI).
#if defined(HETREC_WITH_MPI)
#include <mpi.h>

#include "dist/process_group.h"

namespace hetrec::dist {

class MpiProcessGroup final : public ProcessGroup {
 public:
  // Initialises MPI (once per process; finalised at exit). timeout_s bounds every
  // collective (0: wait forever).
  explicit MpiProcessGroup(double timeout_s);
  ~MpiProcessGroup() override;
  MpiProcessGroup(const MpiProcessGroup&) = delete;
  MpiProcessGroup& operator=(const MpiProcessGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override;

  void all_reduce_sum(std::span<float> data, std::string_view op) override;
  void all_reduce_sum(std::span<double> data, std::string_view op) override;
  std::unique_ptr<PendingCollective> all_reduce_sum_start(std::span<float> data, std::string_view op) override;
  void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes, std::string_view op) override;
  void all_gather(const void* send, int64_t bytes, void* recv, std::string_view op) override;
  void broadcast(void* data, int64_t bytes, int root, std::string_view op) override;
  void barrier(std::string_view op) override;

  MPI_Comm comm() const { return comm_; }
  // Waits for `request` (polling, with the group's deadline); throws DeviceError naming
  // the operation on an MPI error or a timeout.
  void wait(MPI_Request& request, std::string_view op) const;
  // True once a collective timed out: the communicator is unusable.
  bool abandoned() const { return abandoned_; }
  // Throws DeviceError naming the rank and the operation unless rc is MPI_SUCCESS.
  void check(int rc, std::string_view op) const;

 private:
  int count_of(int64_t n, std::string_view op, const char* what) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  double timeout_s_ = 0.0;
  mutable bool abandoned_ = false;  // a collective timed out: the communicator is unusable
};

// MPI_Abort on MPI_COMM_WORLD when MPI is initialised and not finalised.
void mpi_abort_if_running(int exit_code);

}  // namespace hetrec::dist
#endif

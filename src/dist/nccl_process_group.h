#pragma once
// The GPU process group: NCCL (RCCL under HIP) on device buffers, one device per rank,
// through gpu/collectives.h. Bootstrapped through another group (MPI under mpirun, or
// the single-process group): rank 0 makes the unique id and broadcasts it. Every buffer
// passed to it is device memory of device(); each collective is enqueued on the group's
// stream and waited for (polling, with the timeout) before the call returns, except
// all_reduce_sum_start, whose wait() does it. Built with the GPU backend only.
#if defined(HETREC_WITH_GPU)
#include <memory>
#include <optional>

#include "dist/process_group.h"
#include "gpu/collectives.h"
#include "gpu/device_buffer.h"
#include "gpu/stream.h"

namespace hetrec::dist {

class NcclProcessGroup final : public ProcessGroup {
 public:
  // Collective over `bootstrap`'s ranks. The device is the launcher's local rank (or the
  // rank) modulo the visible devices. Throws DeviceError without a device or library.
  NcclProcessGroup(ProcessGroup& bootstrap, double timeout_s);
  ~NcclProcessGroup() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  gpu::stream_t stream() const { return stream_->get(); }
  std::string describe() const override;

  void all_reduce_sum(std::span<float> data, std::string_view op) override;
  void all_reduce_sum(std::span<double> data, std::string_view op) override;
  std::unique_ptr<PendingCollective> all_reduce_sum_start(std::span<float> data, std::string_view op) override;
  void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes, std::string_view op) override;
  void all_gather(const void* send, int64_t bytes, void* recv, std::string_view op) override;
  void broadcast(void* data, int64_t bytes, int root, std::string_view op) override;
  void barrier(std::string_view op) override;

  void wait(std::string_view op);

  // For a model that enqueues collectives on its own stream (inside a captured step
  // graph): the communicator, and the bound its waits use (Communicator::wait).
  gpu::Communicator& communicator() { return *comm_; }
  double timeout_s() const { return timeout_s_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  double timeout_s_ = 0.0;
  std::optional<gpu::Stream> stream_;
  std::unique_ptr<gpu::Communicator> comm_;
  gpu::DeviceBuffer barrier_word_;  // one float reduced by barrier()
};

}  // namespace hetrec::dist
#endif

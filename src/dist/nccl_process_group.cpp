#include "dist/nccl_process_group.h"

#if defined(HETREC_WITH_GPU)
#include <cstdlib>

#include "core/error.h"
#include "gpu/device.h"

namespace hetrec::dist {
namespace {

// The launcher's rank of this process among the ranks of its host (OpenMPI, PMIx).
int local_rank(int fallback) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "MPI_LOCALRANKID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return fallback;
}

class NcclPending final : public PendingCollective {
 public:
  NcclPending(NcclProcessGroup& group, std::string op) : group_(group), op_(std::move(op)) {}
  void wait() override { group_.wait(op_); }

 private:
  NcclProcessGroup& group_;
  std::string op_;
};

}  // namespace

NcclProcessGroup::NcclProcessGroup(ProcessGroup& bootstrap, double timeout_s)
    : rank_(bootstrap.rank()), size_(bootstrap.size()), timeout_s_(timeout_s) {
  const int devices = gpu::device_count();
  if (devices == 0) throw DeviceError("rank " + std::to_string(rank_) + ": the NCCL process group needs a GPU, none is visible");
  if (!gpu::collectives_available())
    throw DeviceError("rank " + std::to_string(rank_) + ": this build has no GPU collectives library");
  device_ = local_rank(rank_) % devices;
  gpu::set_device(device_);
  stream_.emplace();
  gpu::CollectivesId id{};
  if (rank_ == 0) id = gpu::make_collectives_id();
  bootstrap.broadcast(id.data(), static_cast<int64_t>(id.size()), 0, "broadcast(NCCL unique id)");
  comm_ = std::make_unique<gpu::Communicator>(size_, rank_, id);
  barrier_word_ = gpu::DeviceBuffer(sizeof(float));
}

NcclProcessGroup::~NcclProcessGroup() = default;

std::string NcclProcessGroup::describe() const {
  return "nccl: rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on device " +
         std::to_string(device_) + " (" + gpu::collectives_version() + ")";
}

void NcclProcessGroup::wait(std::string_view op) { comm_->wait(stream_->get(), std::string(op), timeout_s_); }

void NcclProcessGroup::all_reduce_sum(std::span<float> data, std::string_view op) {
  comm_->all_reduce_sum(data.data(), data.size(), gpu::ReduceType::f32, stream_->get());
  wait(op);
}

void NcclProcessGroup::all_reduce_sum(std::span<double> data, std::string_view op) {
  comm_->all_reduce_sum(data.data(), data.size(), gpu::ReduceType::f64, stream_->get());
  wait(op);
}

std::unique_ptr<PendingCollective> NcclProcessGroup::all_reduce_sum_start(std::span<float> data, std::string_view op) {
  comm_->all_reduce_sum(data.data(), data.size(), gpu::ReduceType::f32, stream_->get());
  return std::make_unique<NcclPending>(*this, std::string(op));
}

void NcclProcessGroup::all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                                    std::span<const int64_t> recv_bytes, std::string_view op) {
  if (send_bytes.size() != static_cast<std::size_t>(size_) || recv_bytes.size() != static_cast<std::size_t>(size_))
    throw InternalError("rank " + std::to_string(rank_) + ": " + std::string(op) + ": byte counts for " +
                        std::to_string(send_bytes.size()) + " ranks, the group has " + std::to_string(size_));
  comm_->all_to_all_v(send, send_bytes, recv, recv_bytes, stream_->get());
  wait(op);
}

void NcclProcessGroup::all_gather(const void* send, int64_t bytes, void* recv, std::string_view op) {
  comm_->all_gather(send, static_cast<std::size_t>(bytes), recv, stream_->get());
  wait(op);
}

void NcclProcessGroup::broadcast(void* data, int64_t bytes, int root, std::string_view op) {
  if (root < 0 || root >= size_)
    throw InternalError("rank " + std::to_string(rank_) + ": " + std::string(op) + ": root " + std::to_string(root) +
                        " is not a rank of " + std::to_string(size_));
  comm_->broadcast(data, static_cast<std::size_t>(bytes), root, stream_->get());
  wait(op);
}

void NcclProcessGroup::barrier(std::string_view op) {
  comm_->all_reduce_sum(barrier_word_.get(), 1, gpu::ReduceType::f32, stream_->get());
  wait(op);
}

}  // namespace hetrec::dist
#endif

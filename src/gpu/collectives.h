#pragma once
// Collectives between devices: NCCL under CUDA, RCCL (the same API) under HIP. The only
// place that names the collectives library; dist/nccl_process_group.* builds the
// ProcessGroup on it. Every operation is enqueued on a stream; wait() polls the stream
// and the communicator, so that an asynchronous error or a peer that never arrives
// becomes a DeviceError naming the operation (and the communicator is aborted).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gpu/platform.h"

namespace hetrec::gpu {

// Bytes of a communicator's unique id (NCCL_UNIQUE_ID_BYTES in nccl.h; RCCL alike).
inline constexpr std::size_t kCollectivesIdBytes = 128;
using CollectivesId = std::array<char, kCollectivesIdBytes>;

// False in a build without the collectives library (a HIP build without RCCL).
bool collectives_available();
// "NCCL 2.28.x" or "RCCL ...".
std::string collectives_version();

// Made by one rank and sent to the others (over MPI) before they build a Communicator.
CollectivesId make_collectives_id();

// Element types of all_reduce_sum: fp32, fp64, and 32-bit signed integers (counts).
enum class ReduceType { f32, f64, i32 };

class Communicator {
 public:
  // Collective over `ranks` processes, one device each (the current device).
  Communicator(int ranks, int rank, const CollectivesId& id);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Enqueue on `stream`; buffers are device memory.
  void all_reduce_sum(void* data, std::size_t count, ReduceType type, stream_t stream);
  // Bytes: send_bytes[r] from `send` (rank-ordered, contiguous) to rank r; recv_bytes[r]
  // from rank r into `recv` (grouped point-to-point sends and receives).
  void all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes, stream_t stream);
  void all_gather(const void* send, std::size_t bytes, void* recv, stream_t stream);
  // Every rank sends the same `send_bytes` from `send` to every rank; recv_bytes[r] from
  // rank r arrive in `recv` (rank-ordered, contiguous): an all-gather of unequal blocks.
  void all_gather_v(const void* send, int64_t send_bytes, void* recv, std::span<const int64_t> recv_bytes,
                    stream_t stream);
  void broadcast(void* data, std::size_t bytes, int root, stream_t stream);

  // Blocks until the work enqueued on `stream` has finished. Throws DeviceError naming
  // `op` when the communicator reports an error or after timeout_s (0: no limit); the
  // communicator is then aborted and unusable.
  void wait(stream_t stream, const std::string& op, double timeout_s);

  int ranks() const { return ranks_; }
  int rank() const { return rank_; }

 private:
  void* comm_ = nullptr;  // ncclComm_t
  int ranks_ = 0;
  int rank_ = 0;
  bool aborted_ = false;
};

}  // namespace hetrec::gpu

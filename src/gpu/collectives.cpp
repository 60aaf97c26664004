#include "gpu/collectives.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "gpu/check.h"

#if defined(HETREC_GPU_HIP)
#if __has_include(<rccl/rccl.h>)
#include <rccl/rccl.h>
#define HETREC_COLLECTIVES 1
#endif
#elif defined(HETREC_HAVE_NCCL)
#include <nccl.h>
#define HETREC_COLLECTIVES 1
#endif

namespace hetrec::gpu {

#if defined(HETREC_COLLECTIVES)
static_assert(sizeof(ncclUniqueId) == kCollectivesIdBytes, "kCollectivesIdBytes must match NCCL_UNIQUE_ID_BYTES");

namespace {

// Polling a stream: spin (yielding) this long, then sleep between queries.
constexpr std::chrono::microseconds kSpinFor{200};
constexpr std::chrono::microseconds kPollSleep{50};

ncclComm_t as_comm(void* p) { return static_cast<ncclComm_t>(p); }

void check_nccl(ncclResult_t r, const char* call, int rank) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  throw DeviceError(std::string("rank ") + std::to_string(rank) + ": " + call + " failed: " + ncclGetErrorString(r));
}

#define HETREC_NCCL_CHECK(call) check_nccl((call), #call, rank_)

}  // namespace

bool collectives_available() { return true; }

std::string collectives_version() {
  int v = 0;
  ncclGetVersion(&v);
#if defined(HETREC_GPU_HIP)
  const char* name = "RCCL ";
#else
  const char* name = "NCCL ";
#endif
  // NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9.
  return name + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

CollectivesId make_collectives_id() {
  ncclUniqueId id;
  const ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) throw DeviceError(std::string("ncclGetUniqueId failed: ") + ncclGetErrorString(r));
  CollectivesId out;
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

Communicator::Communicator(int ranks, int rank, const CollectivesId& id) : ranks_(ranks), rank_(rank) {
  ncclUniqueId nid;
  std::memcpy(&nid, id.data(), sizeof nid);
  ncclComm_t comm = nullptr;
  HETREC_NCCL_CHECK(ncclCommInitRank(&comm, ranks, nid, rank));
  comm_ = comm;
}

Communicator::~Communicator() {
  if (!comm_) return;
  if (aborted_) ncclCommAbort(as_comm(comm_));
  else ncclCommDestroy(as_comm(comm_));
}

void Communicator::all_reduce_sum(void* data, std::size_t count, ReduceType type, stream_t stream) {
  ncclDataType_t nccl_type = ncclFloat32;
  switch (type) {
    case ReduceType::f32: nccl_type = ncclFloat32; break;
    case ReduceType::f64: nccl_type = ncclFloat64; break;
    case ReduceType::i32: nccl_type = ncclInt32; break;
  }
  HETREC_NCCL_CHECK(ncclAllReduce(data, data, count, nccl_type, ncclSum, as_comm(comm_), stream));
}

void Communicator::all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                                std::span<const int64_t> recv_bytes, stream_t stream) {
  const auto* s = static_cast<const char*>(send);
  auto* d = static_cast<char*>(recv);
  HETREC_NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < ranks_; ++r) {
    const auto sb = static_cast<std::size_t>(send_bytes[static_cast<std::size_t>(r)]);
    const auto rb = static_cast<std::size_t>(recv_bytes[static_cast<std::size_t>(r)]);
    if (sb > 0) HETREC_NCCL_CHECK(ncclSend(s, sb, ncclUint8, r, as_comm(comm_), stream));
    if (rb > 0) HETREC_NCCL_CHECK(ncclRecv(d, rb, ncclUint8, r, as_comm(comm_), stream));
    s += sb;
    d += rb;
  }
  HETREC_NCCL_CHECK(ncclGroupEnd());
}

void Communicator::all_gather(const void* send, std::size_t bytes, void* recv, stream_t stream) {
  HETREC_NCCL_CHECK(ncclAllGather(send, recv, bytes, ncclUint8, as_comm(comm_), stream));
}

void Communicator::all_gather_v(const void* send, int64_t send_bytes, void* recv, std::span<const int64_t> recv_bytes,
                                stream_t stream) {
  auto* d = static_cast<char*>(recv);
  HETREC_NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < ranks_; ++r) {
    const auto rb = static_cast<std::size_t>(recv_bytes[static_cast<std::size_t>(r)]);
    if (send_bytes > 0)
      HETREC_NCCL_CHECK(ncclSend(send, static_cast<std::size_t>(send_bytes), ncclUint8, r, as_comm(comm_), stream));
    if (rb > 0) HETREC_NCCL_CHECK(ncclRecv(d, rb, ncclUint8, r, as_comm(comm_), stream));
    d += rb;
  }
  HETREC_NCCL_CHECK(ncclGroupEnd());
}

void Communicator::broadcast(void* data, std::size_t bytes, int root, stream_t stream) {
  HETREC_NCCL_CHECK(ncclBroadcast(data, data, bytes, ncclUint8, root, as_comm(comm_), stream));
}

void Communicator::wait(stream_t stream, const std::string& op, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    const cudaError_t status = cudaStreamQuery(stream);
    if (status == cudaSuccess) return;
    if (status != cudaErrorNotReady) {
      aborted_ = true;
      throw DeviceError("rank " + std::to_string(rank_) + " of " + std::to_string(ranks_) + ": collective '" + op +
                        "' failed on the device: " + error_text(status));
    }
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(as_comm(comm_), &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      aborted_ = true;
      throw DeviceError("rank " + std::to_string(rank_) + " of " + std::to_string(ranks_) + ": collective '" + op +
                        "' failed: " + ncclGetErrorString(async));
    }
    const auto waited = Clock::now() - start;
    if (timeout_s > 0 && std::chrono::duration<double>(waited).count() > timeout_s) {
      aborted_ = true;
      throw DeviceError("rank " + std::to_string(rank_) + " of " + std::to_string(ranks_) + ": collective '" + op +
                        "' did not complete within " + std::to_string(timeout_s) +
                        " s (train.collective_timeout_s): another rank is dead, stuck or in a different collective");
    }
    if (waited < kSpinFor) std::this_thread::yield();
    else std::this_thread::sleep_for(kPollSleep);
  }
}

#else  // no collectives library in this build

namespace {
[[noreturn]] void unavailable() {
  throw DeviceError("this build has no GPU collectives library (NCCL for CUDA, RCCL for HIP)");
}
}  // namespace

bool collectives_available() { return false; }
std::string collectives_version() { return "none"; }
CollectivesId make_collectives_id() { unavailable(); }
Communicator::Communicator(int, int, const CollectivesId&) { unavailable(); }
Communicator::~Communicator() = default;
void Communicator::all_reduce_sum(void*, std::size_t, ReduceType, stream_t) { unavailable(); }
void Communicator::all_to_all_v(const void*, std::span<const int64_t>, void*, std::span<const int64_t>, stream_t) {
  unavailable();
}
void Communicator::all_gather(const void*, std::size_t, void*, stream_t) { unavailable(); }
void Communicator::all_gather_v(const void*, int64_t, void*, std::span<const int64_t>, stream_t) { unavailable(); }
void Communicator::broadcast(void*, std::size_t, int, stream_t) { unavailable(); }
void Communicator::wait(stream_t, const std::string&, double) { unavailable(); }

#endif

}  // namespace hetrec::gpu

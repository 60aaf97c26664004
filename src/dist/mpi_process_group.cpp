#include "dist/mpi_process_group.h"

#if defined(HETREC_WITH_MPI)
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/error.h"

namespace hetrec::dist {
namespace {

// Polling a request: spin (yielding) this long, then sleep between tests so that ranks
// oversubscribing a few cores leave the cores to the ranks that still compute.
constexpr std::chrono::microseconds kSpinFor{200};
constexpr std::chrono::microseconds kPollSleep{50};

// The collective in flight, for the SIGTERM handler (fixed storage: the handler may only
// read memory and call write()).
constexpr std::size_t kOpNameCapacity = 200;
char g_current_op[kOpNameCapacity] = {0};
volatile sig_atomic_t g_in_collective = 0;
int g_rank_for_signal = -1;

void write_all(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Formats a non-negative integer into buf (async-signal-safe).
void append_int(char* buf, std::size_t cap, int v) {
  char digits[16];
  int k = 0;
  do {
    digits[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0 && k < 15);
  std::size_t at = std::strlen(buf);
  while (k > 0 && at + 1 < cap) buf[at++] = digits[--k];
  buf[at] = '\0';
}

extern "C" void on_terminate(int sig) {
  char msg[512] = "hetrec: device error: rank ";
  append_int(msg, sizeof msg, g_rank_for_signal);
  if (g_in_collective) {
    std::strncat(msg, ": terminated by the launcher while waiting in collective '", sizeof msg - std::strlen(msg) - 1);
    std::strncat(msg, g_current_op, sizeof msg - std::strlen(msg) - 1);
    std::strncat(msg, "' (another rank of the job failed or died; mpirun names it)\n", sizeof msg - std::strlen(msg) - 1);
  } else {
    std::strncat(msg, ": terminated by the launcher (another rank of the job failed or died; mpirun names it)\n",
                 sizeof msg - std::strlen(msg) - 1);
  }
  write_all(msg);
  ::_exit(128 + sig);
}

// Marks a collective as in flight for the SIGTERM handler.
class InFlight {
 public:
  explicit InFlight(std::string_view op) {
    const std::size_t n = std::min(op.size(), kOpNameCapacity - 1);
    std::memcpy(g_current_op, op.data(), n);
    g_current_op[n] = '\0';
    g_in_collective = 1;
  }
  ~InFlight() { g_in_collective = 0; }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
};

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return "MPI error code " + std::to_string(rc);
  return std::string(text, static_cast<std::size_t>(len));
}

// MPI is initialised once per process and finalised at exit (MPI cannot be initialised
// again after MPI_Finalize).
void ensure_mpi_initialised() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) return;
  int provided = 0;
  // Only the main thread calls MPI (the data pipeline's thread never does).
  const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (rc != MPI_SUCCESS) throw DeviceError("MPI_Init_thread failed: " + mpi_error_text(rc));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::atexit([] {
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (!finalised) MPI_Finalize();
  });
}

class MpiPending final : public PendingCollective {
 public:
  MpiPending(const MpiProcessGroup& group, std::string op) : group_(group), op_(std::move(op)) {}
  ~MpiPending() override {
    // A collective must complete before its buffers go away. One left by an error
    // elsewhere (this destructor runs while that error unwinds) is waited for within the
    // group's timeout, without the error check; past it, or once the group has given up
    // on another collective, it is left: the job is being ended (abort_job), and a blocking
    // wait would hang this rank on a dead or stopped peer instead.
    if (request_ == MPI_REQUEST_NULL || group_.abandoned()) return;
    try {
      group_.wait(request_, op_);
    } catch (const Error&) {
      // Already reported by the error being unwound.
    }
  }
  MpiPending(const MpiPending&) = delete;
  MpiPending& operator=(const MpiPending&) = delete;
  void wait() override {
    InFlight in_flight(op_);
    group_.wait(request_, op_);
  }
  MPI_Request& request() { return request_; }

 private:
  const MpiProcessGroup& group_;
  std::string op_;
  MPI_Request request_ = MPI_REQUEST_NULL;
};

}  // namespace

MpiProcessGroup::MpiProcessGroup(double timeout_s) : timeout_s_(timeout_s) {
  ensure_mpi_initialised();
  check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup(MPI_COMM_WORLD)");
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  g_rank_for_signal = rank_;
  struct sigaction action {};
  action.sa_handler = on_terminate;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
}

MpiProcessGroup::~MpiProcessGroup() {
  int finalised = 0;
  MPI_Finalized(&finalised);
  // A communicator with an abandoned collective is left alone: freeing it would wait
  // for ranks that may never come.
  if (!finalised && comm_ != MPI_COMM_NULL && !abandoned_) MPI_Comm_free(&comm_);
}

std::string MpiProcessGroup::describe() const {
  char host[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(host, &len);
  return "mpi: rank " + std::to_string(rank_) + " of " + std::to_string(size_) + " on " +
         std::string(host, static_cast<std::size_t>(len));
}

void MpiProcessGroup::check(int rc, std::string_view op) const {
  if (rc == MPI_SUCCESS) return;
  throw DeviceError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": MPI collective '" +
                    std::string(op) + "' failed: " + mpi_error_text(rc));
}

void MpiProcessGroup::wait(MPI_Request& request, std::string_view op) const {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (;;) {
    int done = 0;
    check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), op);
    if (done) return;
    const auto waited = Clock::now() - start;
    if (timeout_s_ > 0 && std::chrono::duration<double>(waited).count() > timeout_s_) {
      // The request cannot be cancelled (collectives are not cancellable); the caller
      // ends the job with abort_job().
      request = MPI_REQUEST_NULL;
      abandoned_ = true;
      throw DeviceError("rank " + std::to_string(rank_) + " of " + std::to_string(size_) + ": collective '" +
                        std::string(op) + "' did not complete within " + std::to_string(timeout_s_) +
                        " s (train.collective_timeout_s): another rank is dead, stuck or in a different collective");
    }
    if (waited < kSpinFor) std::this_thread::yield();
    else std::this_thread::sleep_for(kPollSleep);
  }
}

int MpiProcessGroup::count_of(int64_t n, std::string_view op, const char* what) const {
  if (n < 0 || n > INT_MAX)
    throw DeviceError("rank " + std::to_string(rank_) + ": collective '" + std::string(op) + "': " + what + " of " +
                      std::to_string(n) + " bytes is outside MPI's count range [0, 2^31 - 1]");
  return static_cast<int>(n);
}

void MpiProcessGroup::all_reduce_sum(std::span<float> data, std::string_view op) {
  all_reduce_sum_start(data, op)->wait();
}

void MpiProcessGroup::all_reduce_sum(std::span<double> data, std::string_view op) {
  InFlight in_flight(op);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), count_of(static_cast<int64_t>(data.size()), op, "a reduction"),
                       MPI_DOUBLE, MPI_SUM, comm_, &request),
        op);
  wait(request, op);
}

std::unique_ptr<PendingCollective> MpiProcessGroup::all_reduce_sum_start(std::span<float> data, std::string_view op) {
  auto pending = std::make_unique<MpiPending>(*this, std::string(op));
  check(MPI_Iallreduce(MPI_IN_PLACE, data.data(), count_of(static_cast<int64_t>(data.size()), op, "a reduction"),
                       MPI_FLOAT, MPI_SUM, comm_, &pending->request()),
        op);
  return pending;
}

void MpiProcessGroup::all_to_all_v(const void* send, std::span<const int64_t> send_bytes, void* recv,
                                   std::span<const int64_t> recv_bytes, std::string_view op) {
  const auto n = static_cast<std::size_t>(size_);
  if (send_bytes.size() != n || recv_bytes.size() != n)
    throw InternalError("rank " + std::to_string(rank_) + ": " + std::string(op) + ": byte counts for " +
                        std::to_string(send_bytes.size()) + " ranks, the group has " + std::to_string(size_));
  std::vector<int> sc(n), sd(n), rc(n), rd(n);
  int64_t s_at = 0, r_at = 0;
  for (std::size_t r = 0; r < n; ++r) {
    sc[r] = count_of(send_bytes[r], op, "a send");
    rc[r] = count_of(recv_bytes[r], op, "a receive");
    sd[r] = count_of(s_at, op, "a send displacement");
    rd[r] = count_of(r_at, op, "a receive displacement");
    s_at += send_bytes[r];
    r_at += recv_bytes[r];
  }
  // MPI rejects null buffers on some paths even for zero counts.
  char dummy_send = 0, dummy_recv = 0;
  InFlight in_flight(op);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ialltoallv(send ? send : &dummy_send, sc.data(), sd.data(), MPI_BYTE, recv ? recv : &dummy_recv,
                       rc.data(), rd.data(), MPI_BYTE, comm_, &request),
        op);
  wait(request, op);
}

void MpiProcessGroup::all_gather(const void* send, int64_t bytes, void* recv, std::string_view op) {
  InFlight in_flight(op);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Iallgather(send, count_of(bytes, op, "a block"), MPI_BYTE, recv, count_of(bytes, op, "a block"), MPI_BYTE,
                       comm_, &request),
        op);
  wait(request, op);
}

void MpiProcessGroup::broadcast(void* data, int64_t bytes, int root, std::string_view op) {
  if (root < 0 || root >= size_)
    throw InternalError("rank " + std::to_string(rank_) + ": " + std::string(op) + ": root " + std::to_string(root) +
                        " is not a rank of " + std::to_string(size_));
  InFlight in_flight(op);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibcast(data, count_of(bytes, op, "a broadcast"), MPI_BYTE, root, comm_, &request), op);
  wait(request, op);
}

void MpiProcessGroup::barrier(std::string_view op) {
  InFlight in_flight(op);
  MPI_Request request = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_, &request), op);
  wait(request, op);
}

void mpi_abort_if_running(int exit_code) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (initialised && !finalised) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

}  // namespace hetrec::dist
#endif

#pragma once
// Run-time compilation of device code (NVRTC), loading of the compiled image and launches
// of its kernels: the tuner compiles kernel variants with it, and the engine compiles the
// tuned variant it loads at start. Compilation needs no device; loading does.
#include <cstddef>
#include <string>
#include <vector>

#include "gpu/platform.h"

namespace hetrec::gpu {

// A header the program includes by `name` ("kernels/row_vector.cuh"), with its text.
struct RtcHeader {
  std::string name;
  std::string text;
};

struct RtcProgram {
  std::string name;                   // for messages, e.g. "embedding_bag_forward.cu"
  std::string source;                 // the translation unit
  std::string name_expression;        // the kernel to keep, e.g. "ns::kernel<float, 4>"
  std::vector<RtcHeader> headers;     // headers beyond the standard ones gpu/rtc.cpp supplies
  std::vector<std::string> options;   // extra compiler options ("-DNAME=1")
};

struct RtcBinary {
  bool ok = false;
  std::string log;           // the compiler's log (errors, warnings)
  std::string lowered_name;  // the mangled name of name_expression
  std::vector<char> image;   // the device binary (cubin) for the requested architecture
};

// Compiles `program` for compute capability major.minor. Never throws for a program that
// does not compile (ok = false, log says why); throws DeviceError when the compiler
// itself is unavailable (the HIP build).
RtcBinary rtc_compile(const RtcProgram& program, int compute_major, int compute_minor);

// What the compiled kernel needs per thread and block.
struct KernelResources {
  int registers = 0;                 // per thread
  std::size_t static_shared_bytes = 0;
  std::size_t local_bytes = 0;       // per thread; above zero means register spills or stack arrays
  int max_threads_per_block = 0;     // the most a launch may use with these resources
};

// A kernel loaded from a compiled image onto the current device. Move-only.
class RtcKernel {
 public:
  explicit RtcKernel(const RtcBinary& binary);
  ~RtcKernel();
  RtcKernel(RtcKernel&& o) noexcept;
  RtcKernel& operator=(RtcKernel&& o) noexcept;
  RtcKernel(const RtcKernel&) = delete;
  RtcKernel& operator=(const RtcKernel&) = delete;

  KernelResources resources() const;
  // Lets launches request up to `bytes` of dynamic shared memory (above 48 KB a kernel
  // must opt in).
  void allow_dynamic_shared_memory(std::size_t bytes) const;
  // Blocks of `threads` threads (and `dynamic_shared_bytes` each) one multiprocessor
  // holds at once: what a persistent grid launches per multiprocessor.
  int resident_blocks(int threads, std::size_t dynamic_shared_bytes) const;
  // args[i] points at the i-th kernel argument; the grid is grid x grid_y blocks. Throws
  // DeviceError when the launch fails.
  void launch(unsigned grid, unsigned block, std::size_t shared_bytes, stream_t stream, void** args,
              unsigned grid_y = 1) const;

 private:
  void release() noexcept;
  void* loaded_code_ = nullptr;  // the loaded image
  void* kernel_ = nullptr;   // the kernel within it
  std::string name_;
};

}  // namespace hetrec::gpu

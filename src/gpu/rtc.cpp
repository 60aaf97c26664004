#include "gpu/rtc.h"

#include <cstdio>
#include <utility>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/kernel_attributes.h"

#if !defined(HETREC_GPU_HIP)
#include <nvrtc.h>
#endif

namespace hetrec::gpu {

#if defined(HETREC_GPU_HIP)

// hipRTC has the same shape as NVRTC, but this build has no run-time compilation path
// for HIP yet: say so instead of pretending.
RtcBinary rtc_compile(const RtcProgram&, int, int) {
  throw DeviceError("run-time kernel compilation is not available in the HIP build (only with CUDA/NVRTC)");
}
RtcKernel::RtcKernel(const RtcBinary&) {
  throw DeviceError("run-time kernel compilation is not available in the HIP build (only with CUDA/NVRTC)");
}
RtcKernel::~RtcKernel() = default;
RtcKernel::RtcKernel(RtcKernel&& o) noexcept
    : loaded_code_(std::exchange(o.loaded_code_, nullptr)), kernel_(std::exchange(o.kernel_, nullptr)), name_(std::move(o.name_)) {}
RtcKernel& RtcKernel::operator=(RtcKernel&& o) noexcept {
  loaded_code_ = std::exchange(o.loaded_code_, nullptr);
  kernel_ = std::exchange(o.kernel_, nullptr);
  name_ = std::move(o.name_);
  return *this;
}
void RtcKernel::release() noexcept {}
KernelResources RtcKernel::resources() const { return {}; }
void RtcKernel::allow_dynamic_shared_memory(std::size_t) const {}
int RtcKernel::resident_blocks(int, std::size_t) const { return 0; }
void RtcKernel::launch(unsigned, unsigned, std::size_t, stream_t, void**, unsigned) const {}

#else

namespace {

// NVRTC has no standard library headers. The kernels include <cstdint> for the
// fixed-width integers and gpu/half.h includes <math.h> and <cstring> for the host pass;
// in device code NVRTC provides the math functions itself, so these stand in.
const std::vector<RtcHeader>& standard_headers() {
  static const std::vector<RtcHeader> headers = {
      {"cstdint",
       "#pragma once\n"
       "typedef signed char int8_t; typedef short int16_t; typedef int int32_t; typedef long long int64_t;\n"
       "typedef unsigned char uint8_t; typedef unsigned short uint16_t; typedef unsigned int uint32_t;\n"
       "typedef unsigned long long uint64_t; typedef unsigned long long uintptr_t;\n"
       "namespace std { using ::int8_t; using ::int16_t; using ::int32_t; using ::int64_t; using ::uint8_t;\n"
       "using ::uint16_t; using ::uint32_t; using ::uint64_t; using ::uintptr_t; }\n"},
      {"math.h", "#pragma once\n"},
      {"cstring", "#pragma once\n"},
  };
  return headers;
}

void check_nvrtc(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw DeviceError(std::string(call) + " failed: " + nvrtcGetErrorString(r));
}

}  // namespace

RtcBinary rtc_compile(const RtcProgram& program, int compute_major, int compute_minor) {
  std::vector<const char*> header_texts, header_names;
  for (const auto* list : {&standard_headers(), &program.headers})
    for (const RtcHeader& h : *list) {
      header_texts.push_back(h.text.c_str());
      header_names.push_back(h.name.c_str());
    }
  nvrtcProgram prog = nullptr;
  check_nvrtc(nvrtcCreateProgram(&prog, program.source.c_str(), program.name.c_str(),
                                 static_cast<int>(header_texts.size()), header_texts.data(), header_names.data()),
              "nvrtcCreateProgram");
  RtcBinary out;
  try {
    check_nvrtc(nvrtcAddNameExpression(prog, program.name_expression.c_str()), "nvrtcAddNameExpression");
    // A real architecture (sm_XX), so the result is a cubin the driver loads without a
    // further JIT step, and its resource usage is final.
    const std::string arch = "-arch=sm_" + std::to_string(compute_major * 10 + compute_minor);
    // -default-device: unannotated constexpr helpers (as nvcc's --expt-relaxed-constexpr
    // allows in device code) compile as device functions.
    std::vector<std::string> opts = {arch, "-std=c++20", "-lineinfo", "-default-device"};
    opts.insert(opts.end(), program.options.begin(), program.options.end());
    std::vector<const char*> opt_ptrs;
    for (const auto& o : opts) opt_ptrs.push_back(o.c_str());
    const nvrtcResult compiled = nvrtcCompileProgram(prog, static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
    std::size_t log_size = 0;
    check_nvrtc(nvrtcGetProgramLogSize(prog, &log_size), "nvrtcGetProgramLogSize");
    out.log.resize(log_size);
    if (log_size) check_nvrtc(nvrtcGetProgramLog(prog, out.log.data()), "nvrtcGetProgramLog");
    while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
    if (compiled == NVRTC_SUCCESS) {
      const char* lowered = nullptr;
      check_nvrtc(nvrtcGetLoweredName(prog, program.name_expression.c_str(), &lowered), "nvrtcGetLoweredName");
      out.lowered_name = lowered;
      std::size_t size = 0;
      check_nvrtc(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
      out.image.resize(size);
      check_nvrtc(nvrtcGetCUBIN(prog, out.image.data()), "nvrtcGetCUBIN");
      out.ok = size > 0;
      if (!out.ok) out.log += "\nno device binary produced";
    } else if (out.log.empty()) {
      out.log = nvrtcGetErrorString(compiled);
    }
  } catch (...) {
    (void)nvrtcDestroyProgram(&prog);
    throw;
  }
  (void)nvrtcDestroyProgram(&prog);
  return out;
}

RtcKernel::RtcKernel(const RtcBinary& binary) : name_(binary.lowered_name) {
  if (!binary.ok) throw InternalError("RtcKernel: the program did not compile: " + binary.log);
  cudaLibrary_t library = nullptr;
  HETREC_GPU_CHECK(cudaLibraryLoadData(&library, binary.image.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  loaded_code_ = library;
  cudaKernel_t kernel = nullptr;
  try {
    HETREC_GPU_CHECK(cudaLibraryGetKernel(&kernel, library, binary.lowered_name.c_str()));
  } catch (...) {
    release();
    throw;
  }
  kernel_ = kernel;
}

RtcKernel::~RtcKernel() { release(); }

void RtcKernel::release() noexcept {
  if (loaded_code_ && cudaLibraryUnload(static_cast<cudaLibrary_t>(loaded_code_)) != cudaSuccess)
    std::fprintf(stderr, "hetrec: cudaLibraryUnload failed\n");
  loaded_code_ = nullptr;
  kernel_ = nullptr;
}

RtcKernel::RtcKernel(RtcKernel&& o) noexcept
    : loaded_code_(std::exchange(o.loaded_code_, nullptr)), kernel_(std::exchange(o.kernel_, nullptr)), name_(std::move(o.name_)) {}

RtcKernel& RtcKernel::operator=(RtcKernel&& o) noexcept {
  if (this != &o) {
    release();
    loaded_code_ = std::exchange(o.loaded_code_, nullptr);
    kernel_ = std::exchange(o.kernel_, nullptr);
    name_ = std::move(o.name_);
  }
  return *this;
}

KernelResources RtcKernel::resources() const {
  cudaFuncAttributes attr{};
  HETREC_GPU_CHECK(cudaFuncGetAttributes(&attr, static_cast<const void*>(kernel_)));
  KernelResources r;
  r.registers = attr.numRegs;
  r.static_shared_bytes = attr.sharedSizeBytes;
  r.local_bytes = attr.localSizeBytes;
  r.max_threads_per_block = attr.maxThreadsPerBlock;
  return r;
}

void RtcKernel::allow_dynamic_shared_memory(std::size_t bytes) const {
  HETREC_GPU_CHECK(cudaFuncSetAttribute(static_cast<const void*>(kernel_), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

int RtcKernel::resident_blocks(int threads, std::size_t dynamic_shared_bytes) const {
  return resident_blocks_per_multiprocessor(static_cast<const void*>(kernel_), threads, dynamic_shared_bytes);
}

void RtcKernel::launch(unsigned grid, unsigned block, std::size_t shared_bytes, stream_t stream, void** args,
                       unsigned grid_y) const {
  HETREC_GPU_CHECK(cudaLaunchKernel(static_cast<const void*>(kernel_), dim3(grid, grid_y), dim3(block), args,
                                    shared_bytes, stream));
}

#endif

}  // namespace hetrec::gpu

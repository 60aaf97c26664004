#pragma once
// The one place that knows which GPU vendor we build for. Every other file of hetrec
// writes the CUDA runtime spelling (cudaMalloc, cudaStream_t, ...) only through this
// header and the gpu/ wrappers; under HIP the macros below map those names to HIP, so
// the very same .cu sources compile with hipcc.
//
// Also here: the warp (wavefront) width as a compile-time constant, host/device
// qualifiers, and the 16-bit float types.
#include <cstdint>

#if defined(__HIP_PLATFORM_AMD__) || defined(HETREC_WITH_HIP)
#define HETREC_GPU_HIP 1
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
// ROCm 5.7 added hip_bf16.h (__hip_bfloat16); older releases, such as the HIP 5.2 that
// Debian 12 ships, have only hip_bfloat16.h (the hip_bfloat16 class).
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#define HETREC_HIP_BF16_TYPE __hip_bfloat16
#else
#include <hip/hip_bfloat16.h>
#define HETREC_HIP_BF16_TYPE hip_bfloat16
#endif

// ---- runtime API: CUDA name -> HIP name ----
#define cudaDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDeviceProp hipDeviceProp_t
#define cudaDeviceSynchronize hipDeviceSynchronize
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaError_t hipError_t
#define cudaErrorInsufficientDriver hipErrorInsufficientDriver
#define cudaErrorMemoryAllocation hipErrorOutOfMemory
#define cudaErrorNoDevice hipErrorNoDevice
#define cudaErrorNotReady hipErrorNotReady
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDefault hipEventDefault
#define cudaEventDestroy hipEventDestroy
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventQuery hipEventQuery
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEvent_t hipEvent_t
#define cudaFree hipFree
#define cudaFreeHost hipHostFree
#define cudaFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#define cudaFuncSetAttribute hipFuncSetAttribute
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetErrorName hipGetErrorName
#define cudaGetErrorString hipGetErrorString
#define cudaGetLastError hipGetLastError
#define cudaGraphDestroy hipGraphDestroy
#define cudaGraphExecDestroy hipGraphExecDestroy
#define cudaGraphExec_t hipGraphExec_t
#define cudaGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define cudaGraphLaunch hipGraphLaunch
#define cudaGraph_t hipGraph_t
#define cudaHostAlloc hipHostMalloc
#define cudaHostAllocDefault hipHostMallocDefault
#define cudaHostAllocMapped hipHostMallocMapped
#define cudaHostGetDevicePointer hipHostGetDevicePointer
#define cudaMalloc hipMalloc
#define cudaMallocHost hipHostMalloc
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDefault hipMemcpyDefault
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemsetAsync hipMemsetAsync
#define cudaOccupancyMaxActiveBlocksPerMultiprocessor hipOccupancyMaxActiveBlocksPerMultiprocessor
#define cudaPeekAtLastError hipPeekAtLastError
#define cudaSetDevice hipSetDevice
#define cudaStreamBeginCapture hipStreamBeginCapture
#define cudaStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define cudaStreamCaptureStatus hipStreamCaptureStatus
#define cudaStreamCaptureStatusNone hipStreamCaptureStatusNone
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamEndCapture hipStreamEndCapture
#define cudaStreamIsCapturing hipStreamIsCapturing
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamQuery hipStreamQuery
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess

#elif defined(__CUDACC_RTC__)
// Compiled at run time by NVRTC (gpu/rtc.h): device code only, no runtime headers. The
// fixed-width integer types come from the small headers gpu/rtc.cpp supplies.
#define HETREC_GPU_CUDA 1
#define HETREC_GPU_RTC 1
#else
#define HETREC_GPU_CUDA 1
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define HETREC_HD __host__ __device__
#define HETREC_DEVICE __device__
#else
#define HETREC_HD
#define HETREC_DEVICE
#endif

namespace hetrec::gpu {

#if !defined(HETREC_GPU_RTC)
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
#endif

// Threads of one warp (NVIDIA) or wavefront (AMD). Every warp-level kernel sizes its
// shuffles, ballots and sub-warp groups from this constant; none may assume 32.
#if defined(HETREC_GPU_HIP)
#if defined(__HIP_DEVICE_COMPILE__) && defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int kWarpSize = __AMDGCN_WAVEFRONT_SIZE;
#if defined(HETREC_HIP_WARP_SIZE)
static_assert(HETREC_HIP_WARP_SIZE == __AMDGCN_WAVEFRONT_SIZE,
              "host launch configuration and device code disagree on the wavefront width");
#endif
#elif defined(HETREC_HIP_WARP_SIZE)
// The host pass of hipcc has no target, so the build names the wavefront width of the
// architecture it compiles for (64 on CDNA: MI200, MI300, MI350).
inline constexpr int kWarpSize = HETREC_HIP_WARP_SIZE;
#else
inline constexpr int kWarpSize = 64;
#endif
using lane_mask_t = uint64_t;  // __ballot returns one bit per lane of a 64-wide wavefront
#else
inline constexpr int kWarpSize = 32;
using lane_mask_t = uint32_t;
#endif
static_assert(kWarpSize == 32 || kWarpSize == 64, "warp width must be 32 or 64");
static_assert(sizeof(lane_mask_t) * 8 >= kWarpSize, "lane mask narrower than a warp");

// 16-bit float types of the vendor (used by cuBLASLt-facing code; kernels store rows
// as raw uint16_t bits and convert with gpu/half.h so results match core/dtype.h).
#if defined(HETREC_GPU_HIP)
using half_t = __half;
using bfloat16_t = HETREC_HIP_BF16_TYPE;
#elif defined(HETREC_GPU_RTC)
// Run-time compiled kernels store 16-bit values as raw bits (gpu/half.h).
#else
using half_t = __half;
using bfloat16_t = __nv_bfloat16;
#endif

}  // namespace hetrec::gpu

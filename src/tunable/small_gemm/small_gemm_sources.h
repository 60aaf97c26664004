#pragma once
// The small-GEMM kernels' device sources embedded as text (cmake/embed_sources.cmake,
// listed in kernels/CMakeLists.txt), apart from kernels/rtc_sources.h: their own hash
// marks small-GEMM winners stale when these sources change, and adding them did not
// change the other tuned kernels' hash.
#include <string>
#include <vector>

#include "gpu/rtc.h"

namespace hetrec::kernels {

// {path below src/, text}: tunable/small_gemm/small_gemm_kernel.cuh and what it includes.
const std::vector<gpu::RtcHeader>& small_gemm_source_files();

// FNV-1a (64 bit) over the files' names and texts, as kernels/rtc_sources.h hashes its own.
std::string small_gemm_sources_hash();

}  // namespace hetrec::kernels

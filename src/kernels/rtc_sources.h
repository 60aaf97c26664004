#pragma once
// The device headers that kernels compiled at run time include, embedded into the build
// as text (cmake/embed_sources.cmake), so that NVRTC compiles the very source nvcc did.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gpu/rtc.h"

namespace hetrec::kernels {

// {path below src/, text}: tunable/embedding_forward/embedding_bag_forward_kernel.cuh,
// tunable/dot_interaction/dot_interaction_kernel.cuh, tunable/sparse_update/sparse_update_kernel.cuh,
// tunable/dot_interaction/dot_interaction_backward_kernel.cuh and what they include.
const std::vector<gpu::RtcHeader>& rtc_source_files();

// FNV-1a (64 bit) over every embedded file's name and text, as 16 hex digits: a tuned
// winner recorded against other sources is stale.
std::string rtc_sources_hash();

// FNV-1a (64 bit) of any text, as 16 hex digits.
std::string fnv1a_hex(const std::string& text);

// The device type of a row or output element type in a run-time compiled kernel's
// template arguments ("float", "hetrec::kernels::Bf16Bits", ...); nullptr for others.
const char* rtc_element_type(DType t);

}  // namespace hetrec::kernels

#pragma once
// The cuBLASLt workspace the GPU model hands its GEMM object (model/gpu/gpu_dlrm.cpp), and
// the side lane's of the same size (GpuModelOptions::overlap_weight_gradients). Plain C++,
// for the GPU model and the planner's memory model (plan/memory_model.cpp).
#include <cstddef>

namespace hetrec::inline model::gpu_model {

// 32 MiB: the workspace the cuBLAS documentation recommends for Hopper ("cublasSetWorkspace",
// https://docs.nvidia.com/cuda/cublas/#cublassetworkspace), also enough for earlier GPUs.
inline constexpr std::size_t kGemmWorkspaceBytes = std::size_t{32} << 20;

// Workspaces the GPU model allocates: one, and the side lane's when it runs.
constexpr int gemm_workspaces(bool overlap_weight_gradients) { return overlap_weight_gradients ? 2 : 1; }

}  // namespace hetrec::model::gpu_model

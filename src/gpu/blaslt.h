#pragma once
// The BLAS-Lt shim: cuBLASLt on CUDA, hipBLASLt on HIP. Code above this layer writes the
// cuBLASLt spelling; under HIP the macros below map it to hipBLASLt. Every status is
// checked with HETREC_BLAS_CHECK.
#include <string>

#include "gpu/platform.h"

#if defined(HETREC_GPU_HIP)
#include <hipblaslt/hipblaslt.h>

#define CUBLASLT_EPILOGUE_BGRADA HIPBLASLT_EPILOGUE_BGRADA
#define CUBLASLT_EPILOGUE_BGRADB HIPBLASLT_EPILOGUE_BGRADB
#define CUBLASLT_EPILOGUE_BIAS HIPBLASLT_EPILOGUE_BIAS
#define CUBLASLT_EPILOGUE_DEFAULT HIPBLASLT_EPILOGUE_DEFAULT
#define CUBLASLT_EPILOGUE_DRELU HIPBLASLT_EPILOGUE_DRELU
#define CUBLASLT_EPILOGUE_DRELU_BGRAD HIPBLASLT_EPILOGUE_DRELU_BGRAD
#define CUBLASLT_EPILOGUE_RELU HIPBLASLT_EPILOGUE_RELU
#define CUBLASLT_EPILOGUE_RELU_AUX_BIAS HIPBLASLT_EPILOGUE_RELU_AUX_BIAS
#define CUBLASLT_EPILOGUE_RELU_BIAS HIPBLASLT_EPILOGUE_RELU_BIAS
#define CUBLASLT_MATMUL_DESC_A_SCALE_POINTER HIPBLASLT_MATMUL_DESC_A_SCALE_POINTER
#define CUBLASLT_MATMUL_DESC_B_SCALE_POINTER HIPBLASLT_MATMUL_DESC_B_SCALE_POINTER
#define CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE HIPBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
#define CUBLASLT_MATMUL_DESC_BIAS_POINTER HIPBLASLT_MATMUL_DESC_BIAS_POINTER
#define CUBLASLT_MATMUL_DESC_EPILOGUE HIPBLASLT_MATMUL_DESC_EPILOGUE
#define CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD
#define CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER HIPBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER
#define CUBLASLT_MATMUL_DESC_TRANSA HIPBLASLT_MATMUL_DESC_TRANSA
#define CUBLASLT_MATMUL_DESC_TRANSB HIPBLASLT_MATMUL_DESC_TRANSB
#define CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define CUBLAS_COMPUTE_32F HIPBLAS_COMPUTE_32F
#define CUBLAS_COMPUTE_32F_FAST_TF32 HIPBLAS_COMPUTE_32F_FAST_TF32
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUBLAS_OP_T HIPBLAS_OP_T
#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define CUDA_R_16BF HIP_R_16BF
#define CUDA_R_8F_E4M3 HIP_R_8F_E4M3
#define CUDA_R_16F HIP_R_16F
#define CUDA_R_32F HIP_R_32F
#define cublasComputeType_t hipblasComputeType_t
#define cublasLtCreate hipblasLtCreate
#define cublasLtDestroy hipblasLtDestroy
#define cublasLtEpilogue_t hipblasLtEpilogue_t
#define cublasLtHandle_t hipblasLtHandle_t
#define cublasLtMatmul hipblasLtMatmul
#define cublasLtMatmulAlgoGetHeuristic hipblasLtMatmulAlgoGetHeuristic
#define cublasLtMatmulAlgo_t hipblasLtMatmulAlgo_t
#define cublasLtMatmulDescCreate hipblasLtMatmulDescCreate
#define cublasLtMatmulDescDestroy hipblasLtMatmulDescDestroy
#define cublasLtMatmulDescSetAttribute hipblasLtMatmulDescSetAttribute
#define cublasLtMatmulDescAttributes_t hipblasLtMatmulDescAttributes_t
#define cublasLtMatmulDesc_t hipblasLtMatmulDesc_t
#define cublasLtMatmulHeuristicResult_t hipblasLtMatmulHeuristicResult_t
#define cublasLtMatmulPreferenceCreate hipblasLtMatmulPreferenceCreate
#define cublasLtMatmulPreferenceDestroy hipblasLtMatmulPreferenceDestroy
#define cublasLtMatmulPreferenceSetAttribute hipblasLtMatmulPreferenceSetAttribute
#define cublasLtMatmulPreference_t hipblasLtMatmulPreference_t
#define cublasLtMatrixLayoutCreate hipblasLtMatrixLayoutCreate
#define cublasLtMatrixLayoutDestroy hipblasLtMatrixLayoutDestroy
#define cublasLtMatrixLayout_t hipblasLtMatrixLayout_t
#define cublasOperation_t hipblasOperation_t
#define cublasStatus_t hipblasStatus_t
#define cudaDataType hipDataType
#else
#include <cublasLt.h>
#endif

namespace hetrec::gpu {

// Throws DeviceError naming the call, file, line and the library's status name.
void blas_check(cublasStatus_t status, const char* call, const char* file, int line);
std::string blas_status_text(cublasStatus_t status);
// The BLAS-Lt library and its version, e.g. "cublaslt 130100" (HIP: "hipblaslt"; its
// version needs a handle, and the runtime version stands for it in validators).
std::string blas_lt_library_text();

}  // namespace hetrec::gpu

#define HETREC_BLAS_CHECK(call) ::hetrec::gpu::blas_check((call), #call, __FILE__, __LINE__)

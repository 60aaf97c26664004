#pragma once
// The GEMM shape suite the cuBLASLt oracle (`hetrec gemm bench`) times: the forward,
// data-gradient and weight-gradient GEMMs of every dense layer of the DLRM and DLRM-DCNv2
// models the engine trains, at batches 1K..128K, in every precision the engine can run.
//
// GEMMs are in the engine's row-major language (gemm/cublaslt_gemm.h, model/gpu/gpu_mlp.cpp):
//   forward  y (B x out)  = x (B x in) W^T         m=B   n=out k=in  trans_b
//   dgrad    dx (B x in)  = dz (B x out) W          m=B   n=in  k=out
//   wgrad    dW (out x in) = dz^T (out x B) x       m=out n=in  k=B   trans_a
// A low-rank cross layer (DCNv2) is two such layers, in -> rank and rank -> in.
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace hetrec::inline gemm_perf {

enum class GemmPass { forward, dgrad, wgrad };

// One layer of a model's dense network: `in` -> `out` features, with a ReLU after it or not.
struct DenseLayerShape {
  std::string model;  // e.g. "dlrm_mlperf"
  std::string layer;  // e.g. "bot0", "top3", "cross1v"
  int64_t in = 0;
  int64_t out = 0;
  bool relu = false;
};

struct GemmSuiteShape {
  std::string id;  // stable: "<model>.<layer>.<pass>.b<batch>.<precision>"
  std::string model, layer;
  GemmPass pass = GemmPass::forward;
  int64_t batch = 0;
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  std::string precision;  // fp32, tf32, bf16, fp16, fp8 (e4m3 A and B)
  DType d_type = DType::f32;
  std::string epilogue;  // none, bias, relu_bias (forward GEMMs carry the layer's bias)
};

std::string_view gemm_pass_name(GemmPass p);

// The dense layers of the models the suite covers (configs/demo.toml, MLPerf DLRM,
// configs/dlrm_dcnv2_mlperf.toml and two other ranking widths), in a fixed order.
std::vector<DenseLayerShape> gemm_suite_layers();

// The three GEMMs of one layer at one batch in one precision (the forward only for fp8,
// and nothing for fp8 where cuBLASLt refuses the shape: see gemm_suite.cpp).
std::vector<GemmSuiteShape> gemm_layer_shapes(const DenseLayerShape& layer, int64_t batch,
                                              const std::string& precision);

// The whole suite, batch-major (smallest batch first, so a run cut short by its time
// budget loses the most expensive shapes), then layer, precision and pass. Ids are unique,
// and so are the GEMMs (shape, layouts, precision, epilogue).
std::vector<GemmSuiteShape> gemm_suite();

}  // namespace hetrec::gemm_perf::gemm_perf

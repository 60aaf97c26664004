#pragma once
// The GPU backend of DLRM and DLRM-DCNv2 on one device, fp32, tf32, bf16 or fp16 GEMMs
// (16-bit: fp32 master weights; fp16 with dynamic loss scaling; see docs/architecture.md),
// tables in device or mapped host memory:
//   dense features -> bottom MLP (cuBLASLt, bias + ReLU fused) -> row slot 0 of X
//   sparse bags -> table-batched embedding lookup -> row slots 1..T of X (B x (T+1) x D)
//   DLRM: dot interaction on X; DCNv2: cross net on X -> top MLP -> logit -> BCE
// Backward mirrors it; the embedding backward is fused with the sparse optimizer and the
// dense parameters are updated by one fused kernel over a flat buffer. The batch is
// copied from page-locked memory on its own stream. After the first step of a batch
// size, the whole step is captured as a CUDA graph and replayed (options.cuda_graph).
//
// Parameters start with the CPU model's values for the same config (model/dlrm.h), and
// state() has the CPU model's names, order, shapes and dtypes, as host tensors: they are
// copied out when state() is called, and copied back in before the next step or
// prediction (so writing into them, as a checkpoint restore does, changes the model).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/nccl_process_group.h"
#include "dist/process_group.h"
#include "dist/sharding.h"
#include "gemm/cublaslt_gemm.h"
#include "model/dlrm.h"
#include "model/gpu/tuned_small_gemms.h"
#include "model/model.h"
#include "model/model_config.h"

namespace hetrec::inline model {

struct GpuModelOptions {
  int device = 0;
  // fp32 matches the CPU backend; tf32 runs the GEMMs on tensor cores (10-bit mantissa
  // inputs), several times faster on large layers; bf16 and fp16 run them on 16-bit
  // copies of the operands (model.dense_dtype selects them; fp16 with dynamic loss
  // scaling, optim.loss_scale*).
  cublaslt::Precision precision = cublaslt::Precision::fp32;
  bool cuda_graph = true;
  // Records device events between the phases of every step (the step then runs eagerly,
  // never as a graph) so phase_ms() can report where the time goes.
  bool profile_phases = false;
  // Data parallel: the embedding lookups, exchanges and update run on a second stream
  // beside the dense layers that do not need them (forward: the bottom MLP; backward: the
  // bottom MLP, then the dense all-reduce and optimizer beside the embedding update). Off,
  // and whenever profile_phases is on, the step runs in one stream, phase after phase.
  bool overlap_exchanges = true;
  // Winners file of `hetrec tune` (tune/winners.h); empty: built-in kernel variants only.
  std::string tuned_kernels_file;
  // model.gemm_selection = "model": the small-GEMM kernels compete with cuBLASLt for the
  // narrow fp32 layers' GEMMs (model/gpu/model_small_gemms.h); off, cuBLASLt runs them all.
  bool model_small_gemms = true;
  // The MLPs' and the cross net's weight-gradient GEMMs run on a second stream beside the
  // chain of input gradients (model/gpu/side_lane.h, one more cuBLASLt workspace); off,
  // every GEMM runs in one stream. Off by default: beside the embedding overlap it gained
  // 1.2% on the capped step at batch 16384 and lost 0.4% on the full MLPerf step at 131072,
  // and alone it lost 5% on the capped step (bench/results/e2e-20261205-h100-overlaps-variants.json).
  bool overlap_weight_gradients = false;
  // One device, without loss scaling: the embedding backward's chunk sums and update run on
  // the embedding stream beside the bottom MLP's backward and the dense optimizer; off (and
  // whenever profile_phases is on), they follow them in the compute stream. Bit-identical
  // to one stream; on by default: 1.2% faster on the full MLPerf DLRM-DCNv2 step at batch
  // 131072 and 2.5% on the capped tables at 16384 (one H100 SXM,
  // bench/results/e2e-20261205-h100-overlaps-variants.json).
  bool overlap_embedding_backward = true;
};

class GpuModel : public Model {
 public:
  // Device milliseconds of each phase of the last train_step, in step order ("upload"
  // is the host's batch validation, packing and copy), when options.profile_phases.
  virtual std::vector<std::pair<std::string, double>> phase_ms() const = 0;
  // With options.profile_phases: every cuBLASLt GEMM of the last train_step, in call order,
  // with its device time (a timing event before and after each; cublaslt::Gemm::timings).
  virtual std::vector<cublaslt::Gemm::Timing> gemm_timings() const = 0;
  // fp16 dense compute: the current loss scale (read from the device); 1 in other
  // precisions. (Model::overflow_skipped_steps counts the steps it skipped.)
  virtual double loss_scale() const = 0;
  // How the GEMMs planned so far got their cuBLASLt configurations (model.gemm_selection).
  virtual cublaslt::Gemm::SelectionCounts gemm_selection_counts() const = 0;
  // model.gemm_selection = "model": the narrow GEMMs' choices between a small-GEMM kernel
  // and cuBLASLt so far (model/gpu/model_small_gemms.h).
  virtual std::vector<gpu_model::SmallGemmDecision> small_gemm_decisions() const = 0;
};

// Validates the configs as make_cpu_model does (same ConfigError keys), and throws
// ConfigError for what the GPU path does not support (an unknown model.host_tables name,
// model.embedding_dim too wide for the embedding kernels), DeviceError when no device is
// usable. model.dense_dtype = bf16 or fp16 overrides options.precision with it.
std::unique_ptr<GpuModel> make_gpu_model(const ModelConfig& model, const OptimConfig& optim,
                                         const GpuModelOptions& options = {});

// The same engine trained data-parallel over the ranks of an mpirun job, one GPU per rank
// (`devices`' device): the DistributedModel contract of model/dlrm.h (every rank passes
// the GLOBAL batch and computes samples [B r / N, B (r+1) / N)), with the tables sharded
// as `plan` says (model/gpu/sharded_embeddings.h), pooled embeddings and their gradients
// exchanged with NCCL all-to-alls, the dense gradients summed with one NCCL all-reduce of
// the flat gradient buffer, and the whole step, collectives included, captured as one
// CUDA graph. `host` (MPI) carries checkpoints and gather_full_state. Throws ConfigError
// as make_gpu_model does and for placements the GPU shards do not support.
class DistributedGpuModel : public DistributedModel {
 public:
  // As GpuModel::phase_ms, with the exchanges as phases of their own
  // (embedding_exchange, dense_all_reduce, embedding_grad_exchange).
  virtual std::vector<std::pair<std::string, double>> phase_ms() const = 0;
  virtual cublaslt::Gemm::SelectionCounts gemm_selection_counts() const = 0;
  virtual std::vector<gpu_model::SmallGemmDecision> small_gemm_decisions() const = 0;
};

std::unique_ptr<DistributedGpuModel> make_distributed_gpu_model(const ModelConfig& model, const OptimConfig& optim,
                                                             const GpuModelOptions& options,
                                                             const dist::ShardingPlan& plan,
                                                             dist::ProcessGroup& host, dist::NcclProcessGroup& devices);

}  // namespace hetrec::model::model

#include "train/model_export.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/exclusive_file.h"
#include "train/checkpoint.h"
#include "train/safetensors.h"

namespace hetrec::inline train {
namespace {

// The description's format name and version (docs/export.md); the version grows when a
// field changes meaning.
constexpr const char* kDescriptionFormat = "hetrec-model";
constexpr int kDescriptionVersion = 1;
// Metadata key of the safetensors file that holds the description's text as well.
constexpr const char* kDescriptionMetadataKey = "hetrec_model";
constexpr const char* kSafetensorsSuffix = ".safetensors";

void add_mlp(std::vector<ExportedParameter>& out, const std::string& role, int in, const std::vector<int>& widths) {
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const int layer = static_cast<int>(i);
    const std::string prefix = role + "." + std::to_string(i) + ".";
    out.push_back({prefix + "weight", role, "weight", layer, "", {widths[i], in}, DType::f32});
    out.push_back({prefix + "bias", role, "bias", layer, "", {widths[i]}, DType::f32});
    in = widths[i];
  }
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// True when writing `a` would replace the file `b` (the same path, or another name of it).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ea, eb, ee;
  const auto ca = std::filesystem::weakly_canonical(a, ea);
  const auto cb = std::filesystem::weakly_canonical(b, eb);
  if (!ea && !eb && ca == cb) return true;
  return std::filesystem::equivalent(a, b, ee) && !ee;  // false (with ee set) when either is missing
}

}  // namespace

std::vector<ExportedParameter> exported_parameters(const ModelConfig& m) {
  std::vector<ExportedParameter> out;
  add_mlp(out, "bottom_mlp", m.num_dense, m.bottom_mlp);
  if (m.arch == Arch::dcnv2 && m.cross_layers > 0) {
    const int64_t n = m.interaction_width();
    const int64_t r = m.cross_rank;
    for (int l = 0; l < m.cross_layers; ++l) {
      const std::string idx = std::to_string(l);
      if (r > 0) {
        out.push_back({"cross_net.W_kernels." + idx, "cross_net", "W_kernel", l, "", {n, r}, DType::f32});
        out.push_back({"cross_net.V_kernels." + idx, "cross_net", "V_kernel", l, "", {r, n}, DType::f32});
      } else {
        out.push_back({"cross_net.kernels." + idx, "cross_net", "kernel", l, "", {n, n}, DType::f32});
      }
      out.push_back({"cross_net.bias." + idx, "cross_net", "bias", l, "", {n}, DType::f32});
    }
  }
  add_mlp(out, "top_mlp", m.interaction_width(), m.top_mlp);
  for (const TableConfig& t : m.tables)
    out.push_back({"embedding." + t.name + ".weight", "embedding", "weight", -1, t.name, {t.rows, m.embedding_dim},
                   m.row_dtype});
  return out;
}

std::string model_description(const ModelConfig& m, const std::string& checkpoint, int64_t step) {
  nlohmann::ordered_json j;
  j["format"] = kDescriptionFormat;
  j["version"] = kDescriptionVersion;
  j["arch"] = m.arch == Arch::dcnv2 ? "dcnv2" : "dlrm";
  j["num_dense"] = m.num_dense;
  j["embedding_dim"] = m.embedding_dim;
  nlohmann::ordered_json tables = nlohmann::ordered_json::array();
  for (const TableConfig& t : m.tables)
    tables.push_back({{"name", t.name},
                      {"rows", t.rows},
                      {"pooling", t.pooling == Pooling::mean ? "mean" : "sum"},
                      {"hotness", t.hotness},
                      {"variable_bags", t.variable_bags}});
  j["tables"] = tables;
  j["bottom_mlp"] = m.bottom_mlp;
  j["top_mlp"] = m.top_mlp;
  j["interaction_self"] = m.interaction_self;
  j["cross_layers"] = m.arch == Arch::dcnv2 ? m.cross_layers : 0;
  j["cross_rank"] = m.cross_rank;
  j["row_dtype"] = std::string(dtype_name(m.row_dtype));
  j["output"] = "logit";
  j["checkpoint"] = {{"path", checkpoint}, {"step", step}, {"model_signature", model_signature(m)}};
  nlohmann::ordered_json params = nlohmann::ordered_json::array();
  for (const ExportedParameter& p : exported_parameters(m)) {
    nlohmann::ordered_json e{{"name", p.name}, {"role", p.role}, {"kind", p.kind}};
    if (p.layer >= 0) e["layer"] = p.layer;
    if (!p.table.empty()) e["table"] = p.table;
    e["shape"] = p.shape;
    e["dtype"] = std::string(safetensors_dtype(p.dtype));
    params.push_back(std::move(e));
  }
  j["parameters"] = params;
  return j.dump(2) + "\n";
}

std::string description_path(const std::string& safetensors_path) {
  return std::filesystem::path(safetensors_path).replace_extension(".json").string();
}

ExportSummary export_safetensors(const ModelConfig& model, const std::string& checkpoint, const std::string& output) {
  const std::string suffix = kSafetensorsSuffix;
  if (output.size() <= suffix.size() || output.compare(output.size() - suffix.size(), suffix.size(), suffix) != 0)
    throw ConfigError("--output '" + output + "': expected a file name ending in " + suffix);
  const std::string description = description_path(output);
  for (const std::string& out : {output, description})
    if (same_file(out, checkpoint))
      throw ConfigError("--output '" + output + "': writing '" + out + "' would replace the checkpoint '" +
                        checkpoint + "' it is exported from");
  if (std::filesystem::is_directory(checkpoint))
    throw ConfigError("--checkpoint '" + checkpoint +
                      "' is a directory (a sharded checkpoint); export reads a single-file checkpoint (ckpt-*.hck)");

  CheckpointMeta meta;
  const std::vector<NamedTensor> state = read_checkpoint_tensors(checkpoint, &meta);
  const std::string signature = model_signature(model);
  if (meta.model_signature != signature)
    throw CheckpointError("checkpoint '" + checkpoint + "' was written for model '" + meta.model_signature +
                          "', the config describes '" + signature + "'");
  std::map<std::string, const Tensor*> by_name;
  for (const NamedTensor& nt : state) by_name[nt.name] = &nt.tensor;

  ExportSummary summary;
  std::vector<NamedTensor> tensors;
  for (const ExportedParameter& p : exported_parameters(model)) {
    const auto it = by_name.find(p.name);
    if (it == by_name.end())
      throw CheckpointError("checkpoint '" + checkpoint + "': no tensor '" + p.name + "', a parameter of the model");
    const Tensor& t = *it->second;
    if (t.dtype() != p.dtype || t.shape() != p.shape)
      throw CheckpointError("checkpoint '" + checkpoint + "': tensor '" + p.name + "' has dtype " +
                            std::string(dtype_name(t.dtype())) + " shape " + t.shape_str() + "; the model expects " +
                            std::string(dtype_name(p.dtype)) + " " + shape_text(p.shape));
    tensors.push_back({p.name, t});
    summary.bytes += static_cast<int64_t>(t.nbytes());
  }
  const std::string text = model_description(model, checkpoint, meta.step);
  write_safetensors(output, tensors, {{"format", "pt"}, {kDescriptionMetadataKey, text}});
  write_file_atomically(description, text);
  summary.safetensors = output;
  summary.description = description;
  summary.step = meta.step;
  summary.parameters = static_cast<int64_t>(tensors.size());
  return summary;
}

}  // namespace hetrec::train::train

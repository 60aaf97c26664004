#include "model/describe.h"

#include <cstdint>
#include <vector>

namespace hetrec::inline model {
namespace {

std::string widths_str(int in, const std::vector<int>& widths) {
  std::string s = std::to_string(in);
  for (int w : widths) s += "-" + std::to_string(w);
  return s;
}

}  // namespace

std::string describe_network(const ModelConfig& m) {
  int64_t rows = 0;
  for (const TableConfig& t : m.tables) rows += t.rows;
  std::string s = "bottom MLP " + widths_str(m.num_dense, m.bottom_mlp) + ", " + std::to_string(m.num_tables()) +
                  " tables (" + std::to_string(rows) + " rows, dim " + std::to_string(m.embedding_dim) + ", " +
                  std::string(dtype_name(m.row_dtype)) + " rows), ";
  if (m.arch == Arch::dlrm) {
    s += std::string("dot interaction") + (m.interaction_self ? " with self terms" : "");
  } else if (m.cross_layers == 0) {
    s += "no cross layers (concatenation only)";
  } else {
    s += std::to_string(m.cross_layers) + " cross layers" +
         (m.cross_rank > 0 ? " of rank " + std::to_string(m.cross_rank) : std::string(" (full rank)"));
  }
  return s + ", top MLP " + widths_str(m.interaction_width(), m.top_mlp);
}

}  // namespace hetrec::model::model

#include "python/numpy_batch.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "data/batch_checks.h"

namespace py = pybind11;

namespace hetrec::python {
namespace {

using IdArray = py::array_t<int64_t, py::array::c_style | py::array::forcecast>;

std::string shape_text(const py::array& a) {
  std::string s = "[";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
  return s + "]";
}

std::string dtype_text(const py::array& a) { return py::str(a.dtype()).cast<std::string>(); }

py::array as_array(const py::handle& h, const std::string& name) {
  if (!py::isinstance<py::array>(h))
    throw DataError(name + ": expected a NumPy array, got " + py::str(py::type::of(h)).cast<std::string>());
  return py::reinterpret_borrow<py::array>(h);
}

// A float32 array of the given shape (-1: any), C-contiguous on return.
py::array_t<float, py::array::c_style> float_array(const py::handle& h, const std::string& name,
                                                   const std::vector<py::ssize_t>& shape, const std::string& expected) {
  const py::array a = as_array(h, name);
  if (!a.dtype().is(py::dtype::of<float>()))
    throw DataError(name + ": expected dtype float32, got " + dtype_text(a));
  bool ok = a.ndim() == static_cast<py::ssize_t>(shape.size());
  for (std::size_t d = 0; ok && d < shape.size(); ++d) ok = shape[d] < 0 || a.shape(static_cast<py::ssize_t>(d)) == shape[d];
  if (!ok) throw DataError(name + ": expected shape " + expected + ", got " + shape_text(a));
  return py::array_t<float, py::array::c_style>::ensure(a);
}

// An integer id array as int64, C-contiguous.
IdArray id_array(const py::handle& h, const std::string& name) {
  const py::array a = as_array(h, name);
  if (!a.dtype().is(py::dtype::of<int32_t>()) && !a.dtype().is(py::dtype::of<int64_t>()))
    throw DataError(name + ": expected dtype int32 or int64, got " + dtype_text(a));
  return IdArray::ensure(a);
}

// Table t's ids of samples [begin, end): `ids` is [B] or [B, H] (one table) or [B, T] /
// [B, T, H] (every table, `t` selects).
void append_bags(Batch& batch, const IdArray& ids, bool all_tables, int t,
                 int64_t begin, int64_t end, const std::string& name, std::size_t& slot) {
  const py::ssize_t nd = ids.ndim();
  py::ssize_t hot = 1, stride_b = 1, offset_t = 0;
  if (all_tables) {
    hot = nd == 3 ? ids.shape(2) : 1;
    stride_b = ids.shape(1) * hot;
    offset_t = t * hot;
  } else {
    hot = nd == 2 ? ids.shape(1) : 1;
    stride_b = hot;
  }
  const int64_t* data = ids.data();
  for (int64_t b = begin; b < end; ++b) {
    for (py::ssize_t h = 0; h < hot; ++h) {
      const int64_t id = data[b * stride_b + offset_t + h];
      if (id < INT32_MIN || id > INT32_MAX)
        throw DataError(name + ": sample " + std::to_string(b) + " of table " + std::to_string(t) + ": id " +
                        std::to_string(id) + " does not fit in 32 bits");
      batch.ids.push_back(static_cast<int32_t>(id));
    }
    batch.offsets[++slot] = static_cast<int32_t>(batch.ids.size());
  }
}

}  // namespace

int64_t sample_count(const ModelConfig& model, const py::handle& dense) {
  const std::string expected = "[B, " + std::to_string(model.num_dense) + "] (model.num_dense)";
  return float_array(dense, "dense", {-1, model.num_dense}, expected).shape(0);
}

Batch batch_from_arrays(const ModelConfig& model, const py::handle& dense, const py::handle& sparse,
                        const py::handle& labels, int64_t begin, int64_t end) {
  const int tables = model.num_tables();
  const std::string dense_expected = "[B, " + std::to_string(model.num_dense) + "] (model.num_dense)";
  const auto d = float_array(dense, "dense", {-1, model.num_dense}, dense_expected);
  const int64_t b_total = d.shape(0);
  Batch batch;
  batch.reset(end - begin, model.num_dense, tables);
  batch.first_sample = begin;
  std::copy(d.data() + begin * model.num_dense, d.data() + end * model.num_dense, batch.dense.begin());
  if (!labels.is_none()) {
    const auto l = float_array(labels, "labels", {b_total}, "[" + std::to_string(b_total) + "] (B of dense)");
    std::copy(l.data() + begin, l.data() + end, batch.labels.begin());
  }
  std::size_t slot = 0;
  const std::string table_count = std::to_string(tables) + " (the model's tables)";
  if (py::isinstance<py::list>(sparse) || py::isinstance<py::tuple>(sparse)) {
    const py::sequence per_table = py::reinterpret_borrow<py::sequence>(sparse);
    if (static_cast<int>(per_table.size()) != tables)
      throw DataError("sparse: expected a list of " + table_count + " arrays, got " + std::to_string(per_table.size()));
    for (int t = 0; t < tables; ++t) {
      const std::string name = "sparse[" + std::to_string(t) + "]";
      const auto ids = id_array(per_table[static_cast<std::size_t>(t)], name);
      if ((ids.ndim() != 1 && ids.ndim() != 2) || ids.shape(0) != b_total)
        throw DataError(name + ": expected shape [" + std::to_string(b_total) + "] or [" + std::to_string(b_total) +
                        ", H] (B of dense), got " + shape_text(ids));
      append_bags(batch, ids, false, t, begin, end, name, slot);
    }
  } else {
    const auto ids = id_array(sparse, "sparse");
    if ((ids.ndim() != 2 && ids.ndim() != 3) || ids.shape(0) != b_total || ids.shape(1) != tables)
      throw DataError("sparse: expected shape [" + std::to_string(b_total) + ", " + table_count + "] or [" +
                      std::to_string(b_total) + ", " + std::to_string(tables) + ", H], got " + shape_text(ids));
    for (int t = 0; t < tables; ++t) append_bags(batch, ids, true, t, begin, end, "sparse", slot);
  }
  check_bag_ids(batch, model.tables);
  return batch;
}

}  // namespace hetrec::python

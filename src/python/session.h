#pragma once
// hetrec.Session: one run configuration and the model trained or loaded under it.
//   Session(config, overrides=None, recipe="")  config: a TOML path or a dict of tables
//   train(callback=None) -> summary dict       the trainer `hetrec train` runs; callback(record)
//                                              for each logged train step and evaluation
//   train_step(dense, sparse, labels) -> loss  one step on a batch of NumPy arrays
//   evaluate(dense=None, sparse=None, labels=None) -> {auc, log_loss, samples}
//   predict(dense, sparse) -> float32 logits [B]
//   load_checkpoint(path) -> step
// The GIL is released while the engine trains, evaluates or predicts; the callback takes
// it back for its own call.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>

#include "core/log.h"
#include "model/model.h"
#include "train/config.h"

namespace hetrec::python {

class Session {
 public:
  Session(const pybind11::object& config, const pybind11::object& overrides, const std::string& recipe);

  pybind11::dict train(const pybind11::object& callback);
  double train_step(const pybind11::handle& dense, const pybind11::handle& sparse, const pybind11::handle& labels);
  pybind11::dict evaluate(const pybind11::handle& dense, const pybind11::handle& sparse, const pybind11::handle& labels);
  pybind11::object predict(const pybind11::handle& dense, const pybind11::handle& sparse);
  int64_t load_checkpoint(const std::string& path);

  const RunConfig& config() const { return cfg_; }
  int64_t step() const { return step_; }
  const std::string& device() const { return device_; }

 private:
  Model& model();  // built on first use (the trained or loaded one once there is one)
  // Logits of every sample of the arrays, in slices of train.eval_batch_size.
  std::vector<float> logits_of(const pybind11::handle& dense, const pybind11::handle& sparse,
                               const pybind11::handle& labels, std::vector<float>* labels_out);

  RunConfig cfg_;
  std::unique_ptr<Logger> log_;  // the model may keep a reference
  std::unique_ptr<Model> model_;
  std::string device_;
  int64_t step_ = 0;
};

}  // namespace hetrec::python

#include "python/session.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "python/bindings.h"
#include "python/json_value.h"
#include "python/numpy_batch.h"
#include "python/py_config.h"
#include "train/auc.h"
#include "train/checkpoint.h"
#include "train/model_factory.h"
#include "train/trainer.h"

namespace py = pybind11;

namespace hetrec::python {
namespace {

py::dict summary_dict(const TrainSummary& s) {
  py::dict d;
  d["steps"] = s.steps;
  d["samples"] = s.samples;
  d["seconds"] = s.seconds;
  d["samples_per_s"] = s.samples_per_s;
  d["last_loss"] = s.last_loss;
  d["auc"] = s.eval.samples > 0 ? py::object(py::float_(s.eval.auc)) : py::object(py::none());
  d["log_loss"] = s.eval.samples > 0 ? py::object(py::float_(s.eval.log_loss)) : py::object(py::none());
  d["eval_samples"] = s.eval.samples;
  d["bayes_optimal_auc"] = s.bayes_optimal_auc >= 0 ? py::object(py::float_(s.bayes_optimal_auc)) : py::object(py::none());
  d["checkpoint"] = s.checkpoint;
  d["device"] = s.device;
  d["step_ms_median"] = s.step_ms_median;
  return d;
}

py::dict eval_dict(const EvalResult& r) {
  py::dict d;
  d["auc"] = r.auc;
  d["log_loss"] = r.log_loss;
  d["samples"] = r.samples;
  return d;
}

}  // namespace

Session::Session(const py::object& config, const py::object& overrides, const std::string& recipe)
    : cfg_(load_config(config, overrides, recipe)), log_(std::make_unique<Logger>(parse_log_level(cfg_.train.log_level))) {}

Model& Session::model() {
  if (!model_) model_ = make_model(cfg_, *log_, &device_);
  return *model_;
}

py::dict Session::train(const py::object& callback) {
  Trainer trainer(cfg_, *log_);
  if (!callback.is_none()) {
    // Each logged train step and evaluation, while the engine (without the GIL) trains.
    trainer.set_observer([&callback](const nlohmann::json& record) {
      const std::string type = record.value("type", "");
      if (type != "train" && type != "eval") return;
      py::gil_scoped_acquire gil;
      callback(to_python(record));
    });
  }
  TrainSummary summary;
  {
    py::gil_scoped_release nogil;
    summary = trainer.run();
  }
  model_ = trainer.take_model();
  device_ = summary.device;
  step_ = summary.steps;
  return summary_dict(summary);
}

double Session::train_step(const py::handle& dense, const py::handle& sparse, const py::handle& labels) {
  if (labels.is_none()) throw DataError("labels: needed for a training step");
  const int64_t b = sample_count(cfg_.model, dense);
  if (b == 0) throw DataError("dense: a training step needs at least one sample, got shape [0, " +
                              std::to_string(cfg_.model.num_dense) + "]");
  const Batch batch = batch_from_arrays(cfg_.model, dense, sparse, labels, 0, b);
  Model& m = model();
  const StepRates rates = scheduled_rates(cfg_.optim, step_);
  double loss = 0.0;
  {
    py::gil_scoped_release nogil;
    loss = m.train_step(batch, rates);
  }
  ++step_;
  return loss;
}

std::vector<float> Session::logits_of(const py::handle& dense, const py::handle& sparse, const py::handle& labels,
                                      std::vector<float>* labels_out) {
  const int64_t b = sample_count(cfg_.model, dense);
  const int64_t slice = std::max<int64_t>(1, cfg_.train.eval_batch_size);
  Model& m = model();
  std::vector<float> logits(static_cast<std::size_t>(b));
  for (int64_t begin = 0; begin < b; begin += slice) {
    const int64_t end = std::min(b, begin + slice);
    const Batch batch = batch_from_arrays(cfg_.model, dense, sparse, labels, begin, end);
    {
      py::gil_scoped_release nogil;
      m.predict(batch, std::span<float>(logits.data() + begin, static_cast<std::size_t>(end - begin)));
    }
    if (labels_out) labels_out->insert(labels_out->end(), batch.labels.begin(), batch.labels.end());
  }
  return logits;
}

py::dict Session::evaluate(const py::handle& dense, const py::handle& sparse, const py::handle& labels) {
  if (dense.is_none()) {
    // The config's evaluation data, as the trainer evaluates it.
    auto source = make_eval_source(cfg_.data, cfg_.model);
    if (!source) throw ConfigError(cfg_.source + ": config key 'data.eval_path': needed for evaluation");
    Model& m = model();
    EvalResult r;
    {
      py::gil_scoped_release nogil;
      r = hetrec::evaluate(m, *source, cfg_.train.eval_batch_size, cfg_.train.eval_samples);
    }
    return eval_dict(r);
  }
  if (sparse.is_none() || labels.is_none()) throw DataError("evaluate: dense, sparse and labels go together");
  std::vector<float> truth;
  const std::vector<float> logits = logits_of(dense, sparse, labels, &truth);
  if (logits.empty()) throw DataError("dense: evaluation needs at least one sample");
  EvalResult r;
  std::vector<float> scores(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) scores[i] = 1.0f / (1.0f + std::exp(-logits[i]));
  r.auc = roc_auc(scores, truth);
  r.log_loss = log_loss_from_logits(logits, truth);
  r.samples = static_cast<int64_t>(logits.size());
  return eval_dict(r);
}

py::object Session::predict(const py::handle& dense, const py::handle& sparse) {
  const std::vector<float> logits = logits_of(dense, sparse, py::none(), nullptr);
  py::array_t<float> out(static_cast<py::ssize_t>(logits.size()));
  std::copy(logits.begin(), logits.end(), out.mutable_data());
  return out;
}

int64_t Session::load_checkpoint(const std::string& path) {
  const CheckpointMeta meta = verify_checkpoint(path);
  const std::string signature = model_signature(cfg_.model);
  if (meta.model_signature != signature)
    throw CheckpointError("checkpoint '" + path + "' was written for model '" + meta.model_signature +
                          "', the config describes '" + signature + "'");
  Model& m = model();
  {
    py::gil_scoped_release nogil;
    hetrec::load_checkpoint(path, m.state());
  }
  step_ = meta.step;
  return step_;
}

void bind_session(py::module_& m) {
  py::class_<Session>(m, "Session", "a run configuration and the model trained or loaded under it")
      .def(py::init<const py::object&, const py::object&, const std::string&>(), py::arg("config"),
           py::arg("overrides") = py::none(), py::arg("recipe") = "",
           "config: a TOML file's path or a dict of its tables; overrides: ['key=value', ...] or {key: value}")
      .def("train", &Session::train, py::arg("callback") = py::none(),
           "train as `hetrec train` does; callback(record) for each logged step and evaluation")
      .def("train_step", &Session::train_step, py::arg("dense"), py::arg("sparse"), py::arg("labels"),
           "one training step on NumPy arrays; returns the batch's mean loss")
      .def("evaluate", &Session::evaluate, py::arg("dense") = py::none(), py::arg("sparse") = py::none(),
           py::arg("labels") = py::none(), "AUC and log-loss on the config's evaluation data or on arrays")
      .def("predict", &Session::predict, py::arg("dense"), py::arg("sparse"), "logits (float32 [B])")
      .def("load_checkpoint", &Session::load_checkpoint, py::arg("path"), "load a checkpoint (ckpt-*.hck)")
      .def_property_readonly("step", &Session::step)
      .def_property_readonly("device", &Session::device)
      .def_property_readonly("seed", [](const Session& s) { return s.config().data.synthetic.seed; });
}

}  // namespace hetrec::python

// The CPU DLRM / DLRM-DCNv2 model: config validation, learning a planted problem,
// determinism and exact resume through state(), gradients of the whole model against
// finite differences of its loss, batch and loss checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "model/dlrm.h"
#include "nn/bce_loss.h"

namespace hetrec {
namespace {

ModelConfig small_config(Arch arch, int cross_rank = 0) {
  ModelConfig m;
  m.arch = arch;
  m.num_dense = 4;
  m.embedding_dim = 4;
  for (int t = 0; t < 3; ++t) {
    TableConfig tc;
    tc.name = std::string(1, 't') + std::to_string(t);
    tc.rows = 50 - 15 * t;
    tc.hotness = 2;
    m.tables.push_back(tc);
  }
  m.bottom_mlp = {8, 4};
  m.top_mlp = {8, 1};
  m.cross_layers = 2;
  m.cross_rank = cross_rank;
  m.init_seed = 17;
  return m;
}

OptimConfig adagrad_config() {
  OptimConfig o;
  o.dense = OptimizerKind::adagrad;
  o.sparse = OptimizerKind::rowwise_adagrad;
  o.eps = 1e-8;
  return o;
}

// A planted problem: label = [w . dense + sum over bags of a per-row score > 0], with
// the weights and scores fixed by `teacher_seed`.
class PlantedProblem {
 public:
  PlantedProblem(const ModelConfig& m, uint64_t teacher_seed) : model_(m) {
    Rng rng(teacher_seed, 1);
    for (int j = 0; j < m.num_dense; ++j) dense_weight_.push_back(rng.normal());
    for (const TableConfig& t : m.tables) {
      std::vector<double> s;
      for (int64_t r = 0; r < t.rows; ++r) s.push_back(rng.normal());
      row_score_.push_back(std::move(s));
    }
  }

  Batch batch(int64_t size, uint64_t seed) const {
    Batch b;
    const int tables = model_.num_tables();
    b.reset(size, model_.num_dense, tables);
    b.first_sample = static_cast<int64_t>(seed) * size;
    Rng rng(seed, 2);
    std::vector<double> score(static_cast<std::size_t>(size), 0.0);
    for (int64_t i = 0; i < size; ++i)
      for (int j = 0; j < model_.num_dense; ++j) {
        const double x = rng.normal();
        b.dense[i * model_.num_dense + j] = static_cast<float>(x);
        score[i] += dense_weight_[j] * x;
      }
    for (int t = 0; t < tables; ++t) {
      const TableConfig& tc = model_.tables[static_cast<std::size_t>(t)];
      for (int64_t i = 0; i < size; ++i) {
        for (int h = 0; h < tc.hotness; ++h) {
          const auto id = static_cast<int32_t>(rng.below(static_cast<uint64_t>(tc.rows)));
          b.ids.push_back(id);
          score[i] += row_score_[static_cast<std::size_t>(t)][static_cast<std::size_t>(id)];
        }
        b.offsets[static_cast<std::size_t>(t * size + i + 1)] = static_cast<int32_t>(b.ids.size());
      }
    }
    for (int64_t i = 0; i < size; ++i) b.labels[i] = score[i] > 0 ? 1.0f : 0.0f;
    return b;
  }

 private:
  ModelConfig model_;
  std::vector<double> dense_weight_;
  std::vector<std::vector<double>> row_score_;
};

double eval_loss(Model& model, const Batch& b) {
  std::vector<float> logits(static_cast<std::size_t>(b.size));
  model.predict(b, logits);
  return bce_with_logits(logits.data(), b.labels.data(), b.size, static_cast<float*>(nullptr));
}

std::map<std::string, Tensor> by_name(Model& model) {
  std::map<std::string, Tensor> out;
  for (auto& nt : model.state()) out[nt.name] = nt.tensor;
  return out;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// ---- config validation ----

void expect_config_error(ModelConfig m, OptimConfig o, const std::string& key) {
  try {
    make_cpu_model(m, o);
    FAIL() << "expected a ConfigError naming " << key;
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(CpuDlrm, RejectsBadConfigNamingTheKey) {
  const ModelConfig base = small_config(Arch::dlrm);
  const OptimConfig opt = adagrad_config();
  ModelConfig m = base;
  m.bottom_mlp = {8, 5};
  expect_config_error(m, opt, "model.bottom_mlp");
  m = base;
  m.bottom_mlp.clear();
  expect_config_error(m, opt, "model.bottom_mlp");
  m = base;
  m.top_mlp = {8, 2};
  expect_config_error(m, opt, "model.top_mlp");
  m = base;
  m.top_mlp = {0, 1};
  expect_config_error(m, opt, "model.top_mlp");
  m = base;
  m.tables.clear();
  expect_config_error(m, opt, "model.tables");
  m = base;
  m.tables[1].rows = 0;
  expect_config_error(m, opt, "model.tables[1].rows");
  m = base;
  m.embedding_dim = 0;
  expect_config_error(m, opt, "model.embedding_dim");
  m = base;
  m.num_dense = 0;
  expect_config_error(m, opt, "model.num_dense");
  m = small_config(Arch::dcnv2);
  m.cross_rank = -1;
  expect_config_error(m, opt, "model.cross_rank");
  m = small_config(Arch::dcnv2);
  m.cross_layers = -2;
  expect_config_error(m, opt, "model.cross_layers");
  m = base;
  m.dense_dtype = DType::bf16;
  expect_config_error(m, opt, "model.dense_dtype");
  OptimConfig bad = opt;
  bad.dense = OptimizerKind::rowwise_adagrad;
  expect_config_error(base, bad, "optim.dense");
}

// ---- learning ----

void expect_learns(const ModelConfig& m, const OptimConfig& o, StepRates rates) {
  auto model = make_cpu_model(m, o);
  const PlantedProblem problem(m, 5);
  const Batch held_out = problem.batch(512, 1000);
  const double before = eval_loss(*model, held_out);
  double first = 0, last = 0;
  const int steps = 400;
  for (int s = 0; s < steps; ++s) {
    const double loss = model->train_step(problem.batch(64, static_cast<uint64_t>(s)), rates);
    ASSERT_TRUE(std::isfinite(loss));
    if (s < 20) first += loss / 20;
    if (s >= steps - 20) last += loss / 20;
  }
  const double after = eval_loss(*model, held_out);
  EXPECT_LT(last, 0.7 * first) << model->describe();
  EXPECT_LT(after, 0.7 * before) << model->describe();
}

TEST(CpuDlrm, DlrmLearnsPlantedProblem) {
  expect_learns(small_config(Arch::dlrm), adagrad_config(), {0.05f, 0.05f});
}

TEST(CpuDlrm, DcnV2FullRankLearnsPlantedProblem) {
  expect_learns(small_config(Arch::dcnv2, 0), adagrad_config(), {0.05f, 0.05f});
}

TEST(CpuDlrm, DcnV2LowRankWithAdamLearnsPlantedProblem) {
  OptimConfig o = adagrad_config();
  o.dense = OptimizerKind::adam;
  expect_learns(small_config(Arch::dcnv2, 3), o, {0.005f, 0.05f});
}

// ---- state, determinism, resume ----

TEST(CpuDlrm, StateNamesShapesAndStepCounter) {
  auto model = make_cpu_model(small_config(Arch::dcnv2, 3), adagrad_config());
  auto st = by_name(*model);
  ASSERT_TRUE(st.count("bottom_mlp.0.weight"));
  EXPECT_EQ(st["bottom_mlp.0.weight"].shape(), (std::vector<int64_t>{8, 4}));
  EXPECT_EQ(st["bottom_mlp.1.bias"].shape(), (std::vector<int64_t>{4}));
  EXPECT_EQ(st["cross_net.W_kernels.1"].shape(), (std::vector<int64_t>{16, 3}));
  EXPECT_EQ(st["cross_net.V_kernels.0"].shape(), (std::vector<int64_t>{3, 16}));
  EXPECT_EQ(st["top_mlp.0.weight"].shape(), (std::vector<int64_t>{8, 16}));
  EXPECT_EQ(st["top_mlp.1.weight.sum"].shape(), (std::vector<int64_t>{1, 8}));
  EXPECT_TRUE(st.count("embedding.t0.weight"));
  ASSERT_TRUE(st.count("step"));
  EXPECT_EQ(st["step"].dtype(), DType::i64);
  EXPECT_EQ(st["step"].data<int64_t>()[0], 0);
  const PlantedProblem problem(small_config(Arch::dcnv2, 3), 5);
  for (int s = 0; s < 3; ++s) model->train_step(problem.batch(16, static_cast<uint64_t>(s)), {0.01f, 0.01f});
  EXPECT_EQ(st["step"].data<int64_t>()[0], 3);
  EXPECT_NE(model->describe().find("DLRM-DCNv2"), std::string::npos);
}

void expect_identical_runs(Arch arch, OptimizerKind dense) {
  ModelConfig m = small_config(arch, 2);
  OptimConfig o = adagrad_config();
  o.dense = dense;
  auto a = make_cpu_model(m, o);
  auto b = make_cpu_model(m, o);
  const PlantedProblem problem(m, 9);
  for (int s = 0; s < 6; ++s) {
    const Batch batch = problem.batch(32, static_cast<uint64_t>(s));
    EXPECT_EQ(a->train_step(batch, {0.01f, 0.02f}), b->train_step(batch, {0.01f, 0.02f}));
  }
  auto sa = a->state(), sb = b->state();
  ASSERT_EQ(sa.size(), sb.size());
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_EQ(sa[i].name, sb[i].name);
    EXPECT_TRUE(bitwise_equal(sa[i].tensor, sb[i].tensor)) << sa[i].name;
  }
}

TEST(CpuDlrm, TrainingIsBitwiseDeterministic) {
  expect_identical_runs(Arch::dlrm, OptimizerKind::adagrad);
  expect_identical_runs(Arch::dcnv2, OptimizerKind::adam);
}

TEST(CpuDlrm, ResumeFromCopiedStateIsExact) {
  for (Arch arch : {Arch::dlrm, Arch::dcnv2}) {
    ModelConfig m = small_config(arch, 2);
    OptimConfig o = adagrad_config();
    o.dense = OptimizerKind::adam;  // bias correction depends on the restored step
    const PlantedProblem problem(m, 11);
    auto a = make_cpu_model(m, o);
    for (int s = 0; s < 4; ++s) a->train_step(problem.batch(32, static_cast<uint64_t>(s)), {0.01f, 0.02f});
    // A model with another seed receives a's state, as a checkpoint load would.
    ModelConfig other = m;
    other.init_seed = 99;
    auto b = make_cpu_model(other, o);
    auto sa = a->state(), sb = b->state();
    ASSERT_EQ(sa.size(), sb.size());
    for (std::size_t i = 0; i < sa.size(); ++i) {
      ASSERT_EQ(sa[i].tensor.nbytes(), sb[i].tensor.nbytes()) << sa[i].name;
      std::memcpy(sb[i].tensor.raw(), sa[i].tensor.raw(), sa[i].tensor.nbytes());
    }
    for (int s = 4; s < 8; ++s) {
      const Batch batch = problem.batch(32, static_cast<uint64_t>(s));
      EXPECT_EQ(a->train_step(batch, {0.01f, 0.02f}), b->train_step(batch, {0.01f, 0.02f}));
    }
    sa = a->state();
    sb = b->state();
    for (std::size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(bitwise_equal(sa[i].tensor, sb[i].tensor)) << sa[i].name;
  }
}

TEST(CpuDlrm, TrainStepReturnsTheLossOfPredict) {
  auto model = make_cpu_model(small_config(Arch::dlrm), adagrad_config());
  const PlantedProblem problem(small_config(Arch::dlrm), 3);
  const Batch batch = problem.batch(40, 1);
  const double predicted = eval_loss(*model, batch);
  EXPECT_EQ(model->train_step(batch, {0.01f, 0.01f}), predicted);
  EXPECT_NE(eval_loss(*model, batch), predicted);  // the update changed the model
}

// ---- whole-model gradients ----

// With plain SGD at learning rate 1, one step subtracts the gradient itself from every
// parameter (dense and embedding rows), so before - after is the model's gradient. It is
// compared with central differences of the batch loss computed through predict(). The
// model runs in fp32: the loss carries rounding noise of ~1e-7, so the difference
// quotient is good to ~1e-4 at this step, which is also small enough that no ReLU of the
// test problems changes side. Hence the loose tolerance (2% of the largest gradient of
// the tensor + 1e-4); a wiring error (a missing term, a wrong transpose or sign, a
// shifted slice) gives errors of the order of the gradient itself.
constexpr float kProbeStep = 1e-3f;
constexpr double kRelativeTolerance = 0.02;
constexpr double kAbsoluteTolerance = 1e-4;

void check_model_gradients(const ModelConfig& m) {
  OptimConfig o;
  o.dense = OptimizerKind::sgd;
  o.sparse = OptimizerKind::sgd;
  auto probe = make_cpu_model(m, o);
  auto stepped = make_cpu_model(m, o);
  const PlantedProblem problem(m, 21);
  const Batch batch = problem.batch(8, 3);
  auto before = by_name(*probe);
  stepped->train_step(batch, {1.0f, 1.0f});
  auto after = by_name(*stepped);
  int checked = 0;
  for (auto& [name, tensor] : before) {
    if (tensor.dtype() != DType::f32) continue;
    float* p = tensor.data<float>();
    const float* q = after[name].data<float>();
    std::vector<int64_t> probes;
    if (name.rfind("embedding.", 0) == 0) {
      // The first row looked up from this table in the batch.
      const int t = name[11] - '0';
      const int64_t row = batch.ids[static_cast<std::size_t>(batch.bag_begin(t, 0))];
      for (int d = 0; d < m.embedding_dim; ++d) probes.push_back(row * m.embedding_dim + d);
    } else {
      for (int k = 0; k < 4; ++k) probes.push_back(tensor.numel() * k / 4);
    }
    double scale = 0;
    for (int64_t i = 0; i < tensor.numel(); ++i) scale = std::max(scale, std::abs(double(p[i]) - q[i]));
    for (int64_t i : probes) {
      const float saved = p[i];
      p[i] = saved + kProbeStep;
      const double up = eval_loss(*probe, batch);
      p[i] = saved - kProbeStep;
      const double down = eval_loss(*probe, batch);
      p[i] = saved;
      const double numeric = (up - down) / (2.0 * kProbeStep);
      const double analytic = double(saved) - q[i];
      EXPECT_NEAR(analytic, numeric, kRelativeTolerance * scale + kAbsoluteTolerance) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(CpuDlrm, DlrmGradientsMatchFiniteDifferences) {
  ModelConfig m = small_config(Arch::dlrm);
  m.interaction_self = true;
  check_model_gradients(m);
}

TEST(CpuDlrm, DcnV2GradientsMatchFiniteDifferences) {
  check_model_gradients(small_config(Arch::dcnv2, 2));
  ModelConfig no_cross = small_config(Arch::dcnv2);
  no_cross.cross_layers = 0;  // the top MLP reads the concatenation directly
  check_model_gradients(no_cross);
}

// ---- batch and loss checks ----

TEST(CpuDlrm, RejectsMismatchedBatch) {
  const ModelConfig m = small_config(Arch::dlrm);
  auto model = make_cpu_model(m, adagrad_config());
  Batch b = PlantedProblem(m, 1).batch(8, 1);
  b.num_dense = 3;
  EXPECT_THROW(model->train_step(b, {0.01f, 0.01f}), DataError);
  Batch c = PlantedProblem(m, 1).batch(8, 1);
  std::vector<float> logits(7);
  EXPECT_THROW(model->predict(c, logits), InternalError);
}

TEST(CpuDlrm, NonFiniteLossThrowsWithoutUpdating) {
  const ModelConfig m = small_config(Arch::dcnv2);
  auto model = make_cpu_model(m, adagrad_config());
  Batch b = PlantedProblem(m, 1).batch(8, 1);
  b.dense[5] = std::nanf("");
  const auto w = by_name(*model)["bottom_mlp.0.weight"];
  const std::vector<float> w0(w.data<float>(), w.data<float>() + w.numel());
  EXPECT_THROW(model->train_step(b, {0.01f, 0.01f}), NumericError);
  EXPECT_TRUE(std::equal(w0.begin(), w0.end(), w.data<float>()));
  EXPECT_EQ(by_name(*model)["step"].data<int64_t>()[0], 0);
}

}  // namespace
}  // namespace hetrec

// model/batch_stream.h: the stream hands over the pipeline's batches in order, reads one
// ahead only within the caller's budget, restarts where told, and training through it
// gives the losses of training on the pipeline's batches directly.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "data/pipeline.h"
#include "data/synthetic.h"
#include "model/batch_stream.h"
#include "model/dlrm.h"

namespace hetrec {
namespace {

ModelConfig small_model() {
  ModelConfig m;
  m.arch = Arch::dlrm;
  m.num_dense = 4;
  m.embedding_dim = 4;
  for (int t = 0; t < 3; ++t) {
    TableConfig tc;
    tc.name = "t" + std::to_string(t);
    tc.rows = 50 - 15 * t;
    tc.hotness = 2;
    m.tables.push_back(tc);
  }
  m.bottom_mlp = {8, 4};
  m.top_mlp = {8, 1};
  m.init_seed = 17;
  return m;
}

std::unique_ptr<Pipeline> pipeline(const ModelConfig& m, int64_t samples, int64_t batch) {
  SyntheticConfig c;
  c.train_samples = samples;
  c.eval_samples = 10;
  c.seed = 5;
  return std::make_unique<Pipeline>(std::make_unique<SyntheticSource>(m, c, Split::train), batch, 2);
}

TEST(BatchStream, HandsOverThePipelinesBatchesInOrderAndReadsAheadOnlyWithinTheBudget) {
  const ModelConfig m = small_model();
  auto model = make_cpu_model(m, OptimConfig{});
  auto source = pipeline(m, 100, 30);
  BatchStream stream(*source, *model);
  Batch batch;
  ASSERT_TRUE(stream.next(batch, /*more=*/true));
  EXPECT_EQ(batch.first_sample, 0);
  EXPECT_EQ(source->position(), 60);  // the second batch is read ahead
  ASSERT_TRUE(stream.next(batch, /*more=*/false));
  EXPECT_EQ(batch.first_sample, 30);
  EXPECT_EQ(source->position(), 60);  // nothing beyond the budget
  ASSERT_TRUE(stream.next(batch, /*more=*/true));
  EXPECT_EQ(batch.first_sample, 60);
  ASSERT_TRUE(stream.next(batch, /*more=*/true));
  EXPECT_EQ(batch.first_sample, 90);
  EXPECT_EQ(batch.size, 10);
  EXPECT_FALSE(stream.next(batch, /*more=*/true));  // the end of the pass

  stream.seek(30);
  ASSERT_TRUE(stream.next(batch, /*more=*/true));
  EXPECT_EQ(batch.first_sample, 30);
  stream.seek(0);  // drops the batch read ahead (samples 60..89)
  ASSERT_TRUE(stream.next(batch, /*more=*/false));
  EXPECT_EQ(batch.first_sample, 0);
}

TEST(BatchStream, TrainingThroughTheStreamGivesTheLossesOfThePipelinesBatches) {
  const ModelConfig m = small_model();
  OptimConfig o;
  o.lr = 0.1;
  const StepRates rates{0.1f, 0.1f};
  std::vector<double> direct, streamed;
  {
    auto model = make_cpu_model(m, o);
    auto source = pipeline(m, 200, 16);
    Batch batch;
    while (source->next(batch)) direct.push_back(model->train_step(batch, rates));
  }
  {
    auto model = make_cpu_model(m, o);
    auto source = pipeline(m, 200, 16);
    BatchStream stream(*source, *model);
    Batch batch;
    while (stream.next(batch, /*more=*/true)) streamed.push_back(model->train_step(batch, rates));
  }
  ASSERT_EQ(direct.size(), 13u);
  EXPECT_EQ(streamed, direct);  // bit-identical
}

}  // namespace
}  // namespace hetrec

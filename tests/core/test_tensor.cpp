#include <gtest/gtest.h>

#include "core/tensor.h"

using namespace hetrec;

TEST(Tensor, ContiguousStridesAndViews) {
  Tensor t = Tensor::empty({4, 3, 2}, DType::f32);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{6, 2, 1}));
  EXPECT_TRUE(t.is_contiguous());
  float* p = t.data<float>();
  for (int i = 0; i < 24; ++i) p[i] = static_cast<float>(i);
  Tensor rows = t.narrow0(1, 3);
  EXPECT_EQ(rows.shape(), (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(rows.data<float>()[0], 6.0f);
  Tensor flat = t.reshape({24});
  EXPECT_EQ(flat.data<float>()[23], 23.0f);
  EXPECT_THROW(t.reshape({5, 5}), InternalError);
  EXPECT_THROW(t.data<double>(), InternalError);
  EXPECT_THROW(t.narrow0(2, 5), InternalError);
}

TEST(Tensor, ZerosAndBytes) {
  Tensor t = Tensor::zeros({3, 5}, DType::bf16);
  EXPECT_EQ(t.nbytes(), 30u);
  for (int i = 0; i < 15; ++i) EXPECT_EQ(t.data<uint16_t>()[i], 0);
  EXPECT_EQ(t.device().str(), "cpu");
}

// The planner restates the device kernels' scratch sizes (plan/kernel_workspaces.h, so it
// runs without a device); they must agree with the kernels' own functions. Host code
// only: no device needed.
#include <gtest/gtest.h>

#include <cstdint>

#include "kernels/bce_loss.h"
#include "kernels/column_sum.h"
#include "kernels/embedding_bag_backward.h"
#include "kernels/radix_sort.h"
#include "kernels/scan.h"
#include "plan/kernel_workspaces.h"

namespace hetrec {
namespace {

// Sizes around the scan and sort tiles (2048, 4096 pairs), their multiples and the scan's
// recursion levels, up to a full-size step's ids.
constexpr int64_t kSizes[] = {0,    1,     255,   2047,   2048,    2049,    4095,     4096,
                              4097, 12289, 70001, 524289, 1000003, 4194305, 28000000, 67108865};

TEST(PlannerKernelWorkspaces, ScanAndSortMatchTheKernels) {
  for (int64_t n : kSizes) {
    EXPECT_EQ(plan_kernels::exclusive_scan_workspace_bytes(n), kernels::exclusive_scan_workspace_bytes(n)) << n;
    EXPECT_EQ(plan_kernels::radix_sort_workspace_bytes(n), kernels::radix_sort_workspace_bytes(n)) << n;
  }
}

TEST(PlannerKernelWorkspaces, EmbeddingBackwardMatchesTheKernel) {
  for (int64_t max_ids : kSizes) {
    for (int dim : {1, 16, 128}) {
      EXPECT_EQ(plan_kernels::embedding_backward_workspace_bytes(max_ids, dim),
                kernels::embedding_backward_workspace_bytes(max_ids, dim))
          << "max_ids=" << max_ids << " dim=" << dim;
    }
  }
}

TEST(PlannerKernelWorkspaces, ColumnSumAndLossMatchTheKernels) {
  for (int64_t rows : kSizes) {
    EXPECT_EQ(plan_kernels::bce_loss_workspace_bytes(rows), kernels::bce_loss_workspace_bytes(rows)) << rows;
    for (int64_t cols : {int64_t{1}, int64_t{512}}) {
      EXPECT_EQ(plan_kernels::column_sum_workspace_bytes(rows, cols), kernels::column_sum_workspace_bytes(rows, cols))
          << "rows=" << rows << " cols=" << cols;
    }
  }
}

}  // namespace
}  // namespace hetrec

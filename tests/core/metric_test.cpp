// tests/core/metric_test.cpp — core/metric.hpp's RelError: rel over the whole
// term, and the worst position it reports.
#include "core/metric.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace deltaproof {
namespace {

TEST(RelError, WorstIsTheFirstLargestDifference) {
  const std::vector<double> ref = {1.0, 2.0, 4.0, 2.0};
  const std::vector<double> a = {1.0, 2.5, 4.0, 2.5};
  const RelError e = rel_error(a, ref);
  EXPECT_EQ(e.worst, 1u);
  EXPECT_DOUBLE_EQ(e.rel(), 0.5 / 4.0);
  EXPECT_EQ(e.non_finite, 0);
}

// A candidate holding NaN or inf: the worst position is its first non-finite
// entry, whatever the finite differences before or after it are.
TEST(RelError, WorstIsTheFirstNonFiniteEntryWhereThereIsOne) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> ref = {1.0, 1.0, 1.0, 1.0, 1.0};
  const RelError e = rel_error(std::vector<double>{9.0, 1.0, nan, 20.0, -inf}, ref);
  EXPECT_EQ(e.non_finite, 2);
  EXPECT_EQ(e.worst, 2u);
  EXPECT_EQ(e.rel(), inf);
  EXPECT_DOUBLE_EQ(e.abs_max, 19.0) << "abs_max stays the finite entries' largest difference";
}

}  // namespace
}  // namespace deltaproof

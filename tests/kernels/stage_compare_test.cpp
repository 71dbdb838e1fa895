// tests/kernels/stage_compare_test.cpp — the comparison of the CUDA stage tests
// (tests/kernels/stage_compare.hpp) on the CPU: green within its bar, red past
// it, on a size mismatch and on a NaN (subnormals as zero), each failure naming the stage, the
// quantity, the worst index, the figure and the bar; the relative Frobenius figure beside rel.
#include "tests/kernels/stage_compare.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace deltaproof::testing {
namespace {

using kernels::cpu::MatF;

MatF reference() {
  MatF m(2, 3);
  m << 1.0f, -2.0f, 4.0f, 0.5f, 3.0f, -1.0f;
  return m;
}

std::vector<float> row_major(const MatF& m) {
  return std::vector<float>(m.data(), m.data() + m.size());
}

TEST(StageCompare, EqualQuantitiesPassAndShowTheFigure) {
  const auto result = stage_matches("fwd.intra", "Tinv", row_major(reference()), reference(), 1e-5);
  EXPECT_TRUE(result);
  EXPECT_NE(std::string(result.message()).find("fwd.intra Tinv: rel 0.000e+00 (bar 1.000e-05)"),
            std::string::npos)
      << result.message();
}

TEST(StageCompare, AnEntryPastTheBarFailsNamingItsIndex) {
  std::vector<float> cuda = row_major(reference());
  cuda[1 * 3 + 2] += 4e-4f;  // [1, 2]: rel 1e-4 of max |cpu| = 4
  const auto result = stage_matches("bwd.bk1", "dk", cuda, reference(), 1e-5);
  ASSERT_FALSE(result);
  const std::string message = result.message();
  for (const char* part : {"bwd.bk1 dk:", "by rel 1.000e-04", "exceeds the bar 1.000e-05",
                           "at [1, 2]", "max |cpu| 4.000e+00"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  EXPECT_TRUE(stage_matches("bwd.bk1", "dk", cuda, reference(), 2e-4));
}

// ||cuda - cpu||_F / ||cpu||_F: one entry off by 1e-2 ||cpu||_F (||cpu||_F^2 =
// 31.25) is rel_frobenius 1e-2 where rel is 1.4e-2.
TEST(StageCompare, TheFrobeniusFigureIsTheRootMeanSquareError) {
  std::vector<float> cuda = row_major(reference());
  cuda[1 * 3 + 2] += 1e-2f * std::sqrt(31.25f);
  const auto red =
      stage_matches("bwd.bk1", "dg", cuda, reference(), 5e-3, StageFigure::rel_frobenius);
  ASSERT_FALSE(red);
  const std::string message = red.message();
  for (const char* part :
       {"bwd.bk1 dg:", "by rel_frobenius 1.000e-02", "exceeds the bar 5.000e-03", "at [1, 2]"})
    EXPECT_NE(message.find(part), std::string::npos) << part << " not in: " << message;
  const auto green =
      stage_matches("bwd.bk1", "dg", cuda, reference(), 1.2e-2, StageFigure::rel_frobenius);
  EXPECT_TRUE(green);
  EXPECT_NE(std::string(green.message()).find("rel_frobenius 1.000e-02 (bar 1.200e-02)"),
            std::string::npos)
      << green.message();
  EXPECT_FALSE(stage_matches("bwd.bk1", "dg", cuda, reference(), 1.2e-2));  // rel 1.4e-2
  EXPECT_TRUE(stage_matches("bwd.bk1", "dg", row_major(reference()), reference(), 0.0,
                            StageFigure::rel_frobenius));
  cuda[0] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_FALSE(stage_matches("bwd.bk1", "dg", cuda, reference(), 1.0, StageFigure::rel_frobenius));
}

TEST(StageCompare, ASizeMismatchFails) {
  const auto result = stage_matches("fwd.inter", "O", std::vector<float>(5), reference(), 1e-5);
  ASSERT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("gave 5 values where its CPU twin has 2 x 3"),
            std::string::npos)
      << result.message();
}

TEST(StageCompare, ANonFiniteValueFails) {
  std::vector<float> cuda = row_major(reference());
  cuda[0] = std::numeric_limits<float>::quiet_NaN();
  const auto result = stage_matches("bwd.bk2", "dS0", cuda, reference(), 1e-5);
  ASSERT_FALSE(result);
  EXPECT_NE(std::string(result.message()).find("1 of its 6 values are not finite"),
            std::string::npos)
      << result.message();
}

// The device's expf flushes a subnormal result to zero: a subnormal against
// zero is no difference, the smallest normal against zero is.
TEST(StageCompare, SubnormalsCountAsZeroNormalsDoNot) {
  MatF tiny(1, 2);
  tiny << 2.938e-39f, 7.7e-35f;
  EXPECT_TRUE(stage_matches("fwd.intra", "decay_end", {0.0f, 7.7e-35f}, tiny, 1e-5));
  MatF normal(1, 2);
  normal << std::numeric_limits<float>::min(), 7.7e-35f;
  EXPECT_FALSE(stage_matches("fwd.intra", "decay_end", {0.0f, 7.7e-35f}, normal, 1e-5));
}

}  // namespace
}  // namespace deltaproof::testing

// tests/core/rng_test.cpp — the portable RNG is bit-exact: reference values of
// splitmix64 and xoshiro256**, golden values of our seeding, uniforms and
// normals (any change to these changes every fixture), and accuracy of the
// portable log/sin/cos behind Box-Muller.
#include <gtest/gtest.h>

#include <cmath>

#include "core/rng.hpp"

namespace deltaproof {
namespace {

TEST(Rng, Splitmix64MatchesTheReference) {
  std::uint64_t state = 0;
  EXPECT_EQ(splitmix64_next(state), 0xE220A8397B1DCDAFULL);
  EXPECT_EQ(splitmix64_next(state), 0x6E789E6AA1B965F4ULL);
  EXPECT_EQ(splitmix64_next(state), 0x06C45D188009454FULL);
}

TEST(Rng, Xoshiro256StarStarMatchesTheReference) {
  Rng rng = Rng::from_state({1, 2, 3, 4});
  EXPECT_EQ(rng.next_u64(), 11520ULL);
  EXPECT_EQ(rng.next_u64(), 0ULL);
  EXPECT_EQ(rng.next_u64(), 1509978240ULL);
  EXPECT_EQ(rng.next_u64(), 1215971899390074240ULL);
}

TEST(Rng, GoldenStreamsAreBitExact) {
  Rng words(0, 0);
  EXPECT_EQ(words.next_u64(), 0xb3f2af6d0fc710c5ULL);
  EXPECT_EQ(words.next_u64(), 0x853b559647364ceaULL);
  EXPECT_EQ(words.next_u64(), 0x92f89756082a4514ULL);
  Rng uniforms(42, 7);
  EXPECT_EQ(uniforms.uniform01(), 0x1.0bd89c8866b44p-2);
  EXPECT_EQ(uniforms.uniform01(), 0x1.e8108095926p-8);
  EXPECT_EQ(uniforms.uniform01(), 0x1.ec43333a677bp-4);
  Rng normals(1, 2);
  EXPECT_EQ(normals.normal(), 0x1.588e4605bbd1fp-2);
  EXPECT_EQ(normals.normal(), -0x1.0f443ffeb5af3p-1);
  EXPECT_EQ(normals.normal(), 0x1.cb32008d81211p-3);
  EXPECT_EQ(normals.normal(), 0x1.586ecf5ce4f69p-3);
}

TEST(Rng, StreamsOfOneSeedDiffer) {
  Rng a(5, 1), b(5, 2), c(6, 1);
  const auto x = a.next_u64();
  EXPECT_NE(x, b.next_u64());
  EXPECT_NE(x, c.next_u64());
}

TEST(Rng, PortableFunctionsAreAccurate) {
  for (double x = 1e-300; x < 1e300; x *= 1.37)
    ASSERT_NEAR(portable_log(x), std::log(x), 4e-16 * std::abs(std::log(x)) + 1e-300) << x;
  for (double x = -6.28; x < 6.28; x += 0.001) {
    ASSERT_NEAR(portable_cos(x), std::cos(x), 2e-15) << x;
    ASSERT_NEAR(portable_sin(x), std::sin(x), 2e-15) << x;
  }
}

TEST(Rng, NormalsHaveUnitVarianceAndUniformsStayInRange) {
  Rng rng(3, 0);
  double sum = 0, sum2 = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = rng.normal();
    sum += z;
    sum2 += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0, 0.01);
  for (int i = 0; i < 10000; ++i) {
    const double u = rng.uniform(-5.0, -0.1);
    ASSERT_GE(u, -5.0);
    ASSERT_LT(u, -0.1);
  }
}

}  // namespace
}  // namespace deltaproof

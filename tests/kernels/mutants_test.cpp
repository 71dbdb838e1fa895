// tests/kernels/mutants_test.cpp — the switch of mutant schemata
// (kernels/mutants.hpp): a point is true only for the active mutant, records
// that it was reached whichever mutant is on, and MutantSuspended turns every
// mutant off for its scope (the noise ensemble's clean kernel).
#include <algorithm>

#include <gtest/gtest.h>

#include "kernels/mutants.hpp"

namespace deltaproof::kernels {
namespace {

// A kernel-shaped function as falsify/mutants.py writes it: two mutants of a
// sum, and a third point it never reaches.
float sum_schemata(float a, float b, bool far_branch) {
  if (far_branch) return DELTAPROOF_MUTANT(9003) ? a : a * b;
  return DELTAPROOF_MUTANT(9001) ? (a - b) : (DELTAPROOF_MUTANT(9002) ? (a * b) : (a + b));
}

TEST(Mutants, OnePointIsOnAndEveryReachedPointIsRecorded) {
  set_active_mutant(0);
  EXPECT_EQ(sum_schemata(3.0f, 2.0f, false), 5.0f);
  set_active_mutant(9001);
  EXPECT_EQ(sum_schemata(3.0f, 2.0f, false), 1.0f);
  set_active_mutant(9002);
  EXPECT_EQ(sum_schemata(3.0f, 2.0f, false), 6.0f);
  set_active_mutant(0);
  const std::vector<int> reached = reached_mutants();
  EXPECT_TRUE(std::count(reached.begin(), reached.end(), 9001));
  EXPECT_TRUE(std::count(reached.begin(), reached.end(), 9002));
  EXPECT_FALSE(std::count(reached.begin(), reached.end(), 9003))
      << "a point the run never evaluated is not reached (NoCoverage)";
  EXPECT_FALSE(mutant_point(0)) << "id 0 is no mutant";
}

TEST(Mutants, SuspendedTurnsTheMutantOffForItsScope) {
  set_active_mutant(9001);
  {
    const MutantSuspended clean;
    EXPECT_EQ(active_mutant(), 0);
    EXPECT_EQ(sum_schemata(3.0f, 2.0f, false), 5.0f);
  }
  EXPECT_EQ(active_mutant(), 9001);
  set_active_mutant(0);
}

}  // namespace
}  // namespace deltaproof::kernels

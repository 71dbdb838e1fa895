// tests/core/process_test.cpp — ProcessResult::tail, which every child's
// failure sentence quotes: the last lines, the whole log when it is shorter,
// and nothing (not a throw) for a child killed before it printed.
// Run: ctest --test-dir build -R ProcessTail

// GCC 12 reports a false -Wrestrict in std::string's inlined copies (GCC bug
// 105651), against libstdc++'s char_traits.h: off before any include.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <gtest/gtest.h>

#include "core/process.hpp"

namespace deltaproof {
namespace {

TEST(ProcessTail, LastLinesWholeLogAndEmpty) {
  ProcessResult r;
  r.log = "one\ntwo\nthree\n";
  EXPECT_EQ(r.tail(1), "three\n");
  EXPECT_EQ(r.tail(2), "two\nthree\n");
  EXPECT_EQ(r.tail(10), "one\ntwo\nthree\n");
  r.log.clear();
  EXPECT_EQ(r.tail(4), "");
  r.log = "\n";  // one empty line: nothing to quote
  EXPECT_EQ(r.tail(4), "");
}

TEST(ProcessTail, AKilledChildHasAnEmptyTail) {
  const ProcessResult r = run_process({"sleep", "5"}, 0.2);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.tail(4), "");
}

}  // namespace
}  // namespace deltaproof

// tests/kernels/stage_compare.hpp — one quantity of a CUDA stage held against
// its CPU twin's (tests/kernels/cuda_stages_test.cpp, cuda_tc_stages_test.cpp),
// measured with core's one metric (core/metric.hpp: rel = max|a - b| / max|b|
// over the quantity) or, for a kernel of a narrower precision class, with the
// relative Frobenius error (StageFigure). The result says, googletest style,
// what was compared, the figure and the bar, and on failure where the worst
// entry is and what both sides hold there.
// Host code only: tests/kernels/stage_compare_test.cpp sees it go red on the CPU.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <sstream>
#include <string_view>
#include <vector>

#include "core/metric.hpp"
#include "kernels/cpu/chunk.hpp"

namespace deltaproof::testing {

// The bar every stage quantity is held to: f32 against f32, the same
// equations summed in different orders.
struct StageBars {
  double rel = 1e-5;
};

// A value below the smallest normal float as zero. The device's expf flushes
// a result in the subnormal range to zero (ex2.approx.ftz) where the host's
// gives the subnormal: decay_end = exp(G_C) of a 64-row chunk reaches 3e-39.
// Both are f32 arithmetic; a stage is compared on the values both can hold.
inline float flush_subnormal(float x) {
  return std::fabs(x) < std::numeric_limits<float>::min() ? 0.0f : x;
}

// The figure a stage quantity is held to.
//   rel            core's metric, max|a - b| / max|b|: f32 against f32, where
//                  the difference is summation order and a bar of a few f32
//                  ulps holds every element.
//   rel_frobenius  ||a - b||_F / ||b||_F: a kernel of a narrower class (cuda-tc,
//                  bf16) rounds every element, so its error is noise spread
//                  over all of them; its root-mean-square is stable from draw
//                  to draw where the largest element's is the tail of
//                  thousands of draws (tests/kernels/cuda_tc_stages_test.cpp
//                  derives its bar on this figure).
enum class StageFigure { rel, rel_frobenius };

// `stage` `quantity` (e.g. "bwd.bk1", "dk") of the CUDA stage, row-major, against
// the CPU twin's: success when its `figure` is at most `bar`, subnormal values
// flushed to zero on both sides.
inline ::testing::AssertionResult stage_matches(std::string_view stage, std::string_view quantity,
                                                const std::vector<float>& cuda,
                                                const kernels::cpu::MatF& cpu, double bar,
                                                StageFigure figure = StageFigure::rel) {
  std::ostringstream what;
  what.precision(3);
  what << std::scientific << stage << " " << quantity << ": ";
  const auto rows = cpu.rows(), cols = cpu.cols();
  if (cuda.size() != static_cast<std::size_t>(rows * cols))
    return ::testing::AssertionFailure()
           << what.str() << "the CUDA stage gave " << cuda.size()
           << " values where its CPU twin has " << rows << " x " << cols;
  RelError error;
  double diff_squares = 0.0, ref_squares = 0.0;  // the Frobenius norms' squares
  for (Eigen::Index r = 0; r < rows; ++r)
    for (Eigen::Index c = 0; c < cols; ++c) {
      const double a = flush_subnormal(cuda[r * cols + c]), b = flush_subnormal(cpu(r, c));
      error.add(a, b);
      diff_squares += (a - b) * (a - b), ref_squares += b * b;
    }
  const char* name = figure == StageFigure::rel ? "rel" : "rel_frobenius";
  // rel_frobenius as rel(): 0 where nothing differs, inf where a value is not
  // finite or a reference of zeros is missed
  const double value = figure == StageFigure::rel ? error.rel()
                       : error.non_finite > 0     ? std::numeric_limits<double>::infinity()
                       : diff_squares == 0.0      ? 0.0
                       : ref_squares == 0.0       ? std::numeric_limits<double>::infinity()
                                                  : std::sqrt(diff_squares / ref_squares);
  if (value <= bar) {
    what << name << " " << value << " (bar " << bar << ")";
    return ::testing::AssertionSuccess() << what.str();
  }
  what << "the CUDA stage differs from its CPU twin by " << name << " " << value
       << ", which exceeds the bar " << bar;
  if (error.non_finite > 0) {
    what << " (" << error.non_finite << " of its " << error.count << " values are not finite)";
  } else {
    const auto r = static_cast<Eigen::Index>(error.worst) / cols,
               c = static_cast<Eigen::Index>(error.worst) % cols;
    what << " (max |cuda - cpu| " << error.abs_max << " at [" << r << ", " << c << "], where cuda "
         << cuda[error.worst] << " and cpu " << cpu(r, c) << "; max |cpu| " << error.ref_amax
         << ")";
  }
  return ::testing::AssertionFailure() << what.str();
}

}  // namespace deltaproof::testing

// tests/kernels/stage_compare.hpp — one quantity of a CUDA stage held against
// its CPU twin's (tests/kernels/cuda_stages_test.cpp), measured with core's one
// metric (core/metric.hpp: rel = max|a - b| / max|b| over the quantity). The
// result says, googletest style, what was compared, the figure and the bar,
// and on failure where the worst entry is and what both sides hold there.
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

// `stage` `quantity` (e.g. "bwd.bk1", "dk") of the CUDA stage, row-major, against
// the CPU twin's: success when its rel is at most `bar`, subnormal values
// flushed to zero on both sides.
inline ::testing::AssertionResult stage_matches(std::string_view stage, std::string_view quantity,
                                                const std::vector<float>& cuda,
                                                const kernels::cpu::MatF& cpu, double bar) {
  std::ostringstream what;
  what.precision(3);
  what << std::scientific << stage << " " << quantity << ": ";
  const auto rows = cpu.rows(), cols = cpu.cols();
  if (cuda.size() != static_cast<std::size_t>(rows * cols))
    return ::testing::AssertionFailure()
           << what.str() << "the CUDA stage gave " << cuda.size()
           << " values where its CPU twin has " << rows << " x " << cols;
  RelError error;
  for (Eigen::Index r = 0; r < rows; ++r)
    for (Eigen::Index c = 0; c < cols; ++c)
      error.add(flush_subnormal(cuda[r * cols + c]), flush_subnormal(cpu(r, c)));
  const double rel = error.rel();
  if (rel <= bar) {
    what << "rel " << rel << " (bar " << bar << ")";
    return ::testing::AssertionSuccess() << what.str();
  }
  what << "the CUDA stage differs from its CPU twin by rel " << rel << ", which exceeds the bar "
       << bar;
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

// oracle/forward_mode.hpp — gradients of L by forward-mode AD: dual numbers
// with vector tangents (kTangents directions per pass) pushed through the same
// recurrence template the f64 and quad oracles run. Independent of the
// hand-derived reverse sweep, which is what lets one check the other.
#pragma once

#include <string>
#include <vector>

#include "oracle/evaluate.hpp"

namespace deltaproof::oracle {

inline constexpr int kTangents = 16;

// A perturbation of one input tensor, in its FLA layout.
struct Direction {
  std::string tensor;
  std::vector<double> values;
};

// dL/ds of L(x + s d) at s = 0 for each direction, in double.
std::vector<double> forward_mode_directional(const Problem& problem,
                                             const std::vector<Direction>& directions, int threads,
                                             const GeneratorFaults& faults = {});

// Every coordinate of every input's gradient, one unit tangent per coordinate.
TensorMap forward_mode_gradient(const Problem& problem, int threads,
                                const GeneratorFaults& faults = {});

// The number of differentiable input coordinates of a spec.
std::size_t input_coordinate_count(const FixtureSpec& spec);

}  // namespace deltaproof::oracle

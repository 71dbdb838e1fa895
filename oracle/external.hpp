// oracle/external.hpp — a fixture whose reference is computed outside the quad
// oracle: in f64 on a GPU (oracle/reference64, `gen --reference
// gpu-f64`) at a shape whose whole quad oracle would take a CPU hours (issue
// 13: B4 T4096 H16 K=V=128; one sequence of T 32768). The reference is trusted
// only as far as these self-checks reach, each stored in the fixture's
// metadata like gen's:
//   sampled_vs_quad         o, ht and every gradient of sampled (b, h)
//                           sequences against the quad oracle (sampled.hpp);
//   fd_vs_reverse_sweep     the reference's own function, differentiated by
//                           6th-order central differences along one random
//                           direction per input tensor, against <grad, d> of
//                           its reverse sweep: the gradient of every sequence,
//                           not only the sampled ones;
//   taylor_remainder_order  the slope of the Taylor remainder along the same
//                           directions (2: the right gradient; 1: a wrong one);
//   determinism             a second evaluation gives the same bits.
// Gen's forward-mode and liveness checks have no cheap form at this size and
// are not run. The evaluator is a parameter, so the checks are tested on the
// CPU with the f64 oracle and with deliberately wrong evaluators.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "oracle/fixture.hpp"
#include "oracle/forward_mode.hpp"

namespace deltaproof::oracle {

// A reference of a problem computed elsewhere.
struct ExternalEvaluator {
  // What the reference is computed in, as the fixture's reference_precision.
  std::string name;
  // o and ht and, with gradients, every gradient: op form, FLA layout.
  std::function<TensorMap(const Problem&, bool with_gradients)> evaluate;
  // L = <o, do> + <ht, dht> at the problem moved by step x d (forward only).
  // Optional: without it, evaluate on a moved copy of the problem (a whole
  // copy per call, slow at the production shape).
  std::function<double(const Problem&, const Direction&, double step)> loss_along;
};

struct ExternalOptions {
  // The sequences checked against quad; empty: the first and the last.
  std::vector<std::pair<int, int>> heads;
  int threads = 0;
  // The Taylor sweep's steps, h = 2^-8 .. 2^-20 in exponent strides of this.
  int taylor_stride = 2;
  std::string file_name = "fixture.safetensors";
  // The command that regenerates the fixture, recorded in its metadata.
  std::string command;
  std::function<void(const std::string&)> progress;
};

struct ExternalBars {
  // f64 against quad: the same arithmetic the CPU's f64 oracle meets at 1e-12
  // and better (tests/kernels/reference64_test.cpp); the bar.
  static constexpr double sampled_vs_quad = 1e-12;
  // as gen's fd_vs_forward_mode (taylor_remainder_order is gen's own check:
  // taylor_remainder_check, SelfCheckBars::taylor_min_order)
  static constexpr double fd_vs_reverse_sweep = SelfCheckBars::fd_vs_forward_mode;
};

// L = <o, do> + <ht, dht> of a problem's outputs, compensated summation.
double loss_of(const Problem& problem, const TensorMap& outputs);

// Random directions of the external checks, one per input tensor: N(0, 1)
// entries times the tensor's root mean square, so a step moves every input by
// the same relative amount (stream 2000 + tensor, distinct from gen's).
std::vector<Direction> scaled_directions(const Problem& problem);

// The production shapes (issue 13), gdn2 and kda, bf16 inputs, chunk 64:
// B4 T4096 H16 K=V=128 and one sequence of T 32768 at K=V=128.
std::vector<CanonicalFixture> production_fixtures();

// Draws the inputs, evaluates them, runs every self-check. Never throws on a
// failed check: the caller decides (gen refuses, --force marks it unchecked).
GeneratedFixture generate_external_fixture(const FixtureSpec& spec,
                                           const ExternalEvaluator& evaluator,
                                           const ExternalOptions& options);

}  // namespace deltaproof::oracle

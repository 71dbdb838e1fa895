// tests/oracle/recurrence_test.cpp — the definition itself: hand-computed
// values, the op broadcasts, the reverse sweep against forward mode on every
// coordinate, f64 against quad, and the prefix problem.
#include <gtest/gtest.h>

#include <cmath>

#include "core/metric.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/forward_mode.hpp"
#include "oracle/selfcheck.hpp"

namespace deltaproof::oracle {
namespace {

FixtureSpec small_spec(Op op, int T = 20, int chunk = 16) {
  FixtureSpec s;
  s.op = op;
  s.B = 2;
  s.T = T;
  s.H = 2;
  s.K = 3;
  s.V = 4;
  s.chunk = chunk;
  s.seed = 7;
  return s;
}

// K = V = 1, one token: S1 = (1 - k b k) e^g S0 + k w v, o = scale S1 q.
TEST(Recurrence, OneTokenScalarMatchesHandComputation) {
  Sequence<double> x;
  const double q = 0.5, k = 0.8, v = -1.25, g = -0.3, b = 0.6, w = 0.9, s0 = 2.0, scale = 0.75;
  x.q = Mat<double>::Constant(1, 1, q);
  x.k = Mat<double>::Constant(1, 1, k);
  x.v = Mat<double>::Constant(1, 1, v);
  x.g = Mat<double>::Constant(1, 1, g);
  x.b = Mat<double>::Constant(1, 1, b);
  x.w = Mat<double>::Constant(1, 1, w);
  x.h0 = Mat<double>::Constant(1, 1, s0);
  const auto out = forward(x, scale, false);
  const double s1 = (1 - k * b * k) * std::exp(g) * s0 + k * w * v;
  EXPECT_NEAR(out.ht(0, 0), s1, 1e-15);
  EXPECT_NEAR(out.o(0, 0), scale * s1 * q, 1e-15);
}

// With b = 0 the erase vanishes: S_t = Diag(exp g_t) S_{t-1} + k_t (w_t v_t)^T.
TEST(Recurrence, ZeroEraseIsAGatedLinearAttention) {
  Problem p = draw_problem(small_spec(Op::gdn2, 5));
  std::fill(p.values["b"].begin(), p.values["b"].end(), 0.0);
  const auto x = head_sequence<double>(p, 1, 1);
  const auto out = forward(x, p.spec.scale(), false);
  Mat<double> state = x.h0;
  for (int t = 0; t < 5; ++t) {
    for (int i = 0; i < 3; ++i) state.row(i) *= std::exp(x.g(t, i));
    state += x.k.row(t).transpose() * x.w.row(t).cwiseProduct(x.v.row(t));
  }
  EXPECT_LT((out.ht - state).cwiseAbs().maxCoeff(), 1e-14);
}

// kda is gdn2 with b = w = beta; gdn is kda with one g per token and head.
TEST(Recurrence, KdaAndGdnAreBroadcastGdn2) {
  const Problem kda = draw_problem(small_spec(Op::kda));
  const auto x = head_sequence<double>(kda, 0, 1);
  for (int t = 0; t < kda.spec.T; ++t) {
    const double beta = kda.at("beta")[token_offset(kda.spec, 0, 0, t, 1, 0)];
    EXPECT_EQ(x.b.row(t).minCoeff(), beta);
    EXPECT_EQ(x.b.row(t).maxCoeff(), beta);
    EXPECT_EQ(x.w.row(t).maxCoeff(), beta);
  }
  const Problem gdn = draw_problem(small_spec(Op::gdn));
  const auto y = head_sequence<double>(gdn, 1, 0);
  for (int t = 0; t < gdn.spec.T; ++t)
    EXPECT_EQ(y.g.row(t).minCoeff(), gdn.at("g")[token_offset(gdn.spec, 0, 1, t, 0, 0)]);
}

class EveryOp : public ::testing::TestWithParam<Op> {};

// The hand-derived reverse sweep against forward-mode AD on every coordinate.
TEST_P(EveryOp, ReverseSweepMatchesForwardModeOnEveryCoordinate) {
  const Problem p = draw_problem(small_spec(GetParam()));
  const auto reverse = evaluate<double>(p, true, 2);
  const auto forward = forward_mode_gradient(p, 2);
  for (const auto& name : gradient_names(p.spec)) {
    SCOPED_TRACE(name);
    EXPECT_LT(rel_max_error(reverse.tensors.at(name), forward.at(name)), 1e-12);
  }
}

// The f64 oracle agrees with quad to its own rounding.
TEST_P(EveryOp, DoubleAgreesWithQuad) {
  const Problem p = draw_problem(small_spec(GetParam(), 40));
  const auto f64 = evaluate<double>(p, true, 2);
  const auto quad = evaluate_quad(p, true, 2);
  EXPECT_NEAR(f64.loss, quad.loss, 1e-12 * std::abs(quad.loss));
  for (const auto& [name, values] : quad.tensors) {
    SCOPED_TRACE(name);
    const double rel = rel_max_error(f64.tensors.at(name), values);
    EXPECT_LT(rel, 1e-12);
    EXPECT_GT(rel, 0.0) << "f64 and quad cannot agree exactly; is quad really running?";
  }
}

// The thread count never changes a bit.
TEST_P(EveryOp, ThreadCountDoesNotChangeBits) {
  const Problem p = draw_problem(small_spec(GetParam()));
  const auto one = evaluate_quad(p, true, 1);
  const auto many = evaluate_quad(p, true, 4);
  EXPECT_EQ(one.tensors, many.tensors);
}

INSTANTIATE_TEST_SUITE_P(Ops, EveryOp, ::testing::Values(Op::gdn2, Op::kda, Op::gdn),
                         [](const auto& info) { return std::string(op_name(info.param)); });

// A wrong gradient is visible to forward mode: this is what makes the check
// able to fail.
TEST(Recurrence, DoubleExpFaultMovesTheReverseSweep) {
  const Problem p = draw_problem(small_spec(Op::gdn2));
  GeneratorFaults faults;
  faults.double_exp_in_reverse_decay = true;
  const auto broken = evaluate<double>(p, true, 2, faults);
  const auto forward = forward_mode_gradient(p, 2, faults);
  EXPECT_GT(rel_max_error(broken.tensors.at("dg"), forward.at("dg")), 1e-2);
}

TEST(Recurrence, PrefixProblemKeepsTheFirstTokens) {
  const Problem p = draw_problem(small_spec(Op::kda, 40));
  const Problem prefix = prefix_problem(p, 16);
  EXPECT_EQ(prefix.spec.T, 16);
  EXPECT_EQ(prefix.at("q").size(), p.at("q").size() * 16 / 40);
  EXPECT_EQ(prefix.at("q")[token_offset(prefix.spec, 3, 1, 15, 1, 2)],
            p.at("q")[token_offset(p.spec, 3, 1, 15, 1, 2)]);
  for (double x : prefix.at("dht")) EXPECT_EQ(x, 0.0);
}

}  // namespace
}  // namespace deltaproof::oracle

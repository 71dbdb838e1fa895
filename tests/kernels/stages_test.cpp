// tests/kernels/stages_test.cpp — each stage of cpu-chunk alone against the
// oracle's own quantities (the state after each chunk, dS at each chunk
// boundary, one chunk's adjoint), and the two CPU backends against each other
// and the f64 oracle on shapes no fixture has (K != V, H = 3, T = 77, chunk 32;
// K, V at 1 and 256; the stress regime at 64-token chunks).
#include <gtest/gtest.h>

#include "core/metric.hpp"
#include "gates/fixture_io.hpp"
#include "kernels/cpu/backends.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/selfcheck.hpp"
#include "tests/kernels/bars.hpp"

namespace deltaproof::testing {
namespace {

using kernels::cpu::MatF;
using oracle::FixtureSpec;
using oracle::Mat;

kernels::KernelShape shape_of(const FixtureSpec& s) { return gates::kernel_shape(s); }

double rel(const MatF& a, const Mat<double>& b) {
  RelError error;
  for (Eigen::Index r = 0; r < b.rows(); ++r)
    for (Eigen::Index c = 0; c < b.cols(); ++c) error.add(a(r, c), b(r, c));
  return error.rel();
}

FixtureSpec spec(oracle::Op op, int B, int T, int H, int K, int V, int chunk,
                 oracle::Regime regime = oracle::Regime::default_) {
  FixtureSpec s;
  s.op = op;
  s.B = B;
  s.T = T;
  s.H = H;
  s.K = K;
  s.V = V;
  s.chunk = chunk;
  s.regime = regime;
  s.seed = 11;
  return s;
}

// The f64 oracle's state after each chunk equals fwd.inter's S_end, chunk by chunk.
TEST(Stages, ChunkEndStatesMatchTheOracle) {
  const FixtureSpec s = spec(oracle::Op::gdn2, 1, 80, 1, 6, 5, 16);
  const oracle::Problem p = oracle::draw_problem(s);
  const auto x = oracle::head_sequence<double>(p, 0, 0);
  const auto reference = deltaproof::forward(x, s.scale(), true);
  const auto head = kernels::cpu::gather_head(shape_of(s), gates::kernel_inputs(p),
                                              SequenceRef{0, 0, s.T, 0, 0, 0}, s.T);
  MatF state = head.h0;
  for (int c = 0; c < s.num_chunks(); ++c) {
    kernels::cpu::ChunkInputs in;
    in.Q = head.Q.middleRows(c * 16, 16);
    in.K = head.K.middleRows(c * 16, 16);
    in.V = head.V.middleRows(c * 16, 16);
    in.B = head.B.middleRows(c * 16, 16);
    in.W = head.W.middleRows(c * 16, 16);
    in.G = head.g.middleRows(c * 16, 16);
    for (int r = 1; r < 16; ++r) in.G.row(r) += in.G.row(r - 1);
    const auto f =
        kernels::cpu::chunk_output_and_state(kernels::cpu::chunk_intra(in), state, s.scale());
    EXPECT_LT(rel(f.S_end, reference.states[(c + 1) * 16]), 2e-6) << "after chunk " << c;
    state = f.S_end;
  }
}

// BK2's dS0 of each chunk equals the oracle's gradient wrt the state at that
// boundary: dh0 of the suffix problem that starts there.
TEST(Stages, Bk2StateGradientsMatchTheOracleAtEveryBoundary) {
  const FixtureSpec s = spec(oracle::Op::kda, 1, 64, 1, 4, 4, 16);
  const oracle::Problem p = oracle::draw_problem(s);
  const auto x = oracle::head_sequence<double>(p, 0, 0);
  const auto trajectory = deltaproof::forward(x, s.scale(), true);
  const auto dout = oracle::head_tokens<double>(s, p.at("do"), s.V, 0, 0);
  const auto dht = oracle::head_state<double>(s, p.at("dht"), 0, 0);

  const auto head = kernels::cpu::gather_head(shape_of(s), gates::kernel_inputs(p),
                                              SequenceRef{0, 0, s.T, 0, 0, 0}, s.T);
  const MatF dO = dout.cast<float>();
  kernels::ExecutionRecord record;
  // run the glue by hand: dS_end of the last chunk is dht, then each dS0 hands back
  MatF dS_end = dht.cast<float>();
  for (int c = s.num_chunks() - 1; c >= 1; --c) {
    kernels::cpu::ChunkInputs in;
    in.Q = head.Q.middleRows(c * 16, 16);
    in.K = head.K.middleRows(c * 16, 16);
    in.V = head.V.middleRows(c * 16, 16);
    in.B = head.B.middleRows(c * 16, 16);
    in.W = head.W.middleRows(c * 16, 16);
    in.G = head.g.middleRows(c * 16, 16);
    for (int r = 1; r < 16; ++r) in.G.row(r) += in.G.row(r - 1);
    const MatF dS0 = kernels::cpu::bk2_state_gradient(kernels::cpu::chunk_intra(in),
                                                      dO.middleRows(c * 16, 16), dS_end, s.scale());
    // the oracle: the suffix from token 16c, started from the oracle's state there
    Sequence<double> suffix{x.q.bottomRows(s.T - 16 * c), x.k.bottomRows(s.T - 16 * c),
                            x.g.bottomRows(s.T - 16 * c), x.b.bottomRows(s.T - 16 * c),
                            x.v.bottomRows(s.T - 16 * c), x.w.bottomRows(s.T - 16 * c),
                            trajectory.states[16 * c]};
    const auto suffix_fwd = deltaproof::forward(suffix, s.scale(), true);
    const Mat<double> suffix_dout = dout.bottomRows(s.T - 16 * c);
    const auto suffix_grad = deltaproof::reverse(suffix, suffix_fwd, suffix_dout, dht, s.scale());
    EXPECT_LT(rel(dS0, suffix_grad.dh0), 5e-6) << "dS at the start of chunk " << c;
    dS_end = dS0;
  }
}

// BK1 alone: one chunk in the middle, given the oracle's S0 and dS_end, gives
// the oracle's gradients on that chunk's rows.
TEST(Stages, Bk1OnAMiddleChunkMatchesTheOracle) {
  const FixtureSpec s = spec(oracle::Op::gdn2, 1, 48, 1, 5, 3, 16);
  const oracle::Problem p = oracle::draw_problem(s);
  const auto x = oracle::head_sequence<double>(p, 0, 0);
  const auto trajectory = deltaproof::forward(x, s.scale(), true);
  const auto dout = oracle::head_tokens<double>(s, p.at("do"), s.V, 0, 0);
  const auto dht = oracle::head_state<double>(s, p.at("dht"), 0, 0);
  const auto full = deltaproof::reverse(x, trajectory, dout, dht, s.scale());
  // dS at the end of chunk 1 (token 32): dh0 of the suffix from 32
  Sequence<double> suffix{x.q.bottomRows(16),   x.k.bottomRows(16), x.g.bottomRows(16),
                          x.b.bottomRows(16),   x.v.bottomRows(16), x.w.bottomRows(16),
                          trajectory.states[32]};
  const auto suffix_fwd = deltaproof::forward(suffix, s.scale(), true);
  const Mat<double> suffix_dout = dout.bottomRows(16);
  const Mat<double> dS_end =
      deltaproof::reverse(suffix, suffix_fwd, suffix_dout, dht, s.scale()).dh0;

  const auto head = kernels::cpu::gather_head(shape_of(s), gates::kernel_inputs(p),
                                              SequenceRef{0, 0, s.T, 0, 0, 0}, s.T);
  kernels::cpu::ChunkInputs in;
  in.Q = head.Q.middleRows(16, 16);
  in.K = head.K.middleRows(16, 16);
  in.V = head.V.middleRows(16, 16);
  in.B = head.B.middleRows(16, 16);
  in.W = head.W.middleRows(16, 16);
  in.G = head.g.middleRows(16, 16);
  for (int r = 1; r < 16; ++r) in.G.row(r) += in.G.row(r - 1);
  MatF scratch;
  const auto d = kernels::cpu::bk1_chunk_adjoint(
      in, kernels::cpu::chunk_intra(in), trajectory.states[16].cast<float>(),
      dout.middleRows(16, 16).cast<float>(), dS_end.cast<float>(), s.scale(), scratch);
  EXPECT_LT(rel(d.dQ, full.dq.middleRows(16, 16)), 5e-6);
  EXPECT_LT(rel(d.dK, full.dk.middleRows(16, 16)), 5e-6);
  EXPECT_LT(rel(d.dV, full.dv.middleRows(16, 16)), 5e-6);
  EXPECT_LT(rel(d.dG, full.dg.middleRows(16, 16)), 5e-6);
  EXPECT_LT(rel(d.dB, full.db.middleRows(16, 16)), 5e-6);
  EXPECT_LT(rel(d.dW, full.dw.middleRows(16, 16)), 5e-6);
}

struct ShapeCase {
  oracle::Op op;
  int B, T, H, K, V, chunk;
  oracle::Regime regime;
};

class Shapes : public ::testing::TestWithParam<ShapeCase> {};

// Both backends against the f64 oracle and each other on every term.
TEST_P(Shapes, ChunkAndRecurrentAgreeWithTheOracleAndEachOther) {
  const ShapeCase c = GetParam();
  const FixtureSpec s = spec(c.op, c.B, c.T, c.H, c.K, c.V, c.chunk, c.regime);
  const oracle::Problem p = oracle::draw_problem(s);
  const auto reference = oracle::evaluate<double>(p, true, 0);
  const auto shape = shape_of(s);
  const auto inputs = gates::kernel_inputs(p);
  kernels::Buffers chunked = kernels::allocate_outputs(shape, kernels::Phase::bwd, NAN);
  kernels::Buffers recurrent = kernels::allocate_outputs(shape, kernels::Phase::bwd, NAN);
  kernels::ExecutionRecord r1, r2;
  kernels::find_backend("cpu-chunk").run(shape, inputs, kernels::Phase::bwd, chunked, r1);
  kernels::find_backend("cpu-recurrent").run(shape, inputs, kernels::Phase::bwd, recurrent, r2);
  for (const auto& [term, values] : reference.tensors) {
    const std::vector<double> a(chunked.at(term).begin(), chunked.at(term).end());
    const std::vector<double> b(recurrent.at(term).begin(), recurrent.at(term).end());
    for (double v : a) ASSERT_TRUE(std::isfinite(v)) << term << " has a non-finite element";
    EXPECT_LT(rel_max_error(a, values), bwd_bar("cpu-chunk")) << "cpu-chunk " << term;
    EXPECT_LT(rel_max_error(b, values), bwd_bar("cpu-recurrent")) << "cpu-recurrent " << term;
    EXPECT_LT(rel_max_error(a, b), bwd_bar("cpu-chunk")) << "chunk vs recurrent " << term;
  }
}

INSTANTIATE_TEST_SUITE_P(
    NoFixtureHasThese, Shapes,
    ::testing::Values(ShapeCase{oracle::Op::gdn2, 2, 77, 3, 5, 7, 32, oracle::Regime::default_},
                      ShapeCase{oracle::Op::kda, 1, 77, 3, 7, 5, 32, oracle::Regime::default_},
                      ShapeCase{oracle::Op::gdn, 2, 77, 3, 6, 9, 32, oracle::Regime::default_},
                      ShapeCase{oracle::Op::gdn2, 1, 33, 1, 1, 1, 16, oracle::Regime::default_},
                      ShapeCase{oracle::Op::kda, 1, 70, 1, 256, 3, 64, oracle::Regime::default_},
                      ShapeCase{oracle::Op::gdn2, 1, 20, 1, 2, 256, 16, oracle::Regime::mild},
                      ShapeCase{oracle::Op::gdn2, 1, 130, 2, 16, 16, 64, oracle::Regime::stress},
                      ShapeCase{oracle::Op::gdn, 1, 130, 2, 16, 16, 64, oracle::Regime::stress}));

}  // namespace
}  // namespace deltaproof::testing

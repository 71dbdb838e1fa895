// tests/kernels/stage_problem.hpp — one chunk of one (batch, head) for the
// per-stage tests of the CUDA backends (cuda_stages_test for cuda-chunk,
// cuda_tc_stages_test for cuda-tc): the same values for the CUDA stage
// (kernels/cuda/stages.hpp's host matrices) and its CPU twin
// (kernels/cpu/chunk.hpp), drawn by the oracle, and the twin's results in the
// CUDA stages' types. Host code only.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/cpu/chunk.hpp"
#include "kernels/cuda/stages.hpp"
#include "oracle/problem.hpp"

namespace deltaproof::testing {

struct StageCase {
  const char* name;
  int L, chunk, K, V;
  oracle::Regime regime = oracle::Regime::default_;
  int wide_block = -1;  // >= 0: g of this 16-row block times 8 (its decays wide, the others not)
};
// Named in the test list by its name, not its bytes.
inline void PrintTo(const StageCase& c, std::ostream* os) { *os << c.name; }

// One chunk of one (b, h), the same values for both twins: drawn by the oracle
// (gdn2, B = H = 1, T = L), so every token tensor is an L x width matrix.
struct ChunkProblem {
  kernels::cuda::StageShape shape;
  kernels::cuda::StageTokens tokens;
  kernels::cpu::ChunkInputs inputs;   // G the cumulative g, as run_head forms it
  kernels::cpu::MatF S0, dO, dS_end;  // h0, do and dht as the chunk's S0, dO and dS_end
};

inline kernels::cpu::MatF matrix(const std::vector<double>& values, int rows, int cols) {
  kernels::cpu::MatF m(rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m(r, c) = static_cast<float>(values.at(r * cols + c));
  return m;
}

inline kernels::cuda::HostMatrix host(const kernels::cpu::MatF& m) {
  return kernels::cuda::HostMatrix(m.data(), m.data() + m.size());
}

inline ChunkProblem chunk_problem(const StageCase& c) {
  using kernels::cpu::MatF;
  oracle::FixtureSpec spec;
  spec.op = oracle::Op::gdn2;
  spec.B = 1, spec.T = c.L, spec.H = 1, spec.K = c.K, spec.V = c.V, spec.chunk = c.chunk;
  spec.regime = c.regime;
  spec.seed = 12;
  const oracle::Problem p = oracle::draw_problem(spec);
  ChunkProblem out;
  out.shape = {c.L, c.chunk, c.K, c.V, static_cast<float>(spec.scale())};
  kernels::cpu::ChunkInputs& in = out.inputs;
  in.Q = matrix(p.at("q"), c.L, c.K);
  in.K = matrix(p.at("k"), c.L, c.K);
  in.V = matrix(p.at("v"), c.L, c.V);
  in.B = matrix(p.at("b"), c.L, c.K);
  in.W = matrix(p.at("w"), c.L, c.V);
  MatF g = matrix(p.at("g"), c.L, c.K);
  if (c.wide_block >= 0) g.middleRows(16 * c.wide_block, 16) *= 8.0f;
  in.G = g;
  for (int r = 1; r < c.L; ++r) in.G.row(r) += in.G.row(r - 1);
  in.tail = c.L < c.chunk;
  out.tokens = {host(in.Q), host(in.K), host(in.V), host(g), host(in.B), host(in.W)};
  out.S0 = matrix(p.at("h0"), c.K, c.V);
  out.dO = matrix(p.at("do"), c.L, c.V);
  out.dS_end = matrix(p.at("dht"), c.K, c.V);
  return out;
}

// The CPU twin's fwd.intra as the CUDA stages take it.
inline kernels::cuda::StageIntra host_intra(const kernels::cpu::ChunkInputs& in,
                                            const kernels::cpu::ChunkIntra& intra) {
  using kernels::cpu::MatF;
  return {
      host(in.G),    host(intra.Tinv), host(intra.Ut),   host(intra.Wt),
      host(intra.M), host(intra.Qg),   host(intra.Kdec), host(MatF(intra.decay_end.transpose()))};
}

// The CPU twin's backward of the chunk: bk1_chunk_adjoint leaves the chunk's
// dU in its scratch (bwd.bk2's dU on the CPU); dS0 is bk2_state_gradient's.
struct CpuBackward {
  kernels::cpu::MatF dU, dS0;
  kernels::cpu::ChunkGradients grad;
};
inline CpuBackward cpu_backward(const ChunkProblem& x, const kernels::cpu::ChunkIntra& intra,
                                kernels::Rounder& round = kernels::cpu::exact_rounder()) {
  CpuBackward out;
  out.grad = kernels::cpu::bk1_chunk_adjoint(x.inputs, intra, x.S0, x.dO, x.dS_end, x.shape.scale,
                                             out.dU, round);
  out.dS0 = kernels::cpu::bk2_state_gradient(intra, x.dO, x.dS_end, x.shape.scale, round);
  return out;
}

// A CUDA stage test: skipped, never passed, where no GPU is.
class NeedsGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!kernels::gpu_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  }
};

}  // namespace deltaproof::testing

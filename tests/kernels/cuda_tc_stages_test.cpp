// tests/kernels/cuda_tc_stages_test.cpp — each stage of cuda-tc alone against
// its CPU twin (as llm.c tests each kernel against its CPU version):
// fwd.intra on the chunk's tokens, and fwd.inter, fwd.output, bwd.bk2 and
// bwd.bk1 each on the inputs the CPU twin's previous stage made
// (kernels/cuda/tc_stages.hpp launches one stage; kernels/cpu/chunk.hpp is the
// twin, in f32). Every quantity a stage stores or writes is held to TcStageBars
// (the bf16 class: derived below) and its figure printed. Shapes, chunk 64: a
// full chunk at K = V = 128 and at K = V = 64 (long memory), partial last
// chunks (L = 40; L = 17 at K = 100, V = 72, off the padded widths), strong
// decay (the stress regime, g in [-20, 0]), and one 16-row block of wide decays
// among narrow ones (block 2's g times 8). cuda-tc takes a diagonal block of A
// and M on the tensor cores where its decays are narrow and pair by pair where
// they are wide (tc.cu, kSpanLimit): the mild shapes take the first path, the
// stress one the second, block2_wide both in one chunk.
//
// Built where nvcc is, run where a GPU is:
//   build/bin/cuda_tc_stages_tests     (or ctest --test-dir build -L gpu)
// Where no GPU is, every CUDA test is skipped, never passed; TcStageBar (the
// bar against the twin's own bf16 emulation) runs on the CPU everywhere.
// In a falsify build, CudaTcStagesFalsify sees a fault of each stage turn
// that stage red.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/chunk.hpp"
#include "kernels/cuda/tc.hpp"
#include "kernels/cuda/tc_stages.hpp"
#include "kernels/faults.hpp"
#include "kernels/precision.hpp"
#include "tests/kernels/stage_compare.hpp"
#include "tests/kernels/stage_problem.hpp"

namespace deltaproof::testing {
namespace {

using kernels::cpu::MatF;
using kernels::cuda::HostMatrix;

// The bar of every cuda-tc stage quantity, on the relative Frobenius error
// against the f32 twin (StageFigure::rel_frobenius).
//
// cuda-tc is of the bf16 class (docs/PRECISION.md): every product reads
// operands rounded to bf16, unit roundoff u = 2^-8 (8 significant bits), and
// sums in f32; what a stage stores is bf16. Rounding to nearest moves a value
// by a relative eps, |eps| <= u, spread evenly: u / sqrt(3) rms. An element
// r = sum_k a_k b_k of a product then carries e = sum_k a_k b_k (eps_a + eps_b),
// independent errors that add in quadrature: rms(e) = sqrt(2/3) u
// sqrt(sum_k (a_k b_k)^2). Over a whole matrix, ||e||_F / ||r||_F =
// sqrt(2/3) u kappa, with kappa = sqrt(sum (a b)^2) / |sum a b| ~ 1 where the
// terms' signs are independent (the drawn q, k, v, h0, do): independent of the
// sizes, unlike a bound on the largest element (a few times larger, the tail of
// L x V draws), which is why this figure and not core's rel. The f32
// accumulation adds at most n 2^-24 < 2^-16 for n <= 128 terms: nothing.
// A quantity passes through at most about four rounding points in sequence
// (a token read in bf16, the operand formed from it, the stored intermediate,
// the next product's operand: q -> Qg -> O; k -> Kdec -> S_end), and cuda-tc
// rounds q, k and b each before it forms B*K*exp G: in quadrature,
// sqrt(4 (2/3) + 3 (1/3)) u ~ 2u. The bar is twice that, 4u = 2^-6: room for
// kappa up to 2 (cancellation, the sums of the backward). TcStageBar checks it
// against the class's own noise on these very problems: cpu-chunk under the
// bf16 contract stays at 0.01u to 1.1u. Every fault CudaTcStagesFalsify
// switches on moves its quantity by 0.43 or more, 25 times the bar.
struct TcStageBars {
  double rel_frobenius = std::ldexp(4.0, -8);
};

// One quantity against the twin's: the figure printed, a failure named.
void expect_stage(const char* stage, const char* quantity, const HostMatrix& cuda,
                  const MatF& cpu) {
  const ::testing::AssertionResult result = stage_matches(
      stage, quantity, cuda, cpu, TcStageBars{}.rel_frobenius, StageFigure::rel_frobenius);
  std::printf("  %s\n", result.message());
  EXPECT_TRUE(result);
}
// Red: the figure printed, a pass named.
void expect_stage_red(const char* fault, const char* stage, const char* quantity,
                      const HostMatrix& cuda, const MatF& cpu) {
  const ::testing::AssertionResult result = stage_matches(
      stage, quantity, cuda, cpu, TcStageBars{}.rel_frobenius, StageFigure::rel_frobenius);
  std::printf("  under %s: %s\n", fault, result.message());
  EXPECT_FALSE(result) << stage << " " << quantity << " stayed within its bar under " << fault;
}

// The CUDA stages run on the CPU twin's results of the stages before.
struct TwinChunk {
  ChunkProblem x;
  kernels::cpu::ChunkIntra intra;
  kernels::cpu::ChunkForward forward;
  CpuBackward backward;
  kernels::cuda::StageIntra host_intra;
};
TwinChunk twin_chunk(const StageCase& c) {
  TwinChunk t;
  t.x = chunk_problem(c);
  t.intra = kernels::cpu::chunk_intra(t.x.inputs);
  t.forward = kernels::cpu::chunk_output_and_state(t.intra, t.x.S0, t.x.shape.scale);
  t.backward = cpu_backward(t.x, t.intra);
  t.host_intra = host_intra(t.x.inputs, t.intra);
  return t;
}

kernels::cuda::StageForward cuda_inter(const TwinChunk& t) {
  return kernels::cuda::run_tc_fwd_inter(t.x.shape, t.host_intra, host(t.x.S0));
}
kernels::cuda::StageBk2 cuda_bk2(const TwinChunk& t) {
  return kernels::cuda::run_tc_bwd_bk2(t.x.shape, t.host_intra, host(t.x.dO), host(t.x.dS_end));
}
kernels::cuda::StageGradients cuda_bk1(const TwinChunk& t) {
  return kernels::cuda::run_tc_bwd_bk1(t.x.shape, t.x.tokens, t.host_intra, host(t.x.S0),
                                       host(t.forward.U), host(t.x.dO), host(t.x.dS_end),
                                       host(t.backward.dU));
}

class CudaTcStages : public NeedsGpu, public ::testing::WithParamInterface<StageCase> {};

TEST_P(CudaTcStages, FwdIntraMatchesItsCpuTwin) {
  const TwinChunk t = twin_chunk(GetParam());
  const kernels::cuda::StageIntra cuda = kernels::cuda::run_tc_fwd_intra(t.x.shape, t.x.tokens);
  expect_stage("fwd.intra", "Tinv", cuda.Tinv, t.intra.Tinv);
  expect_stage("fwd.intra", "Ut", cuda.Ut, t.intra.Ut);
  expect_stage("fwd.intra", "Wt", cuda.Wt, t.intra.Wt);
  expect_stage("fwd.intra", "M", cuda.M, t.intra.M);
  expect_stage("fwd.intra", "Qg", cuda.Qg, t.intra.Qg);
  expect_stage("fwd.intra", "Kdec", cuda.Kdec, t.intra.Kdec);
  expect_stage("fwd.intra", "decay_end", cuda.decay_end, MatF(t.intra.decay_end.transpose()));
}

TEST_P(CudaTcStages, FwdInterMatchesItsCpuTwin) {
  const TwinChunk t = twin_chunk(GetParam());
  const kernels::cuda::StageForward cuda = cuda_inter(t);
  expect_stage("fwd.inter", "U", cuda.U, t.forward.U);
  expect_stage("fwd.inter", "S_end", cuda.S_end, t.forward.S_end);
}

TEST_P(CudaTcStages, FwdOutputMatchesItsCpuTwin) {
  const TwinChunk t = twin_chunk(GetParam());
  const HostMatrix O =
      kernels::cuda::run_tc_fwd_output(t.x.shape, t.host_intra, host(t.x.S0), host(t.forward.U));
  expect_stage("fwd.output", "O", O, t.forward.O);
}

TEST_P(CudaTcStages, BwdBk2MatchesItsCpuTwin) {
  const TwinChunk t = twin_chunk(GetParam());
  const kernels::cuda::StageBk2 cuda = cuda_bk2(t);
  expect_stage("bwd.bk2", "dU", cuda.dU, t.backward.dU);
  expect_stage("bwd.bk2", "dS0", cuda.dS0, t.backward.dS0);
}

TEST_P(CudaTcStages, BwdBk1MatchesItsCpuTwin) {
  const TwinChunk t = twin_chunk(GetParam());
  const kernels::cuda::StageGradients cuda = cuda_bk1(t);
  const kernels::cpu::ChunkGradients& cpu = t.backward.grad;
  expect_stage("bwd.bk1", "dq", cuda.dq, cpu.dQ);
  expect_stage("bwd.bk1", "dk", cuda.dk, cpu.dK);
  expect_stage("bwd.bk1", "dv", cuda.dv, cpu.dV);
  expect_stage("bwd.bk1", "dg", cuda.dg, cpu.dG);
  expect_stage("bwd.bk1", "db", cuda.db, cpu.dB);
  expect_stage("bwd.bk1", "dw", cuda.dw, cpu.dW);
}

// tc_fwd_output holds no fault point (cuda-tc's catalog faults live in the
// other kernels), so its comparison is shown able to go red here, in every
// build: the stage handed S0 transposed, the bug state-transposed plants in
// cpu-chunk and cuda-chunk, against the twin's O of S0.
class CudaTcFwdOutput : public NeedsGpu {};

TEST_F(CudaTcFwdOutput, OnATransposedStateItIsRed) {
  const TwinChunk t =
      twin_chunk(StageCase{"L64_K64_V64_mild", 64, 64, 64, 64, oracle::Regime::mild});
  const HostMatrix O = kernels::cuda::run_tc_fwd_output(
      t.x.shape, t.host_intra, host(MatF(t.x.S0.transpose())), host(t.forward.U));
  expect_stage_red("S0 transposed", "fwd.output", "O", O, t.forward.O);
}

// o in bf16 (DeviceProblem::o_bf16: FLA's output type, what tc_capi's callers
// ask for) is the f32 o rounded to nearest even, element for element; and o in
// either type holds the same values where its buffer is not aligned to a pair
// of elements (a view into a larger tensor). fwd.output stores two columns at
// a time where V is even and the buffer aligned, else one at a time: L64
// K=V=128 takes both paths, L17 K5 V7 (odd V) the second.
TEST_F(CudaTcFwdOutput, InBf16ItIsItsF32ORoundedToNearestEvenAlignedOrNot) {
  for (const StageCase& c :
       {StageCase{"L64_K128_V128_mild", 64, 64, 128, 128, oracle::Regime::mild},
        StageCase{"L17_K5_V7", 17, 64, 5, 7}}) {
    const TwinChunk t = twin_chunk(c);
    const HostMatrix S0 = host(t.x.S0), U = host(t.forward.U);
    auto o_at = [&](bool bf16, int shift) {
      return kernels::cuda::run_tc_fwd_output(t.x.shape, t.host_intra, S0, U,
                                              kernels::cuda::OutputPlace{bf16, shift});
    };
    const HostMatrix o = o_at(false, 0);
    HostMatrix rounded = o;
    for (float& x : rounded)
      x = kernels::round_float(x, kernels::Precision::bf16, kernels::Rounding::nearest_even, 0);
    const struct {
      const char *what, *against;
      HostMatrix got, want;
    } cases[] = {
        {"f32 one element off", "the aligned f32 o", o_at(false, 1), o},
        {"bf16", "the f32 o rounded to nearest even", o_at(true, 0), rounded},
        {"bf16 one element off", "the f32 o rounded to nearest even", o_at(true, 1), rounded}};
    for (const auto& k : cases) {
      ASSERT_EQ(k.got.size(), k.want.size()) << c.name << ", " << k.what;
      int differ = 0, first = -1;
      for (std::size_t i = 0; i < k.want.size(); ++i)
        if (std::memcmp(&k.got[i], &k.want[i], sizeof(float)) != 0 && differ++ == 0)
          first = static_cast<int>(i);
      EXPECT_EQ(differ, 0) << c.name << ", o in " << k.what << ": " << differ << " of "
                           << k.want.size() << " elements differ from " << k.against
                           << "; the first at row " << first / c.V << ", column " << first % c.V;
    }
  }
}

// The bar against the bf16 class's own noise on each problem, on the CPU:
// each twin stage under the bf16 contract (operands and intermediates rounded
// to bf16 nearest even; outputs not, as each CUDA stage gives them in f32),
// what cuda-tc stores in bf16 rounded as it stores it, against the f32 twin.
// A bar below these figures would fail a correct kernel of the class.
class TcStageBar : public ::testing::TestWithParam<StageCase> {};

MatF stored_bf16(const MatF& x) {
  MatF out = x;
  for (Eigen::Index i = 0; i < out.size(); ++i)
    out.data()[i] = kernels::round_float(out.data()[i], kernels::Precision::bf16,
                                         kernels::Rounding::nearest_even, 0);
  return out;
}

TEST_P(TcStageBar, TheTwinUnderTheBf16ContractIsWithinIt) {
  const TwinChunk t = twin_chunk(GetParam());
  kernels::PrecisionContract contract;
  contract.precision = kernels::Precision::bf16;
  contract.outputs = false;
  kernels::Rounder round(contract, 0);
  const kernels::cpu::ChunkIntra intra = kernels::cpu::chunk_intra(t.x.inputs, round);
  expect_stage("fwd.intra", "Tinv", host(stored_bf16(intra.Tinv)), t.intra.Tinv);
  expect_stage("fwd.intra", "Ut", host(intra.Ut), t.intra.Ut);
  expect_stage("fwd.intra", "Wt", host(intra.Wt), t.intra.Wt);
  expect_stage("fwd.intra", "M", host(stored_bf16(intra.M)), t.intra.M);
  expect_stage("fwd.intra", "Qg", host(stored_bf16(intra.Qg)), t.intra.Qg);
  expect_stage("fwd.intra", "Kdec", host(stored_bf16(intra.Kdec)), t.intra.Kdec);
  const kernels::cpu::ChunkForward forward =
      kernels::cpu::chunk_output_and_state(t.intra, t.x.S0, t.x.shape.scale, round);
  expect_stage("fwd.inter", "U", host(forward.U), t.forward.U);
  expect_stage("fwd.inter", "S_end", host(forward.S_end), t.forward.S_end);
  expect_stage("fwd.output", "O", host(forward.O), t.forward.O);
  const CpuBackward backward = cpu_backward(t.x, t.intra, round);
  expect_stage("bwd.bk2", "dU", host(backward.dU), t.backward.dU);
  expect_stage("bwd.bk2", "dS0", host(backward.dS0), t.backward.dS0);
  const kernels::cpu::ChunkGradients& exact = t.backward.grad;
  expect_stage("bwd.bk1", "dq", host(backward.grad.dQ), exact.dQ);
  expect_stage("bwd.bk1", "dk", host(backward.grad.dK), exact.dK);
  expect_stage("bwd.bk1", "dv", host(backward.grad.dV), exact.dV);
  expect_stage("bwd.bk1", "dg", host(backward.grad.dG), exact.dG);
  expect_stage("bwd.bk1", "db", host(backward.grad.dB), exact.dB);
  expect_stage("bwd.bk1", "dw", host(backward.grad.dW), exact.dW);
}

const auto kShapes = ::testing::Values(
    StageCase{"L64_K128_V128", 64, 64, 128, 128},
    StageCase{"L64_K64_V64_mild", 64, 64, 64, 64, oracle::Regime::mild},
    StageCase{"L40_K128_V128", 40, 64, 128, 128},
    StageCase{"L64_K128_V128_stress", 64, 64, 128, 128, oracle::Regime::stress},
    StageCase{"L17_K100_V72_mild", 17, 64, 100, 72, oracle::Regime::mild},
    StageCase{"L64_K128_V128_block2_wide", 64, 64, 128, 128, oracle::Regime::default_, 2});
std::string case_name(const ::testing::TestParamInfo<StageCase>& info) { return info.param.name; }

// The largest span (largest G less least) of any channel's cumulative decay
// within each 16-row block of the chunk: a block is wide for cuda-tc above
// TcConfig::kSpanLimit.
std::vector<float> block_spans(const StageCase& c) {
  const MatF& G = chunk_problem(c).inputs.G;
  std::vector<float> spans;
  for (Eigen::Index r0 = 0; r0 < G.rows(); r0 += 16) {
    const auto block = G.middleRows(r0, std::min<Eigen::Index>(16, G.rows() - r0));
    spans.push_back((block.colwise().maxCoeff() - block.colwise().minCoeff()).maxCoeff());
  }
  return spans;
}

// The shapes take the paths the file's head says: block2_wide's block 2 wide
// and its other blocks narrow (both paths in one chunk), the stress shape's
// blocks all wide, the mild ones' all narrow. On the CPU, everywhere.
TEST(CudaTcStageShapes, EachTakesThePathsItIsThereFor) {
  const float limit = kernels::cuda::TcConfig::kSpanLimit;
  auto expect_blocks = [&](const StageCase& c, auto wide) {
    const std::vector<float> spans = block_spans(c);
    for (std::size_t R = 0; R < spans.size(); ++R) {
      std::printf("  %s block %zu: span %.2f\n", c.name, R, spans[R]);
      EXPECT_EQ(spans[R] > limit, wide(static_cast<int>(R)))
          << c.name << " block " << R << " span " << spans[R] << " against " << limit;
    }
  };
  expect_blocks(
      StageCase{"L64_K128_V128_block2_wide", 64, 64, 128, 128, oracle::Regime::default_, 2},
      [](int R) { return R == 2; });
  expect_blocks(StageCase{"L64_K128_V128_stress", 64, 64, 128, 128, oracle::Regime::stress},
                [](int) { return true; });
  expect_blocks(StageCase{"L64_K64_V64_mild", 64, 64, 64, 64, oracle::Regime::mild},
                [](int) { return false; });
  expect_blocks(StageCase{"L17_K100_V72_mild", 17, 64, 100, 72, oracle::Regime::mild},
                [](int) { return false; });
}
INSTANTIATE_TEST_SUITE_P(Shapes, CudaTcStages, kShapes, case_name);
INSTANTIATE_TEST_SUITE_P(Shapes, TcStageBar, kShapes, case_name);

#ifdef DELTAPROOF_FALSIFY
// Each comparison can go red on the device: one fault of each stage's kernel
// switched on for the CUDA stage alone (the twin is computed first, clean: a
// fault point of cpu-chunk's stage functions, as double-exp-chunk-decay's in
// chunk_intra, would move it too). Long memory (mild, K = V = 64), so that the
// state carries through the chunk and a fault of it shows. fwd.output has no
// fault point: CudaTcFwdOutput, above.
class CudaTcStagesFalsify : public NeedsGpu {
 protected:
  void TearDown() override { kernels::set_active_fault("none"); }
  const TwinChunk t =
      twin_chunk(StageCase{"L64_K64_V64_mild", 64, 64, 64, 64, oracle::Regime::mild});
};

// exp(G_C) where G_C belongs: decay_end = exp(exp(G_C)); Tinv does not read it.
TEST_F(CudaTcStagesFalsify, DoubleExpChunkDecayTurnsFwdIntrasDecayEndRed) {
  kernels::set_active_fault("double-exp-chunk-decay");
  const kernels::cuda::StageIntra cuda = kernels::cuda::run_tc_fwd_intra(t.x.shape, t.x.tokens);
  expect_stage_red("double-exp-chunk-decay", "fwd.intra", "decay_end", cuda.decay_end,
                   MatF(t.intra.decay_end.transpose()));
  expect_stage_red("double-exp-chunk-decay", "fwd.intra", "Kdec", cuda.Kdec, t.intra.Kdec);
  expect_stage("fwd.intra", "Tinv", cuda.Tinv, t.intra.Tinv);
}

// S0 = 0: U = Ut and S_end = Kdec^T Ut.
TEST_F(CudaTcStagesFalsify, H0IgnoredTurnsFwdIntersURed) {
  kernels::set_active_fault("h0-ignored");
  const kernels::cuda::StageForward cuda = cuda_inter(t);
  expect_stage_red("h0-ignored", "fwd.inter", "U", cuda.U, t.forward.U);
  expect_stage_red("h0-ignored", "fwd.inter", "S_end", cuda.S_end, t.forward.S_end);
}

// dS_end = 0: dU = scale M^T dO and dS0 loses Diag(exp G_C) dS_end.
TEST_F(CudaTcStagesFalsify, DhtIgnoredTurnsBwdBk2sDuRed) {
  kernels::set_active_fault("dht-ignored");
  const kernels::cuda::StageBk2 cuda = cuda_bk2(t);
  expect_stage_red("dht-ignored", "bwd.bk2", "dU", cuda.dU, t.backward.dU);
  expect_stage_red("dht-ignored", "bwd.bk2", "dS0", cuda.dS0, t.backward.dS0);
}

// dg's sign flipped in tc_bwd_tokens; dq, written beside it, stays green.
TEST_F(CudaTcStagesFalsify, DgSignFlippedTurnsBwdBk1sDgRed) {
  kernels::set_active_fault("dg-sign-flipped");
  const kernels::cuda::StageGradients cuda = cuda_bk1(t);
  expect_stage_red("dg-sign-flipped", "bwd.bk1", "dg", cuda.dg, t.backward.grad.dG);
  expect_stage("bwd.bk1", "dq", cuda.dq, t.backward.grad.dQ);
}
#endif

}  // namespace
}  // namespace deltaproof::testing

// kernels/cuda/tc_stages.hpp — each stage of cuda-tc launched alone, on one
// chunk of one (batch, head) given as host matrices: what lets a test hold each
// tensor-core kernel against its CPU twin (kernels/cpu/chunk.hpp), as
// kernels/cuda/stages.hpp does for cuda-chunk. Used by
// tests/kernels/cuda_tc_stages_test.cpp; defined in kernels/cuda/tc.cu (the
// kernels stay private there).
//
// The types are cuda-chunk's (stages.hpp), and they mean what cpu-chunk's
// quantities mean: row-major f32, L rows for a chunk of L <= 64 tokens (L < 64:
// a partial last chunk), Qg = Q*exp G and M without the scale. cuda-tc's
// scratch differs (tc.hpp's TcScratch): bf16 (but decay_end), Kdec, U, S0 and
// dS_end transposed, rows padded to 64 and channels to 64 or 128, and the
// scale folded into Qg and M. Each function converts at the boundary: going in,
// a quantity is transposed, padded with zeros, multiplied by the scale where
// the scratch carries it and rounded to bf16 (nearest even) where the scratch
// is bf16; coming out, the reverse (a bf16 value widened exactly, then divided
// by the scale). Tokens, states and cotangents go in as the kernels read them
// from a run (f32 inputs: each kernel rounds q, k, b and do itself), outputs
// come back as written (f32).
//
// Stage by stage (tc.cu's header):
//   fwd.intra   tc_fwd_intra                     tokens -> Tinv Ut Wt M Qg Kdec decay_end
//   fwd.inter   tc_fwd_state                     Wt Kdec Ut decay_end, S0 -> U, S_end
//   fwd.output  tc_fwd_output                    Qg M, S0, U -> O
//   bwd.bk2     tc_bwd_state                     M Kdec Qg Wt decay_end, dO, dS_end -> dU, dS0
//   bwd.bk1     tc_bwd_products, tc_bwd_tokens   tokens, Tinv Ut Wt decay_end, S0, U, dO,
//                                                dS_end, dU -> dq dk dv dg db dw
// G is not in cuda-tc's scratch (fwd.intra and tc_bwd_tokens each form it from
// g in shared memory): run_tc_fwd_intra leaves StageIntra::G empty, and no
// stage reads it. A StageIntra field a stage does not read may be empty.
//
// `faults`: the fault points switched on (kernels/faults.hpp); the default is
// the one switched on now, as in a run. Throws std::runtime_error naming the
// kernel and the shape on a CUDA error, a shape cuda-tc does not support
// (TcConfig::supports: chunk 64, K and V up to 128) or a matrix of the wrong
// size. Plain C++.
#pragma once

#include "kernels/cuda/device_problem.hpp"
#include "kernels/cuda/stages.hpp"

namespace deltaproof::kernels::cuda {

// fwd.intra: from the tokens (StageIntra::G left empty).
StageIntra run_tc_fwd_intra(const StageShape& s, const StageTokens& x,
                            CudaFaults faults = active_faults());
// fwd.inter: from fwd.intra's Wt, Kdec, Ut, decay_end and the chunk-start
// state S0 (K x V): U and S_end (StageForward::O is fwd.output's, left empty).
StageForward run_tc_fwd_inter(const StageShape& s, const StageIntra& intra, const HostMatrix& S0,
                              CudaFaults faults = active_faults());
// fwd.output: O (L x V) from fwd.intra's Qg and M, S0 and fwd.inter's U (L x V).
HostMatrix run_tc_fwd_output(const StageShape& s, const StageIntra& intra, const HostMatrix& S0,
                             const HostMatrix& U, CudaFaults faults = active_faults());
// Where fwd.output writes o: in bf16 (DeviceProblem::o_bf16) or f32, `shift`
// elements into a buffer of its own (odd: not aligned to a pair of elements).
struct OutputPlace {
  bool bf16 = false;
  int shift = 0;
};
// The same with o written there (a bf16 o widened exactly).
HostMatrix run_tc_fwd_output(const StageShape& s, const StageIntra& intra, const HostMatrix& S0,
                             const HostMatrix& U, const OutputPlace& o,
                             CudaFaults faults = active_faults());
// bwd.bk2: from fwd.intra's M, Kdec, Qg, Wt, decay_end, dO (L x V) and the
// chunk-end dS_end (K x V).
StageBk2 run_tc_bwd_bk2(const StageShape& s, const StageIntra& intra, const HostMatrix& dO,
                        const HostMatrix& dS_end, CudaFaults faults = active_faults());
// bwd.bk1: from the tokens, fwd.intra's Tinv, Ut, Wt, decay_end, fwd.inter's
// S0 and U, dO, and bwd.bk2's dS_end and dU.
StageGradients run_tc_bwd_bk1(const StageShape& s, const StageTokens& x, const StageIntra& intra,
                              const HostMatrix& S0, const HostMatrix& U, const HostMatrix& dO,
                              const HostMatrix& dS_end, const HostMatrix& dU,
                              CudaFaults faults = active_faults());

}  // namespace deltaproof::kernels::cuda

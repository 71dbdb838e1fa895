// kernels/cuda/stages.hpp — each stage of cuda-chunk launched alone, on one
// chunk of one (batch, head) given as host matrices: what lets a test hold each
// CUDA kernel against its CPU twin (kernels/cpu/chunk.hpp), as llm.c tests each
// kernel against its CPU version. Used by tests/kernels/cuda_stages_test.cpp;
// defined in kernels/cuda/chunk.cu (the kernels stay private there).
//
// Matrices are row-major std::vector<float> in cpu-chunk's shapes, with L rows
// for a chunk of L <= chunk tokens (L < chunk: a partial last chunk). Each
// function uploads its inputs into the stage's scratch layout (ChunkScratch in
// chunk.cu: transposes, rows padded to the chunk, channels to a multiple of 4),
// launches the stage's one kernel as run_chunk does (f32 inputs, no precision
// contract; every launch checked), and downloads what the kernel writes. The
// fault switched on in a falsify build (kernels/faults.hpp) acts as in a run.
// Throws std::runtime_error naming the kernel and the shape on a CUDA error or
// a shape the traits do not support (kernels/cuda/traits.cuh). Plain C++.
#pragma once

#include <vector>

namespace deltaproof::kernels::cuda {

using HostMatrix = std::vector<float>;  // row-major

struct StageShape {
  int L = 1;         // the chunk's rows (tokens)
  int chunk = 16;    // C
  int K = 1, V = 1;  // key and value channels
  float scale = 1.0f;
};

// The chunk's tokens: L x K (q k g b), L x V (v w); g per token (fwd.intra
// forms the cumulative G).
struct StageTokens {
  HostMatrix q, k, v, g, b, w;
};

// What fwd.intra stores for the later stages (cpu-chunk's ChunkIntra and its
// G; A stays in fwd.intra's shared memory): L x K (G Wt Qg Kdec), L x L (Tinv
// M), L x V (Ut), K (decay_end).
struct StageIntra {
  HostMatrix G, Tinv, Ut, Wt, M, Qg, Kdec, decay_end;
};

// fwd.inter: L x V (U O), K x V (S_end).
struct StageForward {
  HostMatrix U, O, S_end;
};

// bwd.bk2: L x V (dU), K x V (dS0).
struct StageBk2 {
  HostMatrix dU, dS0;
};

// bwd.bk1: L x K (dq dk dg db), L x V (dv dw); dg wrt the per-token g.
struct StageGradients {
  HostMatrix dq, dk, dv, dg, db, dw;
};

// fwd.intra: from the tokens.
StageIntra run_fwd_intra(const StageShape& s, const StageTokens& x);
// fwd.inter: from fwd.intra's results and the chunk-start state S0 (K x V).
StageForward run_fwd_inter(const StageShape& s, const StageIntra& intra, const HostMatrix& S0);
// bwd.bk2: from fwd.intra's results, dO (L x V) and the chunk-end dS_end (K x V).
StageBk2 run_bwd_bk2(const StageShape& s, const StageIntra& intra, const HostMatrix& dO,
                     const HostMatrix& dS_end);
// bwd.bk1: from the tokens, fwd.intra's results, fwd.inter's S0 and U, dO,
// and bwd.bk2's dS_end and dU.
StageGradients run_bwd_bk1(const StageShape& s, const StageTokens& x, const StageIntra& intra,
                           const HostMatrix& S0, const HostMatrix& U, const HostMatrix& dO,
                           const HostMatrix& dS_end, const HostMatrix& dU);

}  // namespace deltaproof::kernels::cuda

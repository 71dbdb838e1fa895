// kernels/cpu/chunk.hpp — the chunked (WY) algorithm of DESIGN.md section 2 in
// f32 on the host: the readable twin of kernels/cuda (same stages, same names:
// A, Tinv, Ut, Wt, U, M, G, dS). Each stage is a function a test can call alone.
//
// Within a chunk, rows r = 0..L-1 (L <= C; the last chunk may be partial), G
// the cumulative log-decay from the chunk start (a local reference point, so
// every exponential below is of a difference G_r - G_i <= 0 or of G <= 0: none
// overflows, whatever g is):
//   A_ri = sum_k b_rk k_rk exp(G_rk - G_ik) k_ik   (i < r)      Tinv = (I + A)^-1
//   Ut = Tinv (W*V)    Wt = Tinv (B*K*exp G)    U = Ut - Wt S0
//   M_ri = sum_k q_rk exp(G_rk - G_ik) k_ik       (i <= r)
//   O = scale [(Q*exp G) S0 + M U]     S_end = Diag(exp G_C) S0 + (K*exp(G_C - G))^T U
#pragma once

#include <Eigen/Dense>

#include "kernels/backend.hpp"
#include "kernels/precision.hpp"

namespace deltaproof::kernels::cpu {

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecF = Eigen::Matrix<float, Eigen::Dynamic, 1>;

// Precision contracts (kernels/precision.hpp): every stage takes a Rounder and
// rounds at the points its contract names — each matrix product's operands,
// the stored intermediates (Ut, Wt, U, dU, the states a product reads), the
// outputs. The default rounds nothing: the f32 kernel.
Rounder& exact_rounder();
// A matrix at a rounding point: a product's operand, or a stored intermediate.
MatF operand(Rounder& round, const MatF& x);
MatF intermediate(Rounder& round, const MatF& x);

// One chunk of one (batch, head), in gdn2 form (kda's beta broadcast into B and
// W, gdn's g over K). G is the cumulative sum of g from the chunk start.
struct ChunkInputs {
  MatF Q, K, V, G, B, W;  // L x Kd (Q K G B), L x Vd (V W)
  bool tail = false;      // a partial last chunk, shorter than the chunk size
  int length() const { return static_cast<int>(Q.rows()); }
};

// The WY representation of a chunk: everything that does not depend on S0.
struct ChunkIntra {
  MatF A, Tinv, Ut, Wt, M;
  MatF Qg;         // Q * exp(G)
  MatF Kdec;       // K * exp(G_C - G)
  VecF decay_end;  // exp(G_C), G_C the last row's G
};

// fwd stage "fwd.intra": A, Tinv, Ut, Wt, M (token-parallel, any chunk order).
ChunkIntra chunk_intra(const ChunkInputs& x, Rounder& round = exact_rounder());

struct ChunkForward {
  MatF U, O, S_end;
};
// fwd stage "fwd.inter": U, O and the chunk-end state from the chunk-start state S0.
ChunkForward chunk_output_and_state(const ChunkIntra& intra, const MatF& S0, float scale,
                                    Rounder& round = exact_rounder());

// bwd stage "bwd.bk2": the gradient wrt the chunk-start state,
//   dS0 = scale (Q*exp G)^T dO + Diag(exp G_C) dS_end - Wt^T dU,
//   dU  = scale M^T dO + (K*exp(G_C - G)) dS_end.
MatF bk2_state_gradient(const ChunkIntra& intra, const MatF& dO, const MatF& dS_end, float scale,
                        Rounder& round = exact_rounder());

// bwd stage "bwd.bk1": the intra-chunk adjoint, given the chunk's S0 and dS_end.
struct ChunkGradients {
  MatF dQ, dK, dV, dG, dB, dW;  // dG is wrt the per-token g (reverse cumsum done)
};
ChunkGradients bk1_chunk_adjoint(const ChunkInputs& x, const ChunkIntra& intra, const MatF& S0,
                                 const MatF& dO, const MatF& dS_end, float scale, MatF& du_scratch,
                                 Rounder& round = exact_rounder());

// The whole sequence of one (batch, head) with its stages; `states` receives
// S0 of every chunk and the final state (the glue's saved chunk-start states).
struct HeadSequence {
  MatF Q, K, V, g, B, W;  // T x ...; g per token (not cumulative)
  MatF h0;
};
struct HeadResult {
  MatF O, ht;
  ChunkGradients grad;  // whole-sequence gradients (T rows)
  MatF dh0;
};
// Outputs come back unrounded: the backend rounds them as written (kda's dbeta
// and gdn's dg are sums over channels, rounded once).
HeadResult run_head(const HeadSequence& x, int chunk, float scale, bool backward, const MatF& dO,
                    const MatF& dht, ExecutionRecord& record, Rounder& round = exact_rounder());

}  // namespace deltaproof::kernels::cpu

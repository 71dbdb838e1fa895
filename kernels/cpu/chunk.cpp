// kernels/cpu/chunk.cpp — the chunked forward and the BK2 / BK1 / glue
// backward in f32. See chunk.hpp for the equations; the backward's are beside
// each block. Fault points (kernels/faults.hpp) sit where the known bugs live.
#include "kernels/cpu/chunk.hpp"

#include <cmath>
#include <vector>

#include "kernels/faults.hpp"

namespace deltaproof::kernels::cpu {
namespace {

// Rows [start, start + length) of one head, with G the cumulative g from the
// chunk start.
ChunkInputs chunk_slice(const HeadSequence& x, int start, int length) {
  ChunkInputs c;
  c.Q = x.Q.middleRows(start, length);
  c.K = x.K.middleRows(start, length);
  c.V = x.V.middleRows(start, length);
  c.B = x.B.middleRows(start, length);
  c.W = x.W.middleRows(start, length);
  c.G.resize(length, x.g.cols());
  VecF running = VecF::Zero(x.g.cols());
  for (int r = 0; r < length; ++r) {
    if (DELTAPROOF_FAULT(cumulative_decay_off_by_one)) {
      c.G.row(r) = running.transpose();  // exclusive: sum_{i<r} g_i
      running += x.g.row(start + r).transpose();
    } else {
      running += x.g.row(start + r).transpose();  // inclusive: sum_{i<=r} g_i
      c.G.row(r) = running.transpose();
    }
  }
  return c;
}

// exp(a - b): the decay between two cumulative gates, a <= b. Under the
// tail fault a partial last chunk takes a path that factorises it, as a
// kernel that pre-scales its rows does, and exp(-b) overflows past 88.7.
float decay_between(const ChunkInputs& x, float a, float b) {
  if (DELTAPROOF_FAULT(tail_decay_factorised) && x.tail) return std::exp(a) * std::exp(-b);
  return std::exp(a - b);
}

MatF rounded(Rounder& round, const MatF& x, float (Rounder::*at)(float)) {
  MatF out(x.rows(), x.cols());
  for (Eigen::Index r = 0; r < x.rows(); ++r)
    for (Eigen::Index c = 0; c < x.cols(); ++c) out(r, c) = (round.*at)(x(r, c));
  return out;
}

}  // namespace

Rounder& exact_rounder() {
  thread_local Rounder exact;
  return exact;
}

MatF operand(Rounder& round, const MatF& x) {
  return round.operands() ? rounded(round, x, &Rounder::operand) : x;
}

MatF intermediate(Rounder& round, const MatF& x) {
  return round.intermediates() ? rounded(round, x, &Rounder::intermediate) : x;
}

ChunkIntra chunk_intra(const ChunkInputs& x, Rounder& round) {
  const int L = x.length();
  const auto Kd = x.K.cols();
  ChunkIntra out;
  out.A = MatF::Zero(L, L);
  out.M = MatF::Zero(L, L);
  // the row operands of A and M: Q and B*K (the decayed key is rounded per pair)
  const MatF Q_op = operand(round, x.Q);
  const MatF BK_op =
      operand(round, DELTAPROOF_FAULT(b_dropped_from_a) ? x.K : MatF(x.B.cwiseProduct(x.K)));
  // A_ri (i < r) and M_ri (i <= r), each exponential of a difference G_r - G_i <= 0
  for (int r = 0; r < L; ++r) {
    for (int i = 0; i <= r; ++i) {
      float a = 0.0f, m = 0.0f;
      for (Eigen::Index k = 0; k < Kd; ++k) {
        const float decayed_key = round.operand(x.K(i, k) * decay_between(x, x.G(r, k), x.G(i, k)));
        m += Q_op(r, k) * decayed_key;
        a += BK_op(r, k) * decayed_key;
      }
      out.M(r, i) = m;
      if (i < r) out.A(r, i) = a;
    }
  }
  const MatF identity = MatF::Identity(L, L);
  MatF unit_lower = identity + out.A;
  out.Tinv = unit_lower.triangularView<Eigen::UnitLower>().solve(identity);
  const MatF E = x.G.array().exp().matrix();
  const MatF Tinv_op = operand(round, out.Tinv);
  out.Ut = intermediate(round, Tinv_op * operand(round, x.W.cwiseProduct(x.V)));
  out.Wt = intermediate(round, Tinv_op * operand(round, x.B.cwiseProduct(x.K).cwiseProduct(E)));
  out.Qg = x.Q.cwiseProduct(E);
  const VecF G_end = x.G.row(L - 1).transpose();
  out.decay_end = G_end.array().exp().matrix();
  out.Kdec.resize(L, Kd);
  for (int i = 0; i < L; ++i)
    for (Eigen::Index k = 0; k < Kd; ++k) {
      // the bug of background/000: exp(exp(G_C) - G), the chunk-end decay exponentiated twice
      const float end = DELTAPROOF_FAULT(double_exp_chunk_decay) ? out.decay_end(k) : G_end(k);
      out.Kdec(i, k) = x.K(i, k) * decay_between(x, end, x.G(i, k));
    }
  return out;
}

ChunkForward chunk_output_and_state(const ChunkIntra& intra, const MatF& S0, float scale,
                                    Rounder& round) {
  // the state a product reads is the stored one; the carried S_end stays f32
  const MatF S0_op = operand(round, intermediate(round, S0));
  ChunkForward out;
  out.U = intermediate(round, intra.Ut - operand(round, intra.Wt) * S0_op);
  const MatF U_op = operand(round, out.U);
  out.O = scale * (operand(round, intra.Qg) * S0_op + operand(round, intra.M) * U_op);
  out.S_end = intra.decay_end.asDiagonal() * S0;
  out.S_end.noalias() += operand(round, intra.Kdec).transpose() * U_op;
  return out;
}

MatF bk2_state_gradient(const ChunkIntra& intra, const MatF& dO, const MatF& dS_end, float scale,
                        Rounder& round) {
  const MatF dO_op = operand(round, dO);
  const MatF dS_end_op = operand(round, intermediate(round, dS_end));
  const MatF dU = intermediate(round, scale * operand(round, intra.M).transpose() * dO_op +
                                          operand(round, intra.Kdec) * dS_end_op);
  MatF dS0 = scale * operand(round, intra.Qg).transpose() * dO_op;
  dS0.noalias() += intra.decay_end.asDiagonal() * dS_end;
  dS0.noalias() -= operand(round, intra.Wt).transpose() * operand(round, dU);
  return dS0;
}

ChunkGradients bk1_chunk_adjoint(const ChunkInputs& x, const ChunkIntra& intra, const MatF& S0,
                                 const MatF& dO, const MatF& dS_end, float scale, MatF& du_scratch,
                                 Rounder& round) {
  const int L = x.length();
  const auto Kd = x.K.cols();
  // every product below reads its operands rounded (identity under f32)
  auto op = [&round](const MatF& m) { return operand(round, m); };
  const MatF S0_op = op(intermediate(round, S0));
  const MatF dS_end_op = op(intermediate(round, dS_end));
  const MatF dO_op = op(dO);
  const MatF Tinv_op = op(intra.Tinv);
  const MatF U = intermediate(round, intra.Ut - op(intra.Wt) * S0_op);
  const MatF U_op = op(U);

  // dU = scale M^T dO + Kdec dS_end (the scratch must be overwritten, not accumulated)
  const MatF dU_now =
      intermediate(round, scale * op(intra.M).transpose() * dO_op + op(intra.Kdec) * dS_end_op);
  if (DELTAPROOF_FAULT(scratch_read_before_write)) {
    if (du_scratch.rows() != L || du_scratch.cols() != U.cols())
      du_scratch = MatF::Zero(L, U.cols());
    du_scratch.noalias() += dU_now;
  } else {
    du_scratch = dU_now;
  }
  const MatF dU_op = op(du_scratch);

  // O = scale [Qg S0 + M U]: dM (i <= r), dQg
  MatF dM = (scale * dO_op * U_op.transpose()).triangularView<Eigen::Lower>();
  const MatF dQg = scale * dO_op * S0_op.transpose();
  // S_end = Diag(exp G_C) S0 + Kdec^T U: dKdec, d(exp G_C)
  const MatF dKdec = U_op * dS_end_op.transpose();
  const VecF d_decay_end = dS_end.cwiseProduct(S0).rowwise().sum();
  // U = Ut - Wt S0, Ut = Tinv X, Wt = Tinv Y: dX = Tinv^T dU, dY = -Tinv^T dU S0^T
  const MatF dX = Tinv_op.transpose() * dU_op;
  const MatF dY = -(Tinv_op.transpose() * op(dU_op * S0_op.transpose()));
  // Tinv = (I + A)^-1: dA = -Tinv^T dTinv Tinv^T = -(dX Ut^T + dY Wt^T), strictly lower
  MatF dA = -(op(dX) * op(intra.Ut).transpose() + op(dY) * op(intra.Wt).transpose());
  dA = dA.triangularView<Eigen::StrictlyLower>();
  // the pairwise adjoints below are products with dM and dA as operands
  dM = op(dM);
  dA = op(dA);

  const MatF E = x.G.array().exp().matrix();
  ChunkGradients d;
  // X = W*V
  d.dW = dX.cwiseProduct(x.V);
  d.dV = dX.cwiseProduct(x.W);
  // Y = B*K*E
  d.dB = dY.cwiseProduct(x.K).cwiseProduct(E);
  d.dK = dY.cwiseProduct(x.B).cwiseProduct(E);
  MatF dE = dY.cwiseProduct(x.B).cwiseProduct(x.K);
  // Qg = Q*E
  d.dQ = dQg.cwiseProduct(E);
  dE += dQg.cwiseProduct(x.Q);
  MatF dG = dE.cwiseProduct(E);  // wrt the cumulative G

  // M_ri and A_ri through their pairwise decays exp(G_r - G_i)
  for (int r = 0; r < L; ++r) {
    for (int i = 0; i <= r; ++i) {
      const float dm = dM(r, i);
      const float da = i < r ? dA(r, i) : 0.0f;
      if (dm == 0.0f && da == 0.0f) continue;
      for (Eigen::Index k = 0; k < Kd; ++k) {
        const float decay = std::exp(x.G(r, k) - x.G(i, k));
        const float m = dm * decay;
        d.dQ(r, k) += m * x.K(i, k);
        d.dK(i, k) += m * x.Q(r, k);
        float through_g = m * x.Q(r, k) * x.K(i, k);
        const float a = da * decay;
        d.dB(r, k) += a * x.K(r, k) * x.K(i, k);
        d.dK(r, k) += a * x.B(r, k) * x.K(i, k);
        d.dK(i, k) += a * x.B(r, k) * x.K(r, k);
        through_g += a * x.B(r, k) * x.K(r, k) * x.K(i, k);
        dG(r, k) += through_g;
        dG(i, k) -= through_g;
      }
    }
  }
  // Kdec = K * exp(G_C - G) and exp(G_C)
  for (int i = 0; i < L; ++i)
    for (Eigen::Index k = 0; k < Kd; ++k) {
      const float decay = std::exp(x.G(L - 1, k) - x.G(i, k));
      d.dK(i, k) += dKdec(i, k) * decay;
      const float through_g = dKdec(i, k) * x.K(i, k) * decay;
      dG(L - 1, k) += through_g;
      dG(i, k) -= through_g;
    }
  for (Eigen::Index k = 0; k < Kd; ++k) dG(L - 1, k) += d_decay_end(k) * intra.decay_end(k);
  // G_r = sum_{i<=r} g_i: dg is the reverse cumulative sum of dG
  for (int r = L - 2; r >= 0; --r) dG.row(r) += dG.row(r + 1);
  d.dG = std::move(dG);
  return d;
}

HeadResult run_head(const HeadSequence& x, int chunk, float scale, bool backward, const MatF& dO,
                    const MatF& dht, ExecutionRecord& record, Rounder& round) {
  const int T = static_cast<int>(x.Q.rows());
  const int num_chunks =
      DELTAPROOF_FAULT(ceil_div_off_by_one) ? (T + chunk - 2) / chunk : (T + chunk - 1) / chunk;
  const auto Kd = x.K.cols();
  const auto Vd = x.V.cols();
  auto start_of = [&](int c) {
    if (DELTAPROOF_FAULT(chunk_shift_lacks_32)) return c << (chunk == 64 ? 6 : 4);
    return c * chunk;
  };
  auto length_of = [&](int c) { return std::min(chunk, T - start_of(c)); };
  // rows no chunk writes (only under a fault) stay NaN, as an unwritten output
  const float unwritten = std::nanf("");

  // forward: intra-chunk WY representation, then the sequential chunk carry
  std::vector<ChunkInputs> inputs(num_chunks);
  std::vector<ChunkIntra> intra(num_chunks);
  std::vector<MatF> chunk_start(num_chunks);  // the glue's saved chunk-start states
  HeadResult out;
  out.O = MatF::Constant(T, Vd, unwritten);
  const bool no_h0 =
      DELTAPROOF_FAULT(h0_ignored) || (DELTAPROOF_FAULT(short_call_ignores_h0) && T < chunk);
  MatF state = no_h0 ? MatF::Zero(x.h0.rows(), x.h0.cols()) : x.h0;
  for (int c = 0; c < num_chunks; ++c) {
    inputs[c] = chunk_slice(x, start_of(c), length_of(c));
    inputs[c].tail = length_of(c) < chunk;
    intra[c] = chunk_intra(inputs[c], round);
    record.note("fwd.intra");
    MatF S0 = DELTAPROOF_FAULT(state_not_carried) ? x.h0 : state;
    if (DELTAPROOF_FAULT(state_transposed) && S0.rows() == S0.cols()) S0.transposeInPlace();
    chunk_start[c] = S0;
    ChunkForward f = chunk_output_and_state(intra[c], S0, scale, round);
    record.note("fwd.inter");
    out.O.middleRows(start_of(c), length_of(c)) = f.O;
    state = std::move(f.S_end);
  }
  out.ht = state;
  if (!backward) return out;

  // BK2 + glue: dS handed from each chunk's start back to the previous chunk's end
  std::vector<MatF> dS_end(num_chunks);
  MatF dS0 = DELTAPROOF_FAULT(dht_ignored) ? MatF::Zero(Kd, Vd) : dht;
  for (int c = num_chunks - 1; c >= 0; --c) {
    dS_end[c] = dS0;
    dS0 = bk2_state_gradient(intra[c], dO.middleRows(start_of(c), length_of(c)), dS_end[c], scale,
                             round);
    record.note("bwd.bk2");
    if (c > 0) {
      if (DELTAPROOF_FAULT(ds_not_handed_back)) dS0 = MatF::Zero(Kd, Vd);
      record.note("bwd.glue");
    }
  }
  if (!DELTAPROOF_FAULT(dh0_not_written)) out.dh0 = dS0;
  record.note("bwd.glue");

  // BK1: every chunk's intra adjoint, independent given S0 and dS_end
  auto& g = out.grad;
  g.dQ = MatF::Constant(T, Kd, unwritten);
  g.dK = MatF::Constant(T, Kd, unwritten);
  g.dG = MatF::Constant(T, Kd, unwritten);
  g.dB = MatF::Constant(T, Kd, unwritten);
  g.dV = MatF::Constant(T, Vd, unwritten);
  g.dW = MatF::Constant(T, Vd, unwritten);
  MatF du_scratch;
  for (int c = 0; c < num_chunks; ++c) {
    const int s = start_of(c), L = length_of(c);
    ChunkGradients d = bk1_chunk_adjoint(inputs[c], intra[c], chunk_start[c], dO.middleRows(s, L),
                                         dS_end[c], scale, du_scratch, round);
    record.note("bwd.bk1");
    g.dQ.middleRows(s, L) = d.dQ;
    g.dK.middleRows(s, L) = d.dK;
    g.dG.middleRows(s, L) = DELTAPROOF_FAULT(dg_sign_flipped) ? MatF(-d.dG) : d.dG;
    g.dB.middleRows(s, L) = d.dB;
    g.dV.middleRows(s, L) = d.dV;
    g.dW.middleRows(s, L) = d.dW;
  }
  return out;
}

}  // namespace deltaproof::kernels::cpu

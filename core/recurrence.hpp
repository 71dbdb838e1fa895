// core/recurrence.hpp — the definition of DESIGN.md section 1, token by
// token, templated on the scalar type (double, quad, forward-mode duals for
// the oracle; float for cpu-recurrent), and its hand-derived reverse sweep.
// One (batch, head) sequence at a time, in the general gdn2 form (kda and gdn
// are broadcast into it: core/gdn2_form.hpp). Deliberate faults come in as a
// policy (NoFaults compiles every fault branch away; the oracle's
// GeneratorFaults, oracle/problem.hpp, switches its own at run time).
//
// Forward, per token t (S is K x V):
//   a = exp(g_t);  P = Diag(a) S_{t-1};  e = P^T (b_t * k_t)
//   u = w_t * v_t - e;  S_t = P + k_t u^T;  o_t = scale S_t^T q_t
//
// Reverse sweep of L = sum_t <o_t, do_t> + <S_T, dht>, with dS = dL/dS_t
// accumulated from t = T down to 1:
//   dS += scale q_t do_t^T          dq_t = scale S_t do_t
//   dk_t = dS u + dbk * b_t         du = dS^T k_t
//   dw_t = du * v_t                 dv_t = du * w_t
//   dP = dS - bk du^T               dbk = -P du        db_t = dbk * k_t
//   dg_t = a * rowsum(dP .* S_{t-1})                   dS_{t-1} = Diag(a) dP
// and dh0 = dS_0.
#pragma once

#include <cmath>
#include <vector>

#include <Eigen/Dense>

namespace deltaproof {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// One (batch, head) sequence in gdn2 form. Row t of a token matrix is token t.
template <class S>
struct Sequence {
  Mat<S> q, k, g, b;  // T x K
  Mat<S> v, w;        // T x V
  Mat<S> h0;          // K x V
  int length() const { return static_cast<int>(q.rows()); }
};

// The fault policy of a clean run. A policy answers two questions: is the
// carried state cut (set to zero) before token t, and does the reverse sweep
// exponentiate its decay twice.
struct NoFaults {
  static constexpr bool cuts_carry_before(int) { return false; }
  static constexpr bool reverse_decay_exp_twice() { return false; }
};

template <class S>
struct Trajectory {
  Mat<S> o;                    // T x V
  Mat<S> ht;                   // K x V, the final state
  std::vector<Mat<S>> states;  // S_0 .. S_T when kept (the reverse sweep needs them)
};

template <class S>
struct SequenceGradients {
  Mat<S> dq, dk, dg, db;  // T x K
  Mat<S> dv, dw;          // T x V
  Mat<S> dh0;             // K x V
};

namespace detail {

template <class S>
S exp_of(const S& x) {
  using std::exp;
  return exp(x);
}

}  // namespace detail

template <class S, class Faults = NoFaults>
Trajectory<S> forward(const Sequence<S>& x, const S& scale, bool keep_states,
                      const Faults& faults = {}) {
  const int T = x.length();
  const auto K = x.k.cols();
  const auto V = x.v.cols();
  Trajectory<S> out;
  out.o.resize(T, V);
  Mat<S> state = x.h0;
  if (keep_states) out.states.reserve(T + 1);
  Vec<S> decay(K), bk(K), u(V);
  for (int t = 0; t < T; ++t) {
    if (keep_states) out.states.push_back(state);
    if (faults.cuts_carry_before(t)) state.setZero();
    for (Eigen::Index i = 0; i < K; ++i) decay(i) = detail::exp_of(x.g(t, i));
    state = decay.asDiagonal() * state;  // P = Diag(exp g_t) S_{t-1}
    bk = x.b.row(t).transpose().cwiseProduct(x.k.row(t).transpose());
    u = x.w.row(t).transpose().cwiseProduct(x.v.row(t).transpose());
    u.noalias() -= state.transpose() * bk;                      // u = w*v - P^T (b*k)
    state.noalias() += x.k.row(t).transpose() * u.transpose();  // S_t = P + k u^T
    out.o.row(t).noalias() = (state.transpose() * x.q.row(t).transpose()).transpose() * scale;
  }
  if (keep_states) out.states.push_back(state);
  out.ht = std::move(state);
  return out;
}

// L = sum_t <o_t, do_t> + <S_T, dht>, summed in a fixed order.
template <class S>
S loss(const Trajectory<S>& fwd, const Mat<S>& dout, const Mat<S>& dht) {
  S total = S(0);
  for (Eigen::Index t = 0; t < fwd.o.rows(); ++t)
    for (Eigen::Index j = 0; j < fwd.o.cols(); ++j) total += fwd.o(t, j) * dout(t, j);
  for (Eigen::Index i = 0; i < fwd.ht.rows(); ++i)
    for (Eigen::Index j = 0; j < fwd.ht.cols(); ++j) total += fwd.ht(i, j) * dht(i, j);
  return total;
}

// The reverse sweep; `fwd` must hold the states (keep_states = true).
template <class S, class Faults = NoFaults>
SequenceGradients<S> reverse(const Sequence<S>& x, const Trajectory<S>& fwd, const Mat<S>& dout,
                             const Mat<S>& dht, const S& scale, const Faults& faults = {}) {
  const int T = x.length();
  const auto K = x.k.cols();
  const auto V = x.v.cols();
  SequenceGradients<S> grad;
  grad.dq.resize(T, K);
  grad.dk.resize(T, K);
  grad.dg.resize(T, K);
  grad.db.resize(T, K);
  grad.dv.resize(T, V);
  grad.dw.resize(T, V);
  Mat<S> dstate = dht;  // dL/dS_t, walking t downwards
  Mat<S> decayed(K, V), dpre(K, V);
  Vec<S> decay(K), bk(K), u(V), du(V), dbk(K);
  const Mat<S> cut_state = Mat<S>::Zero(K, V);
  for (int t = T - 1; t >= 0; --t) {
    const Mat<S>& previous = faults.cuts_carry_before(t) ? cut_state : fwd.states[t];
    const Mat<S>& current = fwd.states[t + 1];
    for (Eigen::Index i = 0; i < K; ++i) {
      decay(i) = detail::exp_of(x.g(t, i));
      if (faults.reverse_decay_exp_twice()) decay(i) = detail::exp_of(decay(i));
    }
    decayed = decay.asDiagonal() * previous;  // P, recomputed
    bk = x.b.row(t).transpose().cwiseProduct(x.k.row(t).transpose());
    u = x.w.row(t).transpose().cwiseProduct(x.v.row(t).transpose());
    u.noalias() -= decayed.transpose() * bk;

    // o_t = scale S_t^T q_t
    dstate.noalias() += (x.q.row(t).transpose() * dout.row(t)) * scale;
    grad.dq.row(t).noalias() = (current * dout.row(t).transpose()).transpose() * scale;
    // S_t = P + k u^T
    du.noalias() = dstate.transpose() * x.k.row(t).transpose();
    grad.dk.row(t).noalias() = (dstate * u).transpose();
    // u = w*v - e, e = P^T bk
    grad.dw.row(t) = du.cwiseProduct(x.v.row(t).transpose()).transpose();
    grad.dv.row(t) = du.cwiseProduct(x.w.row(t).transpose()).transpose();
    dbk.noalias() = -(decayed * du);
    dpre = dstate;
    dpre.noalias() -= bk * du.transpose();
    grad.db.row(t) = dbk.cwiseProduct(x.k.row(t).transpose()).transpose();
    grad.dk.row(t) += dbk.cwiseProduct(x.b.row(t).transpose()).transpose();
    // P = Diag(a) S_{t-1}
    for (Eigen::Index i = 0; i < K; ++i) {
      S row_sum = S(0);
      for (Eigen::Index j = 0; j < V; ++j) row_sum += dpre(i, j) * previous(i, j);
      grad.dg(t, i) = decay(i) * row_sum;
    }
    dstate = decay.asDiagonal() * dpre;
    if (faults.cuts_carry_before(t)) dstate.setZero();
  }
  grad.dh0 = std::move(dstate);
  return grad;
}

}  // namespace deltaproof

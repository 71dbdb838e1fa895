// kernels/cpu/backends.cpp — cpu-chunk and cpu-recurrent behind the backend
// interface: gather each (batch, head) from FLA layout, run, scatter back.
#include "kernels/cpu/backends.hpp"

#include <cmath>

#include "core/gdn2_form.hpp"
#include "core/parallel.hpp"
#include "core/recurrence.hpp"
#include "kernels/faults.hpp"

namespace deltaproof::kernels::cpu {

MatF gather_tokens(const KernelShape& s, const std::vector<float>& buffer, int width, int columns,
                   int b, int h, int rows) {
  MatF out(rows, columns);
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < columns; ++i) {
      // t >= T only under the partial-chunk fault: read on past the sequence
      const std::size_t at = token_offset(s.T, s.H, width, b, t, h, width == 0 ? 0 : i);
      out(t, i) = buffer[at % buffer.size()];
    }
  return out;
}

MatF gather_state(const KernelShape& s, const std::vector<float>& buffer, int b, int h) {
  MatF out(s.K, s.V);
  for (int i = 0; i < s.K; ++i)
    for (int j = 0; j < s.V; ++j) out(i, j) = buffer[state_offset(s.H, s.K, s.V, b, h, i, j)];
  return out;
}

HeadSequence gather_head(const KernelShape& s, const Buffers& in, const Gdn2Gates<float>& gates,
                         int b, int h, int rows) {
  HeadSequence x;
  x.Q = gather_tokens(s, in.at("q"), s.K, s.K, b, h, rows);
  x.K = gather_tokens(s, in.at("k"), s.K, s.K, b,
                      DELTAPROOF_FAULT(head_count_hardcoded_2) ? h % 2 : h, rows);
  x.V = gather_tokens(s, in.at("v"), DELTAPROOF_FAULT(v_read_with_k_stride) ? s.K : s.V, s.V, b, h,
                      rows);
  x.g = gather_tokens(s, gates.g, s.K, s.K, DELTAPROOF_FAULT(gate_batch_offset_dropped) ? 0 : b, h,
                      rows);
  x.B = gather_tokens(s, gates.b, s.K, s.K, b, h, rows);
  x.W = gather_tokens(s, gates.w, s.V, s.V, b, h, rows);
  x.h0 = gather_state(s, in.at("h0"), b, h);
  return x;
}

HeadSequence gather_head(const KernelShape& s, const Buffers& in, int b, int h, int rows) {
  return gather_head(s, in, gdn2_gates(s.op, s.K, s.V, in), b, h, rows);
}

void scatter_tokens(const KernelShape& s, const MatF& m, int width, int b, int h,
                    std::vector<float>& out) {
  for (int t = 0; t < s.T; ++t)
    for (int i = 0; i < width; ++i) out[token_offset(s.T, s.H, width, b, t, h, i)] = m(t, i);
}

void scatter_state(const KernelShape& s, const MatF& m, int b, int h, std::vector<float>& out) {
  for (int i = 0; i < s.K; ++i)
    for (int j = 0; j < s.V; ++j) out[state_offset(s.H, s.K, s.V, b, h, i, j)] = m(i, j);
}

namespace {

// Writes one head's results; gradients only when they were computed (g's, b's
// and w's into the gdn2-form buffers `grads`).
void scatter_head(const KernelShape& s, int b, int h, const HeadResult& r, bool backward,
                  Buffers& out, Buffers& grads) {
  scatter_tokens(s, r.O, s.V, b, h, out.at("o"));
  scatter_state(s, r.ht, b, h, out.at("ht"));
  if (!backward) return;
  const ChunkGradients& d = r.grad;
  scatter_tokens(s, d.dQ, s.K, b, h, out.at("dq"));
  scatter_tokens(s, d.dK, s.K, b, h, out.at("dk"));
  scatter_tokens(s, d.dV, s.V, b, h, out.at("dv"));
  scatter_tokens(s, d.dG, s.K, b, h, grads.at("dg"));
  scatter_tokens(s, d.dB, s.K, b, h, grads.at("db"));
  scatter_tokens(s, d.dW, s.V, b, h, grads.at("dw"));
  if (r.dh0.size() != 0) scatter_state(s, r.dh0, b, h, out.at("dh0"));
}

// Runs `run_one(b, h, x, head_record) -> HeadResult` over every (batch, head)
// in parallel: x is the head gathered in gdn2 form, `rows` tokens long, and its
// result is scattered back; the gradients of g, b and w are folded into the
// op's own once every head has written (kernels/backend.hpp); the records
// merge in head order.
template <class RunHead>
void for_each_head(const KernelShape& s, const Buffers& in, int rows, bool backward, Buffers& out,
                   ExecutionRecord& record, RunHead run_one) {
  const Gdn2Gates<float> gates = gdn2_gates(s.op, s.K, s.V, in);
  Buffers grads = backward ? gdn2_gradient_buffers(s, out) : Buffers();
  const int heads = s.B * s.H;
  std::vector<ExecutionRecord> records(heads);
  parallel_for(heads, 0, [&](int index) {
    const int b = index / s.H, h = index % s.H;
    const HeadSequence x = gather_head(s, in, gates, b, h, rows);
    scatter_head(s, b, h, run_one(b, h, x, records[index]), backward, out, grads);
  });
  if (backward) fold_gdn2_gradients(s, std::move(grads), out);
  for (const auto& r : records)
    for (const auto& [stage, times] : r.stages) record.note(stage, times);
}

class ChunkBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-chunk"; }
  std::string description() const override {
    return "chunked WY forward and BK2/BK1/glue backward, f32, host";
  }
  void run(const KernelShape& s, const Buffers& in, Phase phase, Buffers& out,
           ExecutionRecord& record) const override {
    const bool backward = phase == Phase::bwd;
    const int chunks = (s.T + s.chunk - 1) / s.chunk;
    const int rows = DELTAPROOF_FAULT(partial_chunk_reads_past_t) ? chunks * s.chunk : s.T;
    auto run_one = [&](int b, int h, const HeadSequence& x, ExecutionRecord& head_record) {
      const MatF dO = backward ? gather_tokens(s, in.at("do"), s.V, s.V, b, h, rows) : MatF();
      const MatF dht = backward ? gather_state(s, in.at("dht"), b, h) : MatF();
      // one stochastic stream per head, whichever thread runs it
      Rounder round(s.contract, static_cast<std::uint64_t>(b) * s.H + h);
      return run_head(x, s.chunk, s.scale, backward, dO, dht, head_record, round);
    };
    for_each_head(s, in, rows, backward, out, record, run_one);
    round_outputs(s, out);  // as written, in the class's storage type
  }
};

class RecurrentBackend final : public Backend {
 public:
  std::string name() const override { return "cpu-recurrent"; }
  std::string description() const override {
    return "token-by-token recurrence and reverse sweep, f32, host";
  }
  void run(const KernelShape& s, const Buffers& in, Phase phase, Buffers& out,
           ExecutionRecord& record) const override {
    require_f32_contract(s, name());
    const bool backward = phase == Phase::bwd;
    auto run_one = [&](int b, int h, const HeadSequence& x, ExecutionRecord& head_record) {
      Sequence<float> seq{x.Q, x.K, x.g, x.B, x.V, x.W, x.h0};
      if (DELTAPROOF_FAULT(h0_ignored)) seq.h0.setZero();
      const auto trajectory = deltaproof::forward(seq, s.scale, backward);
      head_record.note("recurrent.fwd");
      HeadResult r;
      r.O = trajectory.o;
      r.ht = trajectory.ht;
      if (backward) {
        const MatF dO = gather_tokens(s, in.at("do"), s.V, s.V, b, h, s.T);
        const MatF dht = DELTAPROOF_FAULT(dht_ignored) ? MatF::Zero(s.K, s.V)
                                                       : gather_state(s, in.at("dht"), b, h);
        auto grad = deltaproof::reverse(seq, trajectory, dO, dht, s.scale);
        head_record.note("recurrent.bwd");
        if (DELTAPROOF_FAULT(dg_sign_flipped)) grad.dg = -grad.dg;
        r.grad = {grad.dq, grad.dk, grad.dv, grad.dg, grad.db, grad.dw};
        // under dh0_not_written dh0 keeps what an unwritten output holds: the NaN poison
        r.dh0 =
            DELTAPROOF_FAULT(dh0_not_written) ? MatF::Constant(s.K, s.V, std::nanf("")) : grad.dh0;
      }
      return r;
    };
    for_each_head(s, in, s.T, backward, out, record, run_one);
  }
};

}  // namespace

const Backend& chunk_backend() {
  static const ChunkBackend backend;
  return backend;
}

const Backend& recurrent_backend() {
  static const RecurrentBackend backend;
  return backend;
}

}  // namespace deltaproof::kernels::cpu

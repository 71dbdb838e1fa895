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
                   const SequenceRef& r, bool key_side, int rows) {
  MatF out(rows, columns);
  const int heads = key_side ? s.H : s.value_heads();
  const int head = key_side ? r.key_head : r.value_head;
  for (int t = 0; t < rows; ++t)
    for (int i = 0; i < columns; ++i) {
      // t >= length only under the partial-chunk fault: read on past the sequence
      // (into the next packed sequence, or the next row)
      // (chunk-index-not-rebased: a packed sequence's chunks read from the batch's first token)
      const int begin = DELTAPROOF_FAULT(chunk_index_not_rebased) ? 0 : r.begin;
      const std::size_t at =
          token_offset(s.T, heads, width, r.batch, begin + t, head, width == 0 ? 0 : i);
      out(t, i) = buffer[at % buffer.size()];
    }
  return out;
}

MatF gather_state(const KernelShape& s, const std::vector<float>& buffer, const SequenceRef& r) {
  MatF out(s.K, s.V);
  for (int i = 0; i < s.K; ++i)
    for (int j = 0; j < s.V; ++j)
      out(i, j) = buffer[state_offset(s.value_heads(), s.K, s.V, r.state, r.value_head, i, j)];
  return out;
}

HeadSequence gather_head(const KernelShape& s, const Buffers& in, const Gdn2Gates<float>& gates,
                         const SequenceRef& r, int rows) {
  HeadSequence x;
  // grouped value heads: value head hv reads key head hv / (HV / H), not hv
  SequenceRef query = r;
  if (DELTAPROOF_FAULT(value_head_reads_key_head_h)) query.key_head = r.value_head % s.H;
  x.Q = gather_tokens(s, in.at("q"), s.K, s.K, query, true, rows);
  SequenceRef key = query;
  if (DELTAPROOF_FAULT(head_count_hardcoded_2)) key.key_head %= 2;
  x.K = gather_tokens(s, in.at("k"), s.K, s.K, key, true, rows);
  x.V = gather_tokens(s, in.at("v"), DELTAPROOF_FAULT(v_read_with_k_stride) ? s.K : s.V, s.V, r,
                      false, rows);
  SequenceRef gate = r;
  if (DELTAPROOF_FAULT(gate_batch_offset_dropped)) gate.batch = 0;
  x.g = gather_tokens(s, gates.g, s.K, s.K, gate, false, rows);
  x.B = gather_tokens(s, gates.b, s.K, s.K, r, false, rows);
  x.W = gather_tokens(s, gates.w, s.V, s.V, r, false, rows);
  x.h0 = gather_state(s, in.at("h0"), r);
  return x;
}

HeadSequence gather_head(const KernelShape& s, const Buffers& in, const SequenceRef& r, int rows) {
  return gather_head(s, in, gdn2_gates(s.op, s.K, s.V, in), r, rows);
}

void scatter_tokens(const KernelShape& s, const MatF& m, int width, const SequenceRef& r,
                    bool key_side, std::vector<float>& out, bool add) {
  const int heads = key_side ? s.H : s.value_heads();
  const int head = key_side ? r.key_head : r.value_head;
  for (int t = 0; t < r.length(); ++t)
    for (int i = 0; i < width; ++i) {
      float& x = out[token_offset(s.T, heads, width, r.batch, r.begin + t, head, i)];
      x = add ? x + m(t, i) : m(t, i);
    }
}

void scatter_state(const KernelShape& s, const MatF& m, const SequenceRef& r,
                   std::vector<float>& out) {
  for (int i = 0; i < s.K; ++i)
    for (int j = 0; j < s.V; ++j)
      out[state_offset(s.value_heads(), s.K, s.V, r.state, r.value_head, i, j)] = m(i, j);
}

namespace {

// Writes one sequence's results; gradients only when they were computed (g's,
// b's and w's into the gdn2-form buffers `grads`). dq and dk of a grouped
// key head are left to add_key_gradients.
void scatter_head(const KernelShape& s, const SequenceRef& r, const HeadResult& h, bool backward,
                  Buffers& out, Buffers& grads) {
  scatter_tokens(s, h.O, s.V, r, false, out.at("o"));
  scatter_state(s, h.ht, r, out.at("ht"));
  if (!backward) return;
  const ChunkGradients& d = h.grad;
  if (!s.grouped()) {
    scatter_tokens(s, d.dQ, s.K, r, true, out.at("dq"));
    scatter_tokens(s, d.dK, s.K, r, true, out.at("dk"));
  }
  scatter_tokens(s, d.dV, s.V, r, false, out.at("dv"));
  scatter_tokens(s, d.dG, s.K, r, false, grads.at("dg"));
  scatter_tokens(s, d.dB, s.K, r, false, grads.at("db"));
  scatter_tokens(s, d.dW, s.V, r, false, grads.at("dw"));
  if (h.dh0.size() != 0) scatter_state(s, h.dh0, r, out.at("dh0"));
}

// Runs `run_one(r, index, x, record) -> HeadResult` over every sequence r
// (index: its place in s.sequences()) in parallel: x is the sequence gathered
// in gdn2 form, `extra_rows` more than its length (the partial-chunk fault's
// read past its end), and its result is scattered back. With grouped value
// heads a key head's dq and dk are the sum over its group's sequences, added
// in ascending value head after every sequence has run. The gradients of g, b
// and w are folded into the op's own once every sequence has written
// (kernels/backend.hpp); the records merge in sequence order.
template <class RunHead>
void for_each_head(const KernelShape& s, const Buffers& in, bool backward, Buffers& out,
                   ExecutionRecord& record, RunHead run_one, int chunk_rows = 0) {
  const Gdn2Gates<float> gates = gdn2_gates(s.op, s.K, s.V, in);
  Buffers grads = backward ? gdn2_gradient_buffers(s, out) : Buffers();
  const std::vector<SequenceRef> refs = s.sequences();
  const int count = static_cast<int>(refs.size());
  std::vector<ExecutionRecord> records(refs.size());
  std::vector<std::pair<MatF, MatF>> key_gradients(backward && s.grouped() ? refs.size() : 0);
  // runs sequence `index`, from `carried` instead of its h0 where given; its final state
  auto run_index = [&](int index, const MatF* carried) {
    const SequenceRef& r = refs[static_cast<std::size_t>(index)];
    // the partial-chunk fault reads a whole last chunk
    const int rows =
        chunk_rows > 0 ? (r.length() + chunk_rows - 1) / chunk_rows * chunk_rows : r.length();
    HeadSequence x = gather_head(s, in, gates, r, rows);
    if (carried != nullptr) x.h0 = *carried;
    HeadResult result = run_one(r, index, x, records[static_cast<std::size_t>(index)]);
    scatter_head(s, r, result, backward, out, grads);
    if (!key_gradients.empty())
      key_gradients[static_cast<std::size_t>(index)] = {std::move(result.grad.dQ),
                                                        std::move(result.grad.dK)};
    return result.ht;
  };
  if (DELTAPROOF_FAULT(state_not_reset) && s.packed()) {
    // the state is not reset at a sequence boundary: each sequence starts from
    // the previous one's final state (same value head), not from its own h0
    const int heads = s.value_heads();
    parallel_for(heads, 0, [&](int hv) {
      MatF state;
      for (int n = 0; n < s.states(); ++n)
        state = run_index(n * heads + hv, n > 0 ? &state : nullptr);
    });
  } else {
    parallel_for(count, 0, [&](int index) { run_index(index, nullptr); });
  }
  const int group = s.value_heads() / s.H;
  for (std::size_t n = 0; n < key_gradients.size(); ++n) {
    const bool first = refs[n].value_head % group == 0;
    scatter_tokens(s, key_gradients[n].first, s.K, refs[n], true, out.at("dq"), !first);
    scatter_tokens(s, key_gradients[n].second, s.K, refs[n], true, out.at("dk"), !first);
  }
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
    auto run_one = [&](const SequenceRef& r, int index, const HeadSequence& x,
                       ExecutionRecord& head_record) {
      const int rows = static_cast<int>(x.Q.rows());
      const MatF dO = backward ? gather_tokens(s, in.at("do"), s.V, s.V, r, false, rows) : MatF();
      const MatF dht = backward ? gather_state(s, in.at("dht"), r) : MatF();
      // one stochastic stream per sequence, whichever thread runs it
      Rounder round(s.contract, static_cast<std::uint64_t>(index));
      return run_head(x, s.chunk, s.scale, backward, dO, dht, head_record, round);
    };
    for_each_head(s, in, backward, out, record, run_one,
                  DELTAPROOF_FAULT(partial_chunk_reads_past_t) ? s.chunk : 0);
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
    auto run_one = [&](const SequenceRef& ref, int, const HeadSequence& x,
                       ExecutionRecord& head_record) {
      Sequence<float> seq{x.Q, x.K, x.g, x.B, x.V, x.W, x.h0};
      if (DELTAPROOF_FAULT(h0_ignored)) seq.h0.setZero();
      const auto trajectory = deltaproof::forward(seq, s.scale, backward);
      head_record.note("recurrent.fwd");
      HeadResult r;
      r.O = trajectory.o;
      r.ht = trajectory.ht;
      if (backward) {
        const MatF dO = gather_tokens(s, in.at("do"), s.V, s.V, ref, false, ref.length());
        const MatF dht = DELTAPROOF_FAULT(dht_ignored) ? MatF::Zero(s.K, s.V)
                                                       : gather_state(s, in.at("dht"), ref);
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
    for_each_head(s, in, backward, out, record, run_one);
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

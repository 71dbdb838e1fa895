// oracle/problem.hpp — a fixture's inputs and cotangents as full FLA-layout
// tensors of doubles (values exactly representable in the spec's input dtype),
// how they are drawn per regime, and how one (batch, head) sequence is cut out
// of them and broadcast into the gdn2 form of core/recurrence.hpp; the
// generator's own deliberate faults.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/gdn2_form.hpp"
#include "core/recurrence.hpp"
#include "oracle/op.hpp"

namespace deltaproof::oracle {

using deltaproof::Mat;
using deltaproof::Sequence;
using deltaproof::SequenceGradients;
using deltaproof::Trajectory;
using deltaproof::Vec;

// Deliberate generator bugs, used only to prove the self-checks catch them
// (background/000 section 5b). All off in a real generation. A fault policy of
// core/recurrence.hpp.
struct GeneratorFaults {
  // The reverse sweep recomputes the decay as exp(exp(g)): the double exp of
  // background/000, in the half of the oracle that derives gradients.
  bool double_exp_in_reverse_decay = false;
  // The state is reset to zero at every multiple of this many tokens, in the
  // forward and in the reverse sweep alike: a fixture whose carry is cut.
  int cut_carry_every = 0;
  bool any() const { return double_exp_in_reverse_decay || cut_carry_every > 0; }
  bool cuts_carry_before(int t) const {
    return cut_carry_every > 0 && t > 0 && t % cut_carry_every == 0;
  }
  bool reverse_decay_exp_twice() const { return double_exp_in_reverse_decay; }
};

using TensorMap = std::map<std::string, std::vector<double>>;

struct Problem {
  FixtureSpec spec;
  TensorMap values;  // every input, plus "do" and "dht"
  const std::vector<double>& at(const std::string& name) const { return values.at(name); }
};

// Draws every tensor from its own portable RNG stream (seed, tensor) and rounds
// it to spec.dtype. q and k are l2-normalised per token and head before
// rounding. Regimes (DESIGN.md section 3):
//   default: g in [-5, -0.1], b w beta in [0, 1]
//   mild:    g in [-0.05, 0]  (long memory), b w beta in [0, 1]
//   stress:  g in [-20, 0], b beta in [0, 2], w in [0, 1]
//   edge:    h0 = 0; every entry of g, b, w, beta is exactly 0 with
//            probability 1/2, else drawn as in default.
Problem draw_problem(const FixtureSpec& spec);

// Sequence n of a packed spec as a problem of its own: B = 1, T its length,
// its own seed. draw_problem draws a packed problem's sequences as these, so
// each sequence's inputs are the alone problem's, bit for bit.
FixtureSpec alone_spec(const FixtureSpec& spec, int n);

// Flat offsets in FLA layout.
inline std::size_t token_offset(const FixtureSpec& s, int width, int b, int t, int h, int i) {
  return deltaproof::token_offset(s.T, s.H, width, b, t, h, i);
}
inline std::size_t state_offset(const FixtureSpec& s, int b, int h, int i, int j) {
  return deltaproof::state_offset(s.H, s.K, s.V, b, h, i, j);
}

using deltaproof::SequenceRef;

// Every sequence of the problem, in the order the oracle runs and stores
// them: batch-major, then head.
std::vector<SequenceRef> sequences(const FixtureSpec& spec);

// Where a sequence's token t, channel i sits in a token tensor of the key
// heads (`key_side`) or the value heads; where its state's (i, j) sits.
inline std::size_t sequence_token_offset(const FixtureSpec& s, int width, const SequenceRef& r,
                                         int t, int i, bool key_side) {
  return deltaproof::token_offset(s.T, key_side ? s.H : s.value_heads(), width, r.batch, t,
                                  key_side ? r.key_head : r.value_head, i);
}
inline std::size_t sequence_state_offset(const FixtureSpec& s, const SequenceRef& r, int i, int j) {
  return deltaproof::state_offset(s.value_heads(), s.K, s.V, r.state, r.value_head, i, j);
}

// The flat offsets of one sequence's slice of a tensor, token-major then
// channel (state row-major): the first `tokens` tokens (all when negative).
// Two sequences of the same length pair up element by element.
inline std::vector<std::size_t> sequence_offsets(const FixtureSpec& s, const TensorLayout& layout,
                                                 const SequenceRef& r, int tokens = -1) {
  std::vector<std::size_t> out;
  if (layout.is_state) {
    for (int i = 0; i < s.K; ++i)
      for (int j = 0; j < s.V; ++j) out.push_back(sequence_state_offset(s, r, i, j));
    return out;
  }
  const int end = tokens < 0 ? r.end : std::min(r.end, r.begin + tokens);
  for (int t = r.begin; t < end; ++t)
    for (int i = 0; i < layout.per_token(); ++i)
      out.push_back(sequence_token_offset(s, layout.width, r, t, i, layout.key_heads));
  return out;
}

// An input tensor read moved by step x direction (the same flat layout),
// value + step * direction, as selfcheck.hpp's moved() leaves it, without a
// copy of the whole problem; nothing moves when `tensor` is empty.
struct Displacement {
  std::string tensor;
  const std::vector<double>* direction = nullptr;
  double step = 0.0;
};

// A tensor's flat values as a sequence reads them: as stored, or displaced.
struct DisplacedValues {
  const std::vector<double>& values;
  const std::vector<double>* direction = nullptr;  // null: as stored
  double step = 0.0;
  double operator[](std::size_t at) const {
    return direction ? values[at] + step * (*direction)[at] : values[at];
  }
};

// Copies one token tensor's slice of a sequence into a length x width matrix:
// the key head's for q and k (`key_side`), the value head's otherwise.
// `values` is a flat tensor (std::vector<double> or DisplacedValues).
template <class S, class Values>
Mat<S> sequence_tokens(const FixtureSpec& s, const Values& values, int width, const SequenceRef& r,
                       bool key_side = false) {
  Mat<S> out(r.length(), width);
  for (int t = r.begin; t < r.end; ++t)
    for (int i = 0; i < width; ++i)
      out(t - r.begin, i) = S(values[sequence_token_offset(s, width, r, t, i, key_side)]);
  return out;
}

template <class S, class Values>
Mat<S> sequence_state(const FixtureSpec& s, const Values& values, const SequenceRef& r) {
  Mat<S> out(s.K, s.V);
  for (int i = 0; i < s.K; ++i)
    for (int j = 0; j < s.V; ++j) out(i, j) = S(values[sequence_state_offset(s, r, i, j)]);
  return out;
}

// A length x width matrix from a flat row-major buffer (a sequence's slice).
template <class S>
Mat<S> token_rows(const std::vector<double>& flat, int length, int width) {
  Mat<S> out(length, width);
  for (int t = 0; t < length; ++t)
    for (int i = 0; i < width; ++i) out(t, i) = S(flat[static_cast<std::size_t>(t) * width + i]);
  return out;
}

// The sequence in gdn2 form (core/gdn2_form.hpp: kda/gdn's beta becomes b
// over K and w over V; gdn's scalar g is broadcast over K), its input
// `along.tensor` displaced. The gate inputs are cut to the sequence's own
// tokens before gdn2_gates broadcasts them: broadcasting the whole problem's
// for every sequence cost O(tokens x heads) a sequence, quadratic in the
// number of packed sequences.
template <class S>
Sequence<S> cut_sequence(const Problem& p, const SequenceRef& r, const Displacement& along = {}) {
  const FixtureSpec& s = p.spec;
  auto read = [&](const std::string& name) {
    return name == along.tensor ? DisplacedValues{p.at(name), along.direction, along.step}
                                : DisplacedValues{p.at(name)};
  };
  Sequence<S> x;
  x.q = sequence_tokens<S>(s, read("q"), s.K, r, on_key_head("q"));
  x.k = sequence_tokens<S>(s, read("k"), s.K, r, on_key_head("k"));
  x.v = sequence_tokens<S>(s, read("v"), s.V, r);
  TensorMap gate_inputs;  // g, and b w (gdn2) or beta (kda, gdn): [length, per token]
  for (const auto& layout : input_layouts(s)) {
    if (layout.name == "q" || layout.name == "k" || layout.name == "v" || layout.is_state) continue;
    const DisplacedValues whole = read(layout.name);
    std::vector<double>& part = gate_inputs[layout.name];
    for (const std::size_t offset : sequence_offsets(s, layout, r)) part.push_back(whole[offset]);
  }
  const Gdn2Gates<double> gates = gdn2_gates(s.op, s.K, s.V, gate_inputs);
  x.g = token_rows<S>(gates.g, r.length(), s.K);
  x.b = token_rows<S>(gates.b, r.length(), s.K);
  x.w = token_rows<S>(gates.w, r.length(), s.V);
  x.h0 = sequence_state<S>(s, read("h0"), r);
  return x;
}

// Writes a length x width matrix into a token tensor's slice of a sequence,
// each value through `convert`.
template <class S, class Out, class Convert>
void store_sequence_tokens(const FixtureSpec& s, const Mat<S>& m, int width, const SequenceRef& r,
                           std::vector<Out>& out, Convert convert, bool key_side = false) {
  for (int t = r.begin; t < r.end; ++t)
    for (int i = 0; i < width; ++i)
      out[sequence_token_offset(s, width, r, t, i, key_side)] = convert(m(t - r.begin, i));
}

// Adds a length x width matrix into a key-head token tensor's slice of a
// sequence: the value heads of one group, summed in the order they are added.
template <class S>
void add_sequence_tokens(const FixtureSpec& s, const Mat<S>& m, int width, const SequenceRef& r,
                         std::vector<S>& out) {
  for (int t = r.begin; t < r.end; ++t)
    for (int i = 0; i < width; ++i)
      out[sequence_token_offset(s, width, r, t, i, true)] += m(t - r.begin, i);
}

template <class S, class ToDouble>
void store_sequence_state(const FixtureSpec& s, const Mat<S>& m, const SequenceRef& r,
                          std::vector<double>& out, ToDouble to_double) {
  for (int i = 0; i < s.K; ++i)
    for (int j = 0; j < s.V; ++j) out[sequence_state_offset(s, r, i, j)] = to_double(m(i, j));
}

// The (b, h) sequence of a dense problem (sequences(spec)[b * H + h]).
inline SequenceRef dense_sequence(const FixtureSpec& s, int b, int h) {
  return {b, 0, s.T, h, h, b};
}
template <class S>
Mat<S> head_tokens(const FixtureSpec& s, const std::vector<double>& values, int width, int b,
                   int h) {
  return sequence_tokens<S>(s, values, width, dense_sequence(s, b, h));
}
template <class S>
Mat<S> head_state(const FixtureSpec& s, const std::vector<double>& values, int b, int h) {
  return sequence_state<S>(s, values, dense_sequence(s, b, h));
}
template <class S>
Sequence<S> head_sequence(const Problem& p, int b, int h) {
  return cut_sequence<S>(p, dense_sequence(p.spec, b, h));
}

}  // namespace deltaproof::oracle

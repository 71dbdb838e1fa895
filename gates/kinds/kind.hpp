// gates/kinds/kind.hpp — the gate kinds (DESIGN.md section 5), one file each
// under gates/kinds/, and the relation tools they share. A kind is a row of
// the table (kinds.cpp): its name in gate names and reports, whether its gate
// must show the backward stages ran, and the function that fills a result's
// terms. run_gate (runner.cpp) loads the fixture, picks the backend, runs the
// kind and judges the result the same way for every kind.
//   oracle      the backend against the fixture's reference, term by term
//   causality   o[t < P] keeps its bits when the tokens t >= P move
//   split-call  two calls joined by the state equal one call
//   batch-head  a head or sequence keeps its bits when the others move
//   isolation   packed: every other sequence keeps its bits when one moves
//   packing     packed: the packed call equals each sequence run alone
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "gates/runner.hpp"

namespace deltaproof::gates {
using kernels::Buffers;
using kernels::KernelShape;
using kernels::Phase;

// What a kind is handed: the gate, the options, the backend that runs it and
// the fixture, read.
struct KindContext {
  const Gate& gate;
  const RunOptions& options;
  const kernels::Backend& backend;
  const LoadedFixture& fixture;
  const std::filesystem::path& fixture_path;
};

struct KindInfo {
  GateKind kind;
  std::string_view name;
  // The gate's record must show the backward stages too (a metamorphic
  // relation runs the backward, but its evidence is the forward's stages).
  bool backward_stages;
  void (*run)(const KindContext& context, GateResult& result);
};
const std::vector<KindInfo>& gate_kinds();
const KindInfo& kind_info(GateKind kind);

// Each kind's run (gates/kinds/<kind>.cpp).
void run_oracle(const KindContext& c, GateResult& r);
void run_causality(const KindContext& c, GateResult& r);
void run_split_call(const KindContext& c, GateResult& r);
void run_batch_head(const KindContext& c, GateResult& r);
void run_isolation(const KindContext& c, GateResult& r);
void run_packing(const KindContext& c, GateResult& r);

// ---- the tools the kinds share (relations.cpp) --------------------------

std::map<std::string, std::vector<double>> as_doubles(const kernels::Buffers& buffers);

// Runs a backend with every output poisoned with NaN first.
kernels::Buffers run_poisoned(const kernels::Backend& backend, const kernels::KernelShape& shape,
                              const kernels::Buffers& inputs, kernels::Phase phase,
                              kernels::ExecutionRecord& record);

// An oracle comparison at the family's bars.
CompareOptions family_compare(const Family& family);

// An element as a relation selects it: its row (batch b, or sequence n of a
// packed shape), its token t (a state sits outside its row's tokens: h0 and
// dh0 at the row's first token less one, ht and dht at its last plus one),
// its head among the tensor's own heads (H or HV), and the key head that head
// reads (itself on q, k, dq, dk; hv / (HV / H) on the value heads).
struct Element {
  std::int64_t row = 0, t = 0, head = 0, key_head = 0;
  bool state = false;
  bool on_key_heads = false;
};
using Predicate = std::function<bool(const Element& element)>;

// The Element of each flat index of a named tensor.
class Elements {
 public:
  Elements(const kernels::KernelShape& shape, const std::string& name);
  Element at(std::size_t flat) const;
  // the (b, t, h, i) or (b, h, i, j) index, for reports
  std::array<std::int64_t, 4> index(std::size_t flat) const { return layout_.unravel(flat); }

 private:
  TermLayout layout_;
  bool key_heads_ = false, first_side_ = false;  // first_side_: h0, dh0
  int group_ = 1;
  std::vector<std::int64_t> begin_, end_;  // per row
  std::vector<std::int64_t> token_row_;    // packed: per token, its sequence
};

// A bitwise relation on one tensor, restricted to the elements `selected`
// picks: status pass iff every selected element has the same bits.
TermComparison bitwise_term(const std::string& label, const kernels::KernelShape& shape,
                            const std::string& name, const std::vector<float>& got,
                            const std::vector<float>& want, const Predicate& selected);

// The relation must be able to fail: the perturbed part must move.
TermComparison moved_term(const std::string& label, const kernels::KernelShape& shape,
                          const std::string& name, const std::vector<float>& got,
                          const std::vector<float>& base, const Predicate& selected);

// Every input element `where` picks moved, each input kept in its range.
kernels::Buffers perturb_tokens(const kernels::KernelShape& s, kernels::Buffers inputs,
                                const Predicate& where);

// Tokens [t0, t1) of every token tensor; states copied. A dense shape's.
kernels::Buffers slice_time(const kernels::KernelShape& s, const kernels::Buffers& inputs, int t0,
                            int t1, kernels::KernelShape& sliced);

// Sequence n of a packed shape alone: its tokens and its states, as a dense
// shape of one row (`alone`).
kernels::Buffers sequence_alone(const kernels::KernelShape& s, const kernels::Buffers& tensors,
                                int n, kernels::KernelShape& alone);

}  // namespace deltaproof::gates

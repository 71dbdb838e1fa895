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

// ---- the tools the kinds share (relations.cpp) --------------------------

std::map<std::string, std::vector<double>> as_doubles(const kernels::Buffers& buffers);

// Runs a backend with every output poisoned with NaN first.
kernels::Buffers run_poisoned(const kernels::Backend& backend, const kernels::KernelShape& shape,
                              const kernels::Buffers& inputs, kernels::Phase phase,
                              kernels::ExecutionRecord& record);

// An oracle comparison at the family's bars.
CompareOptions family_compare(const Family& family);

using Predicate = std::function<bool(const std::array<std::int64_t, 4>& index)>;

// A bitwise relation on one tensor, restricted to the elements `selected`
// picks: status pass iff every selected element has the same bits.
TermComparison bitwise_term(const std::string& label, const kernels::KernelShape& shape,
                            const std::string& name, const std::vector<float>& got,
                            const std::vector<float>& want, const Predicate& selected);

// The relation must be able to fail: the perturbed part must move.
TermComparison moved_term(const std::string& label, const kernels::KernelShape& shape,
                          const std::string& name, const std::vector<float>& got,
                          const std::vector<float>& base, const Predicate& selected);

// Every input element `where` picks (by its (b, t, h, i) index; a state's t is
// -1 for h0 and T for dht) moved, each input kept in its range.
kernels::Buffers perturb_tokens(const kernels::KernelShape& s, kernels::Buffers inputs,
                                const Predicate& where);

// Tokens [t0, t1) of every token tensor; states copied.
kernels::Buffers slice_time(const kernels::KernelShape& s, const kernels::Buffers& inputs, int t0,
                            int t1, kernels::KernelShape& sliced);

}  // namespace deltaproof::gates

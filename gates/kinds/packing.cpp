// gates/kinds/packing.cpp — the packing gate (packed sequences, issue 14):
// the packed call's outputs and gradients of each sequence equal, bit for
// bit, those of the same sequence run alone (a dense call of one row: its
// tokens, its h0 and dht). Chunks start at each sequence's first token in
// both, so the arithmetic is the same. A family whose packed arithmetic is
// not the same (Family::packs_bitwise) is held to its bars instead, the run
// alone as the reference.
#include <fmt/format.h>

#include "core/error.hpp"
#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

void run_packing(const KindContext& c, GateResult& r) {
  const LoadedFixture& f = c.fixture;
  const KernelShape& s = f.job.shape;
  if (!s.packed())
    throw InputError(
        fmt::format("{}: a packing gate needs packed sequences (cu_seqlens); this fixture is dense",
                    c.fixture_path.string()));
  const Buffers packed = run_poisoned(c.backend, s, f.job.inputs, Phase::bwd, r.record);
  for (int n = 0; n < s.states(); ++n) {
    KernelShape alone, part;
    const Buffers inputs = sequence_alone(s, f.job.inputs, n, alone);
    const Buffers own = run_poisoned(c.backend, alone, inputs, Phase::bwd, r.record);
    const Buffers in_packed = sequence_alone(s, packed, n, part);
    if (!c.gate.family->packs_bitwise) {
      for (TermComparison& t : compare_terms(alone, Phase::bwd, as_doubles(in_packed),
                                             as_doubles(own), family_compare(*c.gate.family))) {
        const std::string label =
            fmt::format("{} of sequence {} (length {}) packed vs alone", t.term, n, alone.T);
        if (!t.message.empty()) t.message = fmt::format("{}: {}", label, t.message);
        t.term = label;
        r.terms.push_back(std::move(t));
      }
      continue;
    }
    for (const auto& name : kernels::kernel_output_names(s.op, Phase::bwd))
      r.terms.push_back(bitwise_term(
          fmt::format("{} of sequence {} (length {}) packed = alone", name, n, alone.T), alone,
          name, in_packed.at(name), own.at(name), [](const Element&) { return true; }));
  }
}

}  // namespace deltaproof::gates

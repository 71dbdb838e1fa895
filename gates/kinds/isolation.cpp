// gates/kinds/isolation.cpp — the isolation gate (packed sequences, issue
// 14): perturbing sequence n's inputs (its tokens, h0 and dht) leaves every
// output and gradient of every other sequence bitwise unchanged, and moves
// sequence n's o. Each sequence in turn.
#include <fmt/format.h>

#include "core/error.hpp"
#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

void run_isolation(const KindContext& c, GateResult& r) {
  const LoadedFixture& f = c.fixture;
  const KernelShape& s = f.job.shape;
  if (!s.packed())
    throw InputError(fmt::format(
        "{}: an isolation gate needs packed sequences (cu_seqlens); a dense batch has the "
        "batch-head gate",
        c.fixture_path.string()));
  const Buffers clean = run_poisoned(c.backend, s, f.job.inputs, Phase::bwd, r.record);
  for (int n = 0; n < s.states(); ++n) {
    auto moved = [n](const Element& e) { return e.row == n; };
    auto others = [n](const Element& e) { return e.row != n; };
    const Buffers perturbed =
        run_poisoned(c.backend, s, perturb_tokens(s, f.job.inputs, moved), Phase::bwd, r.record);
    for (const auto& name : kernels::kernel_output_names(s.op, Phase::bwd))
      r.terms.push_back(bitwise_term(
          fmt::format("{} of the other sequences unchanged, sequence {} moved", name, n), s, name,
          perturbed.at(name), clean.at(name), others));
    r.terms.push_back(moved_term(fmt::format("o of sequence {} moved", n), s, "o",
                                 perturbed.at("o"), clean.at("o"), moved));
  }
}

}  // namespace deltaproof::gates

// gates/kinds/batch_head.cpp — the batch-head gate: the first and the last
// head (and sequence) keep their bits while the others move, and the batch
// keeps its bits when B doubles with a perturbed copy.
#include <fmt/format.h>

#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

void run_batch_head(const KindContext& c, GateResult& r) {
  const LoadedFixture& f = c.fixture;
  const KernelShape& s = f.job.shape;
  const Buffers clean = run_poisoned(c.backend, s, f.job.inputs, Phase::bwd, r.record);
  const auto names = kernels::kernel_output_names(s.op, Phase::bwd);
  // Perturbs every head (or sequence) but `kept`: its results keep their bits
  // and, where there are others, the others' o moves. `index_of` reads the
  // head or sequence from an index, (b, t, h, i) or a state's (b, h, i, j).
  auto keep_one = [&](const char* unit, const char* units, int count, int kept, auto index_of) {
    const Buffers perturbed =
        run_poisoned(c.backend, s,
                     perturb_tokens(s, f.job.inputs,
                                    [&](const auto& idx) { return index_of(idx, false) != kept; }),
                     Phase::bwd, r.record);
    for (const auto& name : names) {
      const bool state = TermLayout(s, name).state;
      r.terms.push_back(bitwise_term(
          fmt::format("{} {} {} unchanged", name, unit, kept), s, name, perturbed.at(name),
          clean.at(name), [&](const auto& idx) { return index_of(idx, state) == kept; }));
      if (count > 1 && name == "o")
        r.terms.push_back(moved_term(
            fmt::format("o {} but {} moved", units, kept), s, name, perturbed.at(name),
            clean.at(name), [&](const auto& idx) { return index_of(idx, state) != kept; }));
    }
  };
  auto head_of = [](const auto& idx, bool state) { return state ? idx[1] : idx[2]; };
  auto batch_of = [](const auto& idx, bool) { return idx[0]; };
  // the first head, then the last: a head that reads another's inputs shows on one
  keep_one("head", "heads", s.H, 0, head_of);
  if (s.H > 1) keep_one("head", "heads", s.H, s.H - 1, head_of);
  // the same with a kept sequence, where there are several
  if (s.B > 1) {
    keep_one("batch", "batches", s.B, 0, batch_of);
    keep_one("batch", "batches", s.B, s.B - 1, batch_of);
  }
  // the batch size: append a perturbed copy of every sequence; the first B keep their bits
  KernelShape doubled = s;
  doubled.B = 2 * s.B;
  Buffers stacked = f.job.inputs;
  const Buffers copy = perturb_tokens(s, f.job.inputs, [](const auto&) { return true; });
  for (auto& [name, values] : stacked)
    values.insert(values.end(), copy.at(name).begin(), copy.at(name).end());
  const Buffers batched = run_poisoned(c.backend, doubled, stacked, Phase::bwd, r.record);
  for (const auto& name : names) {
    std::vector<float> first(batched.at(name).begin(),
                             batched.at(name).begin() + clean.at(name).size());
    r.terms.push_back(bitwise_term(fmt::format("{} unchanged with B doubled", name), s, name, first,
                                   clean.at(name), [](const auto&) { return true; }));
  }
}

}  // namespace deltaproof::gates

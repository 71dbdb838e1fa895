// gates/kinds/batch_head.cpp — the batch-head gate: the first and the last
// head (a key head with its value heads) and row (batch row, or packed
// sequence) keep their bits while the others move; with grouped value heads,
// a value head's own results keep their bits while its group's others move;
// and the rows keep their bits when a perturbed copy of each is appended.
#include <fmt/format.h>

#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

void run_batch_head(const KindContext& c, GateResult& r) {
  const LoadedFixture& f = c.fixture;
  const KernelShape& s = f.job.shape;
  const Buffers clean = run_poisoned(c.backend, s, f.job.inputs, Phase::bwd, r.record);
  const auto names = kernels::kernel_output_names(s.op, Phase::bwd);
  // Perturbs every unit but `kept`: its results keep their bits and, where
  // there are others, the others' o moves. `unit_of` reads an element's unit,
  // or -1 where the relation leaves an element alone (neither moved nor held).
  auto keep_one = [&](const std::string& unit, const std::string& units, int count, int kept,
                      auto unit_of) {
    auto other = [&](const Element& e) {
      const auto u = unit_of(e);
      return u >= 0 && u != kept;
    };
    auto mine = [&](const Element& e) { return unit_of(e) == kept; };
    const Buffers perturbed =
        run_poisoned(c.backend, s, perturb_tokens(s, f.job.inputs, other), Phase::bwd, r.record);
    for (const auto& name : names) {
      const Elements elements(s, name);
      bool any = false;
      for (std::size_t i = 0; i < clean.at(name).size() && !any; ++i) any = mine(elements.at(i));
      if (!any) continue;  // a value head's relation holds no dq, dk
      r.terms.push_back(bitwise_term(fmt::format("{} {} {} unchanged", name, unit, kept), s, name,
                                     perturbed.at(name), clean.at(name), mine));
      if (count > 1 && name == "o")
        r.terms.push_back(moved_term(fmt::format("o {} but {} moved", units, kept), s, name,
                                     perturbed.at(name), clean.at(name), other));
    }
  };
  // the first head, then the last: a head that reads another's inputs shows on one
  const std::string head = s.grouped() ? "key head" : "head";
  auto key_head_of = [](const Element& e) { return e.key_head; };
  keep_one(head, head + "s", s.H, 0, key_head_of);
  if (s.H > 1) keep_one(head, head + "s", s.H, s.H - 1, key_head_of);
  // grouped: a value head's own results (all but dq, dk, which sum the group)
  // with every other value head's inputs moved (q and k stay: they are shared)
  if (s.grouped()) {
    auto value_head_of = [](const Element& e) {
      return e.on_key_heads ? std::int64_t{-1} : e.head;
    };
    keep_one("value head", "value heads", s.value_heads(), 0, value_head_of);
    keep_one("value head", "value heads", s.value_heads(), s.value_heads() - 1, value_head_of);
  }
  // the same with a kept row (batch row, or packed sequence), where there are several
  const int rows = s.states();
  const std::string row = s.packed() ? "sequence" : "batch";
  auto row_of = [](const Element& e) { return e.row; };
  if (rows > 1) {
    keep_one(row, row + "s", rows, 0, row_of);
    keep_one(row, row + "s", rows, rows - 1, row_of);
  }
  // the rows doubled: a perturbed copy of each appended (a batch row, or a
  // packed sequence after the last); the first ones keep their bits
  KernelShape doubled = s;
  if (s.packed()) {
    doubled.T = 2 * s.T;
    for (std::size_t n = 1; n < s.cu_seqlens.size(); ++n)
      doubled.cu_seqlens.push_back(s.T + s.cu_seqlens[n]);
  } else {
    doubled.B = 2 * s.B;
  }
  Buffers stacked = f.job.inputs;
  const Buffers copy = perturb_tokens(s, f.job.inputs, [](const Element&) { return true; });
  for (auto& [name, values] : stacked)
    values.insert(values.end(), copy.at(name).begin(), copy.at(name).end());
  const Buffers batched = run_poisoned(c.backend, doubled, stacked, Phase::bwd, r.record);
  const std::string label = s.packed() ? "with the sequences doubled" : "with B doubled";
  for (const auto& name : names) {
    // the first half of each tensor: [B, ...] rows, or a packed [1, T, ...] / [N, ...]
    std::vector<float> first(batched.at(name).begin(),
                             batched.at(name).begin() + clean.at(name).size());
    r.terms.push_back(bitwise_term(fmt::format("{} unchanged {}", name, label), s, name, first,
                                   clean.at(name), [](const Element&) { return true; }));
  }
}

}  // namespace deltaproof::gates

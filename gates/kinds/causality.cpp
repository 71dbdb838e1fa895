// gates/kinds/causality.cpp — the causality gate: o[t < P] keeps its bits when every token
// t >= P moves, at the points causality_points() names (packed: each
// sequence's, and every sequence boundary).
#include <algorithm>

#include <fmt/format.h>

#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

void run_causality(const KindContext& c, GateResult& r) {
  const LoadedFixture& f = c.fixture;
  const KernelShape& s = f.job.shape;
  const Buffers clean = run_poisoned(c.backend, s, f.job.inputs, Phase::fwd, r.record);
  for (const int P : causality_points(s)) {
    auto before = [&](const Element& e) { return e.t < P; };
    auto after = [&](const Element& e) { return e.t >= P; };
    const Buffers nudged_inputs = perturb_tokens(s, f.job.inputs, after);
    const Buffers nudged = run_poisoned(c.backend, s, nudged_inputs, Phase::fwd, r.record);
    r.terms.push_back(bitwise_term(fmt::format("o[t<{}] unchanged", P), s, "o", nudged.at("o"),
                                   clean.at("o"), before));
    r.terms.push_back(
        moved_term(fmt::format("o[t>={}] moved", P), s, "o", nudged.at("o"), clean.at("o"), after));
  }
}

std::vector<int> causality_points(const KernelShape& s) {
  if (!s.packed()) return causality_points(s.T, s.chunk);
  std::vector<int> out;
  for (std::size_t n = 0; n + 1 < s.cu_seqlens.size(); ++n) {
    const auto begin = static_cast<int>(s.cu_seqlens[n]);
    if (begin > 0) out.push_back(begin);
    for (int p : causality_points(static_cast<int>(s.cu_seqlens[n + 1]) - begin, s.chunk))
      out.push_back(begin + p);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> causality_points(int T, int chunk) {
  // in the first chunk: its middle and its last row; across the boundary: the
  // second chunk's first row, its middle and its last; inside a partial tail:
  // its first row and its middle
  const int C = chunk, tail = T % C, tail_start = T - tail;
  std::vector<int> points = {C / 2, C - 1, C, C + C / 2, 2 * C - 1};
  if (tail > 0) points.insert(points.end(), {tail_start, tail_start + tail / 2});
  std::vector<int> out;
  for (int p : points)
    if (p >= 1 && p < T && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace deltaproof::gates

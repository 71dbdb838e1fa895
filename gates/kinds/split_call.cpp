// gates/kinds/split_call.cpp — the split-call gate: two calls joined by the state (the
// first's ht the second's h0, the second's dh0 the first's dht) against one
// call, at the points split_points() names: bitwise at a chunk boundary, else
// against the oracle (a rounding class's family: every point, at its noise).
#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "gates/kinds/kind.hpp"
#include "gates/noise.hpp"
#include "kernels/faults.hpp"

namespace deltaproof::gates {

namespace {

// One split of T at P: the two calls' outputs re-assembled in the whole
// call's layout.
Buffers split_call(const kernels::Backend& backend, const KernelShape& s, const Buffers& inputs,
                   int P, kernels::ExecutionRecord& record) {
  KernelShape head_shape, tail_shape;
  Buffers head = slice_time(s, inputs, 0, P, head_shape);
  Buffers tail = slice_time(s, inputs, P, s.T, tail_shape);
  // forward of the first call hands its final state to the second
  const Buffers first_fwd = run_poisoned(backend, head_shape, head, Phase::fwd, record);
  tail["h0"] = first_fwd.at("ht");
  const Buffers second = run_poisoned(backend, tail_shape, tail, Phase::bwd, record);
  // the second call's dh0 is the first call's dht
  head["dht"] = second.at("dh0");
  const Buffers first = run_poisoned(backend, head_shape, head, Phase::bwd, record);
  Buffers joined;
  for (const auto& name : kernels::kernel_output_names(s.op, Phase::bwd)) {
    if (name == "ht") {
      joined[name] = second.at("ht");
    } else if (name == "dh0") {
      joined[name] = first.at("dh0");
    } else {
      // re-assemble [B, T, heads, w] row by row: a row's tokens are contiguous
      const std::size_t token =
          kernels::tensor_size(s, name) / (static_cast<std::size_t>(s.B) * s.T);
      const auto head_part = static_cast<std::ptrdiff_t>(P * token);
      const auto tail_part = static_cast<std::ptrdiff_t>((s.T - P) * token);
      auto& out = joined[name];
      for (int b = 0; b < s.B; ++b) {
        const auto a = first.at(name).begin() + b * head_part;
        const auto z = second.at(name).begin() + b * tail_part;
        out.insert(out.end(), a, a + head_part);
        out.insert(out.end(), z, z + tail_part);
      }
    }
  }
  return joined;
}

}  // namespace

void run_split_call(const KindContext& c, GateResult& r) {
  const LoadedFixture& f = c.fixture;
  const Gate& gate = c.gate;
  const KernelShape& s = f.job.shape;
  if (s.packed())
    throw InputError(fmt::format(
        "{}: a split-call gate cuts a dense batch; packed sequences have the packing and "
        "isolation gates (docs/VARLEN.md)",
        c.fixture_path.string()));
  const Buffers whole = run_poisoned(c.backend, s, f.job.inputs, Phase::bwd, r.record);
  auto all = [](const Element&) { return true; };
  const CompareOptions compare = family_compare(*gate.family);
  // A family of a rounding class writes the state handed between the two
  // calls in its storage type (bf16), so a split at a chunk boundary is not
  // bitwise the whole call: every split is judged against the oracle at the
  // class's noise on the fixture (measured as the oracle gate measures it).
  std::optional<NoiseModel> noise;
  std::vector<TermComparison> judged;
  if (gate.family->noise_bars()) {
    const kernels::FaultSuspended clean;
    noise = measure_noise(s, f.job.inputs, Phase::bwd, f.reference, gate.family->precision);
  }
  for (const SplitPoint& point : split_points(s.T, s.chunk)) {
    const Buffers joined = split_call(c.backend, s, f.job.inputs, point.at, r.record);
    if (point.boundary && !noise) {
      for (const auto& name : kernels::kernel_output_names(s.op, Phase::bwd))
        r.terms.push_back(bitwise_term(fmt::format("{} split at t={}", name, point.at), s, name,
                                       joined.at(name), whole.at(name), all));
      continue;
    }
    for (TermComparison& t :
         noise ? judge_against_noise(s, Phase::bwd, *noise, as_doubles(joined), f.reference)
               : compare_terms(s, Phase::bwd, as_doubles(joined), f.reference, compare)) {
      const std::string label = fmt::format("{} split at t={} vs oracle", t.term, point.at);
      if (!t.message.empty()) t.message = fmt::format("{}: {}", label, t.message);
      if (noise) judged.push_back(t);  // under its own name, for the bars' summary
      t.term = label;
      r.terms.push_back(std::move(t));
    }
  }
  if (noise) r.bars = noise_bars_json(*noise, judged);
}

std::vector<SplitPoint> split_points(int T, int chunk) {
  const int C = chunk;
  std::vector<SplitPoint> out;
  for (const SplitPoint p : {SplitPoint{1, false}, SplitPoint{C / 2, false}, SplitPoint{C, true},
                             SplitPoint{2 * C, true}, SplitPoint{T - 1, T > 1 && (T - 1) % C == 0}})
    if (p.at >= 1 && p.at < T &&
        std::none_of(out.begin(), out.end(), [&](const SplitPoint& q) { return q.at == p.at; }))
      out.push_back(p);
  std::sort(out.begin(), out.end(),
            [](const SplitPoint& a, const SplitPoint& b) { return a.at < b.at; });
  return out;
}

}  // namespace deltaproof::gates

// gates/kinds/relations.cpp — the tools the gate kinds share (kind.hpp).
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/metric.hpp"
#include "gates/instrument_faults.hpp"
#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

std::map<std::string, std::vector<double>> as_doubles(const Buffers& buffers) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, values] : buffers)
    out[name] = std::vector<double>(values.begin(), values.end());
  return out;
}

Buffers run_poisoned(const kernels::Backend& backend, const KernelShape& shape,
                     const Buffers& inputs, Phase phase, kernels::ExecutionRecord& record) {
  Buffers out = kernels::allocate_outputs(shape, phase, std::nanf(""));
  backend.run(shape, inputs, phase, out, record);
  if (DELTAPROOF_INSTRUMENT_FAULT(output_not_copied_back)) {  // the copy back of one output is lost
    auto& lost = out.count("dv") ? out.at("dv") : out.at("ht");
    std::fill(lost.begin(), lost.end(), std::nanf(""));
  }
  return out;
}

CompareOptions family_compare(const Family& family) {
  CompareOptions compare;
  compare.fwd_bar = family.bars.fwd.value;
  compare.bwd_bar = family.bars.bwd.value;
  return compare;
}

TermComparison bitwise_term(const std::string& label, const KernelShape& shape,
                            const std::string& name, const std::vector<float>& got,
                            const std::vector<float>& want, const Predicate& selected) {
  TermComparison c;
  c.term = label;
  c.bar = 0.0;
  c.index_names = index_names(shape, name);
  long differing = 0, compared = 0;
  const TermLayout layout(shape, name);
  RelError error;  // the figures beside the bitwise count, over the selected elements
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto index = layout.unravel(i);
    if (!selected(index)) continue;
    ++compared;
    error.add(got[i], want[i]);
    if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
    const bool new_worst = error.worst == error.count - 1;  // this element's |diff| is the largest
    if (differing == 0 || new_worst) c.worst_index.assign(index.begin(), index.end());
    ++differing;
  }
  c.ref_amax = error.ref_amax;
  c.non_finite = error.non_finite;
  c.abs_max = error.non_finite ? INFINITY : error.abs_max;
  c.rel = error.rel();
  c.margin = differing ? 0.0 : INFINITY;
  c.status =
      differing == 0 && compared > 0 && c.non_finite == 0 ? TermStatus::pass : TermStatus::fail;
  if (compared == 0)
    c.message = fmt::format("{}: no element selected: the relation compared nothing", label);
  if (c.non_finite > 0 &&
      differing == 0)  // NaN equals NaN bitwise: a relation on it proves nothing
    c.message = fmt::format("{}: {} of {} elements are NaN or inf (unwritten outputs stay NaN)",
                            label, c.non_finite, compared);
  if (differing)
    c.message = fmt::format(
        "{}: {} of {} elements differ bitwise (max |diff| {:.3e}, first worst at ({}) = ({}))",
        label, differing, compared, c.abs_max, c.index_names, fmt::join(c.worst_index, ","));
  return c;
}

TermComparison moved_term(const std::string& label, const KernelShape& shape,
                          const std::string& name, const std::vector<float>& got,
                          const std::vector<float>& base, const Predicate& selected) {
  TermComparison c = bitwise_term(label, shape, name, got, base, selected);
  const bool moved = c.status == TermStatus::fail && c.non_finite == 0;
  c.status = moved ? TermStatus::pass : TermStatus::fail;
  c.message = moved ? ""
                    : fmt::format(
                          "{}: the perturbation did not move these outputs, so the relation "
                          "could not have failed (instrument fault)",
                          label);
  return c;
}

Buffers perturb_tokens(const KernelShape& s, Buffers inputs, const Predicate& where) {
  for (auto& [name, values] : inputs) {
    const int width = kernels::tensor_width(s, name);
    if (width < 0 && name != "h0" && name != "dht") continue;
    const TermLayout layout(s, name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      auto index = layout.unravel(i);
      // A state has no token: h0 sits before the first token (t = -1), dht after the last
      // (t = T), so causality never moves h0 and batch/head independence moves it per (b, h).
      if (width < 0) index = {index[0], name == "h0" ? -1 : s.T, index[1], index[2]};
      if (!where(index)) continue;
      // stays in range for every input: g <= 0, b/w/beta >= 0
      values[i] = name == "g" ? values[i] * 0.5f - 0.25f : values[i] * 0.75f + 0.125f;
    }
  }
  return inputs;
}

Buffers slice_time(const KernelShape& s, const Buffers& inputs, int t0, int t1,
                   KernelShape& sliced) {
  sliced = s;
  sliced.T = t1 - t0;
  Buffers out;
  for (const auto& [name, values] : inputs) {
    const int width = kernels::tensor_width(s, name);
    if (width < 0) {
      out[name] = values;
      continue;
    }
    const int w = width == 0 ? 1 : width;
    auto& cut = out[name];
    for (int b = 0; b < s.B; ++b)
      for (int t = t0; t < t1; ++t)
        for (int h = 0; h < s.H; ++h)
          for (int i = 0; i < w; ++i)
            cut.push_back(values[token_offset(s.T, s.H, width, b, t, h, i)]);
  }
  return out;
}

}  // namespace deltaproof::gates

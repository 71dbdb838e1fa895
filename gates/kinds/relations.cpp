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

Elements::Elements(const KernelShape& s, const std::string& name)
    : layout_(s, name),
      key_heads_(kernels::on_key_heads(name)),
      first_side_(name == "h0" || name == "dh0"),
      group_(s.value_heads() / s.H) {
  if (s.packed()) {
    token_row_ = s.token_sequences();
    begin_.assign(s.cu_seqlens.begin(), s.cu_seqlens.end() - 1);
    end_.assign(s.cu_seqlens.begin() + 1, s.cu_seqlens.end());
  } else {
    begin_.assign(static_cast<std::size_t>(s.B), 0);
    end_.assign(static_cast<std::size_t>(s.B), s.T);
  }
}

Element Elements::at(std::size_t flat) const {
  const auto index = layout_.unravel(flat);
  Element e;
  e.state = layout_.state;
  e.on_key_heads = key_heads_;
  if (e.state) {
    e.row = index[0];
    e.head = index[1];
    const auto row = static_cast<std::size_t>(e.row);
    e.t = first_side_ ? begin_[row] - 1 : end_[row];
  } else {
    e.t = index[1];
    e.row = token_row_.empty() ? index[0] : token_row_[static_cast<std::size_t>(e.t)];
    e.head = index[2];
  }
  e.key_head = key_heads_ ? e.head : e.head / group_;
  return e;
}

TermComparison bitwise_term(const std::string& label, const KernelShape& shape,
                            const std::string& name, const std::vector<float>& got,
                            const std::vector<float>& want, const Predicate& selected) {
  TermComparison c;
  c.term = label;
  c.bar = 0.0;
  c.index_names = index_names(shape, name);
  long differing = 0, compared = 0;
  const Elements elements(shape, name);
  RelError error;  // the figures beside the bitwise count, over the selected elements
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (!selected(elements.at(i))) continue;
    const auto index = elements.index(i);
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
    // A state has no token: h0 sits before its row's first token, dht after its last
    // (Element), so causality never moves h0 and batch/head independence moves it per row.
    const Elements elements(s, name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (!where(elements.at(i))) continue;
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
    // a row's tokens [t0, t1) are contiguous: t is outermost after b
    const std::size_t token = kernels::tensor_size(s, name) / (static_cast<std::size_t>(s.B) * s.T);
    auto& cut = out[name];
    for (int b = 0; b < s.B; ++b) {
      const auto from = values.begin() + static_cast<std::ptrdiff_t>(
                                             (static_cast<std::size_t>(b) * s.T + t0) * token);
      cut.insert(cut.end(), from, from + static_cast<std::ptrdiff_t>((t1 - t0) * token));
    }
  }
  return out;
}

Buffers sequence_alone(const KernelShape& s, const Buffers& tensors, int n, KernelShape& alone) {
  const auto begin = static_cast<int>(s.cu_seqlens.at(static_cast<std::size_t>(n)));
  const auto end = static_cast<int>(s.cu_seqlens.at(static_cast<std::size_t>(n) + 1));
  KernelShape dense = s;
  dense.cu_seqlens.clear();  // B = 1 already
  Buffers out = slice_time(dense, tensors, begin, end, alone);
  for (auto& [name, values] : out) {
    if (kernels::tensor_width(s, name) >= 0) continue;
    const std::size_t state = values.size() / static_cast<std::size_t>(s.states());
    const auto from = tensors.at(name).begin() + static_cast<std::ptrdiff_t>(n * state);
    values.assign(from, from + static_cast<std::ptrdiff_t>(state));
  }
  return out;
}

}  // namespace deltaproof::gates

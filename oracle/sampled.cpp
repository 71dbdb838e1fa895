// oracle/sampled.cpp — see sampled.hpp.
#include "oracle/sampled.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/op.hpp"
#include "core/parallel.hpp"
#include "oracle/evaluate.hpp"

namespace deltaproof::oracle {

namespace {

// Every tensor a problem or its outputs may hold, by name, with its layout.
std::vector<TensorLayout> all_layouts(const FixtureSpec& spec) {
  std::vector<TensorLayout> all = input_layouts(spec);
  for (const auto& l : cotangent_layouts(spec)) all.push_back(l);
  for (const auto& l : output_layouts(spec)) all.push_back(l);
  for (const auto& l : input_layouts(spec))
    all.push_back({gradient_name(l.name), l.is_state, l.width});
  return all;
}

std::size_t element_count(const FixtureSpec& s, const TensorLayout& l) {
  return l.is_state ? static_cast<std::size_t>(s.B) * s.H * s.K * s.V
                    : static_cast<std::size_t>(s.B) * s.T * s.H * l.per_token();
}

std::vector<double> slice(const FixtureSpec& s, const TensorLayout& l,
                          const std::vector<double>& values, int b, int h) {
  if (values.size() != element_count(s, l))
    throw InputError(fmt::format("{} holds {} values, not the {} of {} ({})", l.name, values.size(),
                                 element_count(s, l), l.name, s.describe()));
  std::vector<double> out;
  if (l.is_state) {
    out.reserve(static_cast<std::size_t>(s.K) * s.V);
    for (int i = 0; i < s.K; ++i)
      for (int j = 0; j < s.V; ++j) out.push_back(values[state_offset(s, b, h, i, j)]);
    return out;
  }
  const int w = l.per_token();
  out.reserve(static_cast<std::size_t>(s.T) * w);
  for (int t = 0; t < s.T; ++t)
    for (int i = 0; i < w; ++i) out.push_back(values[token_offset(s, w, b, t, h, i)]);
  return out;
}

void check_head(const FixtureSpec& s, int b, int h) {
  if (b < 0 || b >= s.B || h < 0 || h >= s.H)
    throw InputError(fmt::format("sequence (b, h) = ({}, {}) is outside B={} H={} ({})", b, h, s.B,
                                 s.H, s.describe()));
}

// Whether a tensor of the op runs over V (its last axis, or the [K, V] state's
// second): a slice of V columns holds its columns of it; every other tensor is
// read whole by each slice (op table, core/op.hpp).
bool over_columns(Op op, const std::string& name) {
  const auto t = find_tensor(op, name);
  return t && (t->axis == Axis::v || t->axis == Axis::state);
}

// Columns [j0, j1) of a one-sequence tensor over V: a token tensor's last
// axis, or a state's second.
std::vector<double> columns(const std::vector<double>& values, int width, int j0, int j1) {
  std::vector<double> out;
  const std::size_t rows = values.size() / static_cast<std::size_t>(width);
  out.reserve(rows * static_cast<std::size_t>(j1 - j0));
  for (std::size_t r = 0; r < rows; ++r)
    for (int j = j0; j < j1; ++j) out.push_back(values[r * width + j]);
  return out;
}

}  // namespace

TensorMap evaluate_quad_by_columns(const Problem& one, bool with_gradients, int groups,
                                   int threads) {
  const FixtureSpec& s = one.spec;
  if (s.B != 1 || s.H != 1)
    throw InputError(fmt::format("evaluate_quad_by_columns takes one sequence, not B{} H{} ({})",
                                 s.B, s.H, s.describe()));
  groups = std::clamp(groups, 1, s.V);
  std::vector<TensorMap> parts(static_cast<std::size_t>(groups));
  auto bounds = [&](int g) { return std::pair{g * s.V / groups, (g + 1) * s.V / groups}; };
  parallel_for(groups, threads, [&](int g) {
    const auto [j0, j1] = bounds(g);
    Problem cut;
    cut.spec = s;
    cut.spec.V = j1 - j0;
    for (const auto& [name, values] : one.values)
      cut.values[name] = over_columns(s.op, name) ? columns(values, s.V, j0, j1) : values;
    parts[static_cast<std::size_t>(g)] = evaluate_quad(cut, with_gradients, 1).tensors;
  });
  TensorMap out;
  for (const auto& [name, first] : parts.front()) {
    std::vector<double>& whole = out[name];
    if (over_columns(s.op, name)) {  // each group's columns in place
      const std::size_t rows = first.size() / static_cast<std::size_t>(bounds(0).second);
      whole.assign(rows * static_cast<std::size_t>(s.V), 0.0);
      for (int g = 0; g < groups; ++g) {
        const auto [j0, j1] = bounds(g);
        const std::vector<double>& part = parts[static_cast<std::size_t>(g)].at(name);
        for (std::size_t r = 0; r < rows; ++r)
          for (int j = j0; j < j1; ++j)
            whole[r * s.V + j] = part[r * static_cast<std::size_t>(j1 - j0) + (j - j0)];
      }
    } else {  // a gradient of a tensor every column reads: the sum over the groups, in order
      whole = first;
      for (int g = 1; g < groups; ++g) {
        const std::vector<double>& part = parts[static_cast<std::size_t>(g)].at(name);
        for (std::size_t i = 0; i < whole.size(); ++i) whole[i] += part[i];
      }
    }
  }
  return out;
}

Problem head_problem(const Problem& p, int b, int h) {
  check_head(p.spec, b, h);
  Problem one;
  one.spec = p.spec;
  one.spec.B = one.spec.H = 1;
  for (const auto& l : all_layouts(p.spec))
    if (auto it = p.values.find(l.name); it != p.values.end())
      one.values[l.name] = slice(p.spec, l, it->second, b, h);
  return one;
}

TensorMap head_slice(const FixtureSpec& spec, const TensorMap& tensors, int b, int h) {
  check_head(spec, b, h);
  TensorMap out;
  for (const auto& l : all_layouts(spec)) {
    const bool output = l.name == "o" || l.name == "ht" || l.name.front() == 'd';
    if (!output || l.name == "do" || l.name == "dht") continue;
    if (auto it = tensors.find(l.name); it != tensors.end())
      out[l.name] = slice(spec, l, it->second, b, h);
  }
  return out;
}

const SampledTerm& SampledHead::worst() const {
  return *std::max_element(
      terms.begin(), terms.end(),
      [](const SampledTerm& a, const SampledTerm& b) { return a.rel < b.rel; });
}

std::vector<SampledHead> check_heads_against_quad(const Problem& p, const TensorMap& reference,
                                                  const std::vector<std::pair<int, int>>& heads,
                                                  bool with_gradients, int threads) {
  std::vector<std::string> names = output_names(p.spec);
  if (with_gradients)
    for (const auto& n : gradient_names(p.spec)) names.push_back(n);
  for (const auto& n : names)
    if (!reference.count(n))
      throw InputError(fmt::format("the reference has no {} ({})", n, p.spec.describe()));
  std::vector<SampledHead> out;
  for (const auto& [b, h] : heads) {
    const Problem one = head_problem(p, b, h);
    const TensorMap quad =
        evaluate_quad_by_columns(one, with_gradients, resolve_threads(threads), threads);
    const TensorMap mine = head_slice(p.spec, reference, b, h);
    SampledHead head{b, h, {}};
    for (const auto& n : names) {
      const std::vector<double>&want = quad.at(n), &got = mine.at(n);
      double amax = 0.0, diff = 0.0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        amax = std::max(amax, std::abs(want[i]));
        const double d = std::abs(got[i] - want[i]);
        diff = std::isnan(d) ? std::numeric_limits<double>::infinity() : std::max(diff, d);
      }
      const double rel =
          amax > 0 ? diff / amax : (diff > 0 ? std::numeric_limits<double>::infinity() : 0.0);
      head.terms.push_back({n, rel});
    }
    out.push_back(std::move(head));
  }
  return out;
}

}  // namespace deltaproof::oracle

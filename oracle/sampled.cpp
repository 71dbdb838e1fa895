// oracle/sampled.cpp — see sampled.hpp.
#include "oracle/sampled.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
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

}  // namespace

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
    const TensorMap quad = evaluate_quad(one, with_gradients, threads).tensors;
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

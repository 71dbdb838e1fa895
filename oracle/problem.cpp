// oracle/problem.cpp — drawing a fixture's inputs and cotangents by regime.
#include "oracle/problem.hpp"

#include <algorithm>
#include <cmath>

#include "core/rng.hpp"

namespace deltaproof::oracle {
namespace {

// One stream per tensor, fixed forever: changing these changes every fixture.
std::uint64_t stream_of(const std::string& name) {
  static const std::map<std::string, std::uint64_t> streams = {
      {"q", 1}, {"k", 2},    {"v", 3},  {"g", 4},  {"b", 5},
      {"w", 6}, {"beta", 7}, {"h0", 8}, {"do", 9}, {"dht", 10}};
  return streams.at(name);
}

struct Range {
  double lo, hi;
};

Range decay_range(Regime regime) {
  switch (regime) {
    case Regime::mild:
      return {-0.05, 0.0};
    case Regime::stress:
      return {-20.0, 0.0};
    default:
      return {-5.0, -0.1};
  }
}

Range strength_range(Regime regime, const std::string& name) {
  if (regime == Regime::stress && name != "w") return {0.0, 2.0};
  return {0.0, 1.0};
}

// Draws a uniform value, or (edge regime) an exact zero with probability 1/2.
double draw_gate(Rng& rng, Regime regime, Range range) {
  if (regime == Regime::edge && rng.uniform01() < 0.5) return 0.0;
  return rng.uniform(range.lo, range.hi);
}

std::vector<double> draw_tensor(const FixtureSpec& spec, const TensorLayout& layout) {
  Rng rng(spec.seed, stream_of(layout.name));
  const auto count = static_cast<std::size_t>(shape_numel(layout.shape(spec)));
  std::vector<double> values(count);
  const std::string& name = layout.name;
  if (name == "g") {
    for (auto& x : values) x = draw_gate(rng, spec.regime, decay_range(spec.regime));
  } else if (name == "b" || name == "w" || name == "beta") {
    for (auto& x : values) x = draw_gate(rng, spec.regime, strength_range(spec.regime, name));
  } else if (name == "h0" && spec.h0_is_zero()) {
    // the zero initial state (the edge regime's, or asked for)
  } else {
    for (auto& x : values) x = rng.normal();
  }
  if (name == "q" || name == "k") {
    // l2-normalise each token's vector per head (computed in double, then rounded below)
    const int width = layout.width;
    for (std::size_t row = 0; row < count / width; ++row) {
      double norm2 = 0.0;
      for (int i = 0; i < width; ++i) norm2 += values[row * width + i] * values[row * width + i];
      const double inverse = 1.0 / std::sqrt(norm2);
      for (int i = 0; i < width; ++i) values[row * width + i] *= inverse;
    }
  }
  if (name == "do" && spec.masked_do) {
    // [B, T, HV, V]: token t of row r is (r / HV) mod T
    const std::size_t heads = static_cast<std::size_t>(spec.value_heads());
    const std::size_t width = static_cast<std::size_t>(layout.width);
    for (std::size_t row = 0; row < count / width; ++row)
      if (FixtureSpec::do_masked_at(static_cast<int>(row / heads % spec.T)))
        std::fill_n(values.begin() + static_cast<std::ptrdiff_t>(row * width), width, 0.0);
  }
  for (auto& x : values) x = round_to_dtype(x, spec.dtype);
  return values;
}

}  // namespace

std::vector<SequenceRef> sequences(const FixtureSpec& spec) {
  return problem_sequences(spec.B, spec.T, spec.H, spec.value_heads(), spec.cu_seqlens);
}

FixtureSpec alone_spec(const FixtureSpec& spec, int n) {
  FixtureSpec one = spec;
  one.cu_seqlens.clear();
  one.B = 1;
  one.T = static_cast<int>(spec.cu_seqlens[n + 1] - spec.cu_seqlens[n]);
  one.seed = spec.seed + 1000003ULL * static_cast<std::uint64_t>(n + 1);
  return one;
}

Problem draw_problem(const FixtureSpec& spec) {
  spec.validate();
  Problem problem{spec, {}};
  std::vector<TensorLayout> layouts = input_layouts(spec);
  for (const auto& layout : cotangent_layouts(spec)) layouts.push_back(layout);
  if (!spec.packed()) {
    for (const auto& layout : layouts) problem.values[layout.name] = draw_tensor(spec, layout);
    return problem;
  }
  // sequence after sequence, each drawn as it is alone: a packed tensor's
  // token rows and states are its sequences' one after another (batch 1)
  for (int n = 0; n < spec.states(); ++n) {
    const FixtureSpec one = alone_spec(spec, n);
    for (const auto& layout : layouts) {
      const std::vector<double> part = draw_tensor(one, layout);
      auto& whole = problem.values[layout.name];
      whole.insert(whole.end(), part.begin(), part.end());
    }
  }
  return problem;
}

}  // namespace deltaproof::oracle

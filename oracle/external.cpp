// oracle/external.cpp — see external.hpp.
#include "oracle/external.hpp"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "core/metric.hpp"
#include "core/rng.hpp"
#include "oracle/fd.hpp"
#include "oracle/sampled.hpp"

namespace deltaproof::oracle {
namespace {

// Neumaier's compensated sum.
struct Compensated {
  double sum = 0.0, carry = 0.0;
  void add(double x) {
    const double t = sum + x;
    carry += std::abs(sum) >= std::abs(x) ? (sum - t) + x : (x - t) + sum;
    sum = t;
  }
  double value() const { return sum + carry; }
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  Compensated s;
  for (std::size_t i = 0; i < a.size(); ++i) s.add(a[i] * b[i]);
  return s.value();
}

bool same_bits(const TensorMap& a, const TensorMap& b, std::string& first) {
  for (const auto& [name, x] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.size() != x.size() ||
        std::memcmp(x.data(), it->second.data(), x.size() * sizeof(double)) != 0) {
      first = name;
      return false;
    }
  }
  return a.size() == b.size();
}

}  // namespace

double loss_of(const Problem& problem, const TensorMap& outputs) {
  Compensated s;
  for (const auto& [out, cot] : {std::pair{"o", "do"}, {"ht", "dht"}}) {
    const auto& x = outputs.at(out);
    const auto& y = problem.at(cot);
    for (std::size_t i = 0; i < x.size(); ++i) s.add(x[i] * y[i]);
  }
  return s.value();
}

std::vector<Direction> scaled_directions(const Problem& problem) {
  std::vector<Direction> out;
  const auto layouts = input_layouts(problem.spec);
  for (std::size_t t = 0; t < layouts.size(); ++t) {
    const std::vector<double>& x = problem.at(layouts[t].name);
    double squares = 0.0;
    for (double v : x) squares += v * v;
    const double rms = x.empty() ? 0.0 : std::sqrt(squares / static_cast<double>(x.size()));
    // a tensor of zeros (edge's h0) moves by N(0, 1): its gradient still counts
    const double scale = rms > 0.0 ? rms : 1.0;
    Rng rng(problem.spec.seed, 2000 + t);
    Direction d{layouts[t].name, std::vector<double>(x.size())};
    for (auto& v : d.values) v = scale * rng.normal();
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<CanonicalFixture> production_fixtures() {
  std::vector<CanonicalFixture> out;
  for (Op op : {Op::gdn2, Op::kda})
    for (const auto& [B, T, H] : {std::tuple{4, 4096, 16}, std::tuple{1, 32768, 1}}) {
      FixtureSpec s;
      s.op = op;
      s.B = B, s.T = T, s.H = H, s.K = s.V = 128, s.chunk = 64;
      s.dtype = DType::BF16;
      out.push_back(
          {fmt::format("{}/t{}-c64-k128-b{}h{}-bf16.safetensors", op_name(op), T, B, H), s});
    }
  return out;
}

GeneratedFixture generate_external_fixture(const FixtureSpec& spec,
                                           const ExternalEvaluator& evaluator,
                                           const ExternalOptions& options) {
  refuse_packed_or_grouped(spec);
  auto progress = [&](const std::string& step) {
    if (options.progress) options.progress(step);
  };
  // each step's wall time (out.timings, never the file: its bytes must not
  // depend on the clock): where a production-shape generation's time goes
  auto clock = std::chrono::steady_clock::now();
  auto lap = [&clock] {
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - clock).count();
    clock = now;
    return seconds;
  };
  progress("drawing inputs");
  const Problem problem = draw_problem(spec);
  progress(evaluator.name);
  const TensorMap reference = evaluator.evaluate(problem, true);
  const double evaluate_seconds = lap();
  const double loss = loss_of(problem, reference);
  int evaluations = 0;
  auto loss_along = [&](const Direction& d, double step) {
    ++evaluations;
    if (evaluator.loss_along) return evaluator.loss_along(problem, d, step);
    const Problem there = moved(problem, d, step);
    return loss_of(there, evaluator.evaluate(there, false));
  };
  GeneratedFixture out;

  // 1. sampled sequences against quad
  progress("quad on sampled sequences");
  {
    std::vector<std::pair<int, int>> heads = options.heads;
    if (heads.empty()) {
      heads.push_back({0, 0});
      if (spec.B * spec.H > 1) heads.push_back({spec.B - 1, spec.H - 1});
    }
    const auto sampled = check_heads_against_quad(problem, reference, heads, true, options.threads);
    double worst = 0.0;
    nlohmann::json detail = nlohmann::json::object();
    for (const auto& head : sampled) {
      nlohmann::json terms = nlohmann::json::object();
      for (const auto& term : head.terms) terms[term.term] = term.rel;
      detail[fmt::format("b{}h{}", head.b, head.h)] = terms;
      worst = std::max(worst, head.worst().rel);
    }
    out.report.checks.push_back(make_check(
        "sampled_vs_quad", worst, ExternalBars::sampled_vs_quad, true,
        fmt::format("o, ht and every gradient of {} sampled (b, h) sequences, each cut out as its "
                    "own problem and run in quad (split over V columns); rel = max|ref-quad|/"
                    "max|quad| per term",
                    heads.size()),
        detail));
    out.timings["evaluate"] = evaluate_seconds;
    out.timings["sampled_vs_quad"] = lap();
  }

  const auto directions = scaled_directions(problem);
  std::vector<double> reverse_dd;
  for (const auto& d : directions)
    reverse_dd.push_back(dot(reference.at(gradient_name(d.tensor)), d.values));

  // 2. central differences of the reference's function against its reverse sweep
  progress("finite differences");
  {
    double worst = 0.0, worst_estimate = 0.0;
    nlohmann::json detail = nlohmann::json::object();
    for (std::size_t d = 0; d < directions.size(); ++d) {
      const FdResult<double> fd =
          central_derivative<double>([&](double step) { return loss_along(directions[d], step); });
      const double rel = std::abs(fd.derivative - reverse_dd[d]) / std::abs(reverse_dd[d]);
      detail[directions[d].tensor] = rel;
      worst = std::max(worst, std::isnan(rel) ? std::numeric_limits<double>::infinity() : rel);
      worst_estimate = std::max(worst_estimate, fd.error_estimate / std::abs(reverse_dd[d]));
    }
    detail["max_error_estimate_rel"] = worst_estimate;
    out.report.checks.push_back(make_check(
        "fd_vs_reverse_sweep", worst, ExternalBars::fd_vs_reverse_sweep, true,
        "6th-order central differences (Boost.Math, f64) of the reference's own L along one "
        "random direction per input tensor (N(0,1) x the tensor's rms) against <grad, d>; rel = "
        "|fd - <grad,d>| / |<grad,d>|",
        detail));
    out.timings["fd_vs_reverse_sweep"] = lap();
    out.timings["fd_evaluations"] = std::exchange(evaluations, 0);
  }

  // 3. Taylor remainder along the same directions
  progress("taylor remainder");
  {
    const double rounding_scale = 1024 * loss_magnitude(problem, reference);
    std::vector<double> steps;
    for (int e = 8; e <= 20; e += std::max(1, options.taylor_stride))
      steps.push_back(std::ldexp(1.0, -e));
    std::vector<TaylorDirection> taylor;
    for (std::size_t d = 0; d < directions.size(); ++d)
      taylor.push_back({&directions[d], reverse_dd[d]});
    out.report.checks.push_back(taylor_remainder_check(
        taylor, loss_along, loss, steps, rounding_scale,
        fmt::format("slope of log|L(x+hd)-L(x)-h<grad,d>| vs log h, {} steps h = 2^-8..2^-20, "
                    "the fd directions; 2 = right gradient, 1 = wrong",
                    steps.size())));
    out.timings["taylor_remainder_order"] = lap();
    out.timings["taylor_evaluations"] = std::exchange(evaluations, 0);
  }

  // 4. determinism: a second evaluation, the same bits
  progress("determinism");
  {
    std::string first;
    const bool same = same_bits(reference, evaluator.evaluate(problem, true), first);
    out.report.checks.push_back(
        make_check("determinism", same ? 0.0 : 1.0, 0.0, true,
                   same ? "a second evaluation gives the same bits in every output and gradient"
                        : fmt::format("a second evaluation differs, first in {}", first)));
    out.timings["determinism"] = lap();
  }

  out.file = fixture_tensors(problem, reference);
  set_fixture_metadata(spec, loss, evaluator.name, options.command, out);
  out.timings["assemble"] = lap();  // tensors, metadata, sha256s
  return out;
}

}  // namespace deltaproof::oracle

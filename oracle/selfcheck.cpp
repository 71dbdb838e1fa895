// oracle/selfcheck.cpp — the generator's self-checks. See selfcheck.hpp.
#include "oracle/selfcheck.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <fmt/format.h>

#include "core/metric.hpp"
#include "core/rng.hpp"
#include "oracle/fd.hpp"
#include "oracle/forward_mode.hpp"

namespace deltaproof::oracle {

bool SelfCheckReport::passed() const {
  return std::all_of(checks.begin(), checks.end(), [](const auto& c) { return c.passed; });
}

const CheckFigure* SelfCheckReport::first_failure() const {
  for (const auto& c : checks)
    if (!c.passed) return &c;
  return nullptr;
}

nlohmann::json SelfCheckReport::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& c : checks) {
    nlohmann::json figure = std::isfinite(c.figure) ? nlohmann::json(c.figure) : nlohmann::json();
    out[c.check] = {{"figure", figure},
                    {"bar", c.bar},
                    {"pass_if", c.lower_is_better ? "figure <= bar" : "figure >= bar"},
                    {"passed", c.passed},
                    {"method", c.method},
                    {"detail", c.detail}};
  }
  return out;
}

bool path_exists(const std::string& cotangent, const std::string& gradient) {
  return !(cotangent == "dht" && gradient == "dq");
}

std::vector<std::string> PathLiveness::covered() const {
  std::vector<std::string> out;
  for (const auto& p : paths)
    if (p.covered) out.push_back(p.name());
  return out;
}

std::vector<std::string> PathLiveness::uncovered() const {
  std::vector<std::string> out;
  for (const auto& p : paths)
    if (p.structural && !p.covered) out.push_back(p.name());
  return out;
}

std::vector<std::string> PathLiveness::structurally_absent() const {
  std::vector<std::string> out;
  for (const auto& p : paths)
    if (!p.structural) out.push_back(p.name());
  return out;
}

nlohmann::json PathLiveness::to_json() const {
  nlohmann::json shares = nlohmann::json::object();
  for (const auto& p : paths)
    shares[p.cotangent][p.gradient] =
        std::isfinite(p.share) ? nlohmann::json(p.share) : nlohmann::json();
  return {{"norm", "max"},
          {"threshold", threshold},
          {"method",
           "share = max|g with only that cotangent non-zero| / max|g| (f64 reverse sweep); "
           "covered if share >= threshold"},
          {"shares", shares},
          {"covered", covered()},
          {"uncovered", uncovered()},
          {"structurally_absent", structurally_absent()},
          {"linearity", linearity}};
}

Problem prefix_problem(const Problem& problem, int length) {
  const FixtureSpec& full = problem.spec;
  Problem prefix = problem;
  FixtureSpec& s = prefix.spec;
  if (full.packed()) {  // each sequence cut to its first `length` tokens
    s.cu_seqlens = {0};
    for (std::size_t n = 0; n + 1 < full.cu_seqlens.size(); ++n)
      s.cu_seqlens.push_back(
          s.cu_seqlens.back() +
          std::min<std::int64_t>(length, full.cu_seqlens[n + 1] - full.cu_seqlens[n]));
    s.T = static_cast<int>(s.cu_seqlens.back());
  } else {
    s.T = length;
  }
  const std::vector<SequenceRef> cut_refs = sequences(s), full_refs = sequences(full);
  auto layouts = input_layouts(full);
  for (const auto& layout : cotangent_layouts(full)) layouts.push_back(layout);
  for (const auto& layout : layouts) {
    if (layout.is_state) continue;
    const auto& values = problem.at(layout.name);
    auto& cut = prefix.values[layout.name];
    cut.assign(static_cast<std::size_t>(shape_numel(layout.shape(s))), 0.0);
    for (std::size_t n = 0; n < cut_refs.size(); ++n) {
      const auto to = sequence_offsets(s, layout, cut_refs[n]);
      const auto from = sequence_offsets(full, layout, full_refs[n], cut_refs[n].length());
      for (std::size_t i = 0; i < to.size(); ++i) cut[to[i]] = values[from[i]];
    }
  }
  std::fill(prefix.values["dht"].begin(), prefix.values["dht"].end(), 0.0);
  return prefix;
}

Problem moved(const Problem& problem, const Direction& d, double step) {
  Problem out = problem;
  auto& values = out.values[d.tensor];
  for (std::size_t i = 0; i < values.size(); ++i) values[i] += step * d.values[i];
  return out;
}

double loss_magnitude(const Problem& problem, const TensorMap& outputs) {
  double total = 0.0;
  const auto& o = outputs.at("o");
  const auto& dout = problem.at("do");
  for (std::size_t i = 0; i < o.size(); ++i) total += std::abs(o[i] * dout[i]);
  const auto& ht = outputs.at("ht");
  const auto& dht = problem.at("dht");
  for (std::size_t i = 0; i < ht.size(); ++i) total += std::abs(ht[i] * dht[i]);
  return total;
}

CheckFigure make_check(std::string name, double figure, double bar, bool lower_is_better,
                       std::string method, nlohmann::json detail) {
  CheckFigure c{std::move(name),   figure,           bar, lower_is_better, false,
                std::move(method), std::move(detail)};
  c.passed = std::isfinite(figure) && (lower_is_better ? figure <= bar : figure >= bar);
  return c;
}

CheckFigure taylor_remainder_check(const std::vector<TaylorDirection>& directions,
                                   const std::function<double(const Direction&, double)>& loss,
                                   double f0, const std::vector<double>& steps,
                                   double rounding_scale, std::string method) {
  double worst = std::numeric_limits<double>::infinity();
  nlohmann::json detail = nlohmann::json::object();
  std::size_t linear = 0;
  for (const auto& [direction, claimed] : directions) {
    const TaylorSweep sweep = taylor_remainder_sweep<double>(
        [&](double step) { return loss(*direction, step); }, f0, claimed, steps, rounding_scale);
    if (sweep.points_used < 3) {
      detail[direction->tensor] = "linear (remainder at the rounding floor)";
      ++linear;
      continue;
    }
    detail[direction->tensor] = sweep.slope;
    worst = std::min(worst, sweep.slope);
  }
  if (linear == directions.size()) worst = 2.0;  // nothing curved to fit
  return make_check("taylor_remainder_order", worst, SelfCheckBars::taylor_min_order, false,
                    std::move(method), detail);
}

namespace {

std::vector<Direction> random_directions(const Problem& problem, int per_tensor) {
  std::vector<Direction> directions;
  const auto layouts = input_layouts(problem.spec);
  for (std::size_t t = 0; t < layouts.size(); ++t) {
    for (int n = 0; n < per_tensor; ++n) {
      Rng rng(problem.spec.seed, 1000 + 64 * t + n);
      Direction d{layouts[t].name, std::vector<double>(problem.at(layouts[t].name).size())};
      for (auto& x : d.values) x = rng.normal();
      directions.push_back(std::move(d));
    }
  }
  return directions;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// f(step) = L(x + step d) in f64 (loss_f64 of moved(problem, d, step), bit for
// bit): the steps the caller will ask for evaluated up front in one pass over
// the sequences (loss_f64_along), any other step on its own when asked.
std::function<double(double)> loss_along(const Problem& problem, const Direction& d,
                                         const std::vector<double>& steps, int threads,
                                         const GeneratorFaults& faults) {
  const std::vector<double> losses =
      loss_f64_along(problem, d.tensor, d.values, steps, threads, faults);
  return [&problem, &d, steps, losses, threads, faults](double step) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i] == step) return losses[i];
    return loss_f64_along(problem, d.tensor, d.values, {step}, threads, faults)[0];
  };
}

// The points Boost's sixth-order stencil evaluates at s = 0 (oracle/fd.hpp):
// +-h, +-2h, +-3h, +-4h.
std::vector<double> sixth_order_fd_points() {
  const double h = sixth_order_fd_step<double>();
  std::vector<double> points;
  for (int k = 1; k <= 4; ++k) {
    points.push_back(k * h);
    points.push_back(-k * h);
  }
  return points;
}

// Per tensor: max |a - b| / max |b| over that tensor's directions.
nlohmann::json per_tensor_rel(const std::vector<Direction>& directions,
                              const std::vector<double>& a, const std::vector<double>& b,
                              double& worst) {
  std::map<std::string, RelError> errors;
  for (std::size_t d = 0; d < a.size(); ++d) errors[directions[d].tensor].add(a[d], b[d]);
  nlohmann::json detail = nlohmann::json::object();
  worst = 0.0;
  for (const auto& [tensor, error] : errors) {
    const double rel = error.rel();
    detail[tensor] = rel;
    worst = std::max(worst, rel);
  }
  return detail;
}

// What every check of one run shares: the problem, its f64 outputs, the random
// directions and the directional derivatives of the loss along them.
struct Derivatives {
  const Problem& problem;
  const SelfCheckOptions& options;
  const OracleOutput& f64;
  std::vector<Direction> directions;
  std::vector<double> forward;  // forward mode, per direction
  std::vector<double> reverse;  // <reverse-sweep gradient, direction>
};

// 1. The reverse sweep against forward mode: every coordinate when there are
// few, else the random directions.
CheckFigure reverse_vs_forward_check(const Derivatives& d) {
  const FixtureSpec& s = d.problem.spec;
  const std::size_t coordinates = input_coordinate_count(s);
  double worst = 0.0;
  if (coordinates > d.options.coordinate_limit) {
    const nlohmann::json detail = per_tensor_rel(d.directions, d.reverse, d.forward, worst);
    return make_check("reverse_vs_forward_mode", worst, SelfCheckBars::reverse_vs_forward_mode,
                      true,
                      fmt::format("{} random directions per input tensor ({} coordinates), f64",
                                  d.options.directions_per_tensor, coordinates),
                      detail);
  }
  const TensorMap forward_gradient =
      forward_mode_gradient(d.problem, d.options.threads, d.options.faults);
  nlohmann::json detail = nlohmann::json::object();
  for (const auto& layout : input_layouts(s)) {
    const std::string name = gradient_name(layout.name);
    const double rel = rel_max_error(d.f64.tensors.at(name), forward_gradient.at(name));
    detail[name] = rel;
    worst = std::max(worst, rel);
  }
  return make_check(
      "reverse_vs_forward_mode", worst, SelfCheckBars::reverse_vs_forward_mode, true,
      fmt::format("every coordinate ({}), f64; rel = max|rev-fwd|/max|fwd| per tensor",
                  coordinates),
      detail);
}

// 2. Central finite differences against forward mode, on the first
// `fd_directions_per_tensor` directions of each input tensor.
CheckFigure fd_check(const Derivatives& d) {
  std::vector<Direction> fd_directions;
  std::vector<double> fd, fd_forward;
  double worst_estimate = 0.0;
  const std::vector<double> points = sixth_order_fd_points();
  for (std::size_t i = 0; i < d.directions.size(); ++i) {
    if (static_cast<int>(i % d.options.directions_per_tensor) >= d.options.fd_directions_per_tensor)
      continue;
    const auto along =
        loss_along(d.problem, d.directions[i], points, d.options.threads, d.options.faults);
    const FdResult<double> result = central_derivative<double>(along);
    fd_directions.push_back(d.directions[i]);
    fd.push_back(result.derivative);
    fd_forward.push_back(d.forward[i]);
    worst_estimate = std::max(worst_estimate, result.error_estimate / std::abs(d.forward[i]));
  }
  double worst = 0.0;
  nlohmann::json detail = per_tensor_rel(fd_directions, fd, fd_forward, worst);
  detail["max_error_estimate_rel"] = worst_estimate;
  return make_check(
      "fd_vs_forward_mode", worst, SelfCheckBars::fd_vs_forward_mode, true,
      fmt::format("6th-order central differences (Boost.Math, f64, exactly representable step) "
                  "on {} random directions per input tensor",
                  d.options.fd_directions_per_tensor),
      detail);
}

// 3. The Taylor remainder of the reverse-sweep gradient, one direction per input tensor.
CheckFigure taylor_check(const Derivatives& d) {
  // remainders below ~8000 ulps of sum|terms of L| are rounding noise: unfitted
  const double rounding_scale = 1024 * loss_magnitude(d.problem, d.f64.tensors);
  std::vector<double> steps;
  for (int e = 8; e <= 20; ++e) steps.push_back(std::ldexp(1.0, -e));
  std::vector<TaylorDirection> taylor;
  std::map<const Direction*, std::function<double(double)>> along;
  for (std::size_t i = 0; i < d.directions.size(); i += d.options.directions_per_tensor) {
    taylor.push_back({&d.directions[i], d.reverse[i]});
    along[&d.directions[i]] =
        loss_along(d.problem, d.directions[i], steps, d.options.threads, d.options.faults);
  }
  return taylor_remainder_check(
      taylor, [&](const Direction& direction, double step) { return along.at(&direction)(step); },
      d.f64.loss, steps, rounding_scale,
      "slope of log|L(x+hd)-L(x)-h<grad,d>| vs log h, h = 2^-8..2^-20, one direction per input "
      "tensor (f64); 2 = right gradient, 1 = wrong");
}

// 4. The f64 oracle against the quad one, on every output and gradient.
CheckFigure f64_vs_quad_check(const OracleOutput& f64, const OracleOutput& quad) {
  double worst = 0.0;
  nlohmann::json detail = nlohmann::json::object();
  for (const auto& [name, values] : quad.tensors) {
    const double rel = rel_max_error(f64.tensors.at(name), values);
    detail[name] = rel;
    worst = std::max(worst, rel);
  }
  return make_check("f64_vs_quad", worst, SelfCheckBars::f64_vs_quad, true,
                    "rel = max|f64-quad|/max|quad| on every output and gradient", detail);
}

// The number of chunks of the longest sequence.
int most_chunks(const FixtureSpec& s) {
  int most = 0;
  for (const auto& r : sequences(s)) most = std::max(most, (r.length() + s.chunk - 1) / s.chunk);
  return most;
}

// 5a. Not a resized copy: the smallest largest difference between a later chunk
// of an input and its first chunk.
double later_chunks_distinct(const Problem& problem) {
  const FixtureSpec& s = problem.spec;
  const std::vector<SequenceRef> refs = sequences(s);
  const int C = s.chunk;
  const int chunks = most_chunks(s);
  double distinct = std::numeric_limits<double>::infinity();
  for (const auto& layout : input_layouts(s)) {
    if (layout.is_state) continue;
    const auto& x = problem.at(layout.name);
    const int width = layout.per_token();
    auto at = [&](const SequenceRef& r, int t, int i) {
      return x[sequence_token_offset(s, layout.width, r, t, i, layout.key_heads)];
    };
    for (int chunk = 1; chunk < chunks; ++chunk) {
      double diff = 0.0;
      for (const auto& r : refs)
        for (int row = 0; row < C && chunk * C + row < r.length(); ++row)
          for (int i = 0; i < width; ++i)
            diff = std::max(
                diff, std::abs(at(r, r.begin + chunk * C + row, i) - at(r, r.begin + row, i)));
      distinct = std::min(distinct, diff);
    }
  }
  return distinct;
}

// 5b. Forward liveness: the relative change of o past chunk 0 when chunk 0's k
// and v scale by 1.5 (each entry once: a key head's k is shared by its group's
// sequences).
double forward_liveness(const Problem& problem, const OracleOutput& f64,
                        const SelfCheckOptions& options) {
  const FixtureSpec& s = problem.spec;
  const std::vector<SequenceRef> refs = sequences(s);
  Problem nudged = problem;
  for (const auto& layout : input_layouts(s)) {
    if (layout.name != "v" && layout.name != "k") continue;
    auto& x = nudged.values[layout.name];
    std::vector<char> scaled(x.size(), 0);
    for (const auto& r : refs)
      for (std::size_t at : sequence_offsets(s, layout, r, s.chunk))
        if (!scaled[at]) x[at] *= 1.5, scaled[at] = 1;
  }
  const auto nudged_o =
      evaluate<double>(nudged, false, options.threads, options.faults).tensors.at("o");
  const auto& base_o = f64.tensors.at("o");
  RelError moved;  // the nudged o past chunk 0 against the base o there
  for (const auto& r : refs)
    for (int t = r.begin + s.chunk; t < r.end; ++t)
      for (int j = 0; j < s.V; ++j) {
        const auto at = sequence_token_offset(s, s.V, r, t, j, false);
        moved.add(nudged_o[at], base_o[at]);
      }
  return moved.rel();
}

// 5c. Backward liveness: chunk 0's gradients against those of the one-chunk
// prefix, per gradient into `detail`; returns the largest.
double backward_liveness(const Problem& problem, const OracleOutput& f64,
                         const SelfCheckOptions& options, nlohmann::json& detail) {
  const FixtureSpec& s = problem.spec;
  const std::vector<SequenceRef> refs = sequences(s);
  const Problem one_chunk = prefix_problem(problem, s.chunk);
  const std::vector<SequenceRef> cut_refs = sequences(one_chunk.spec);
  const auto prefix = evaluate<double>(one_chunk, true, options.threads, options.faults);
  double live = 0.0;
  for (const auto& layout : input_layouts(s)) {
    const std::string name = gradient_name(layout.name);
    const auto& full = f64.tensors.at(name);
    const auto& cut = prefix.tensors.at(name);
    RelError error;  // of the prefix's gradient against the full one's
    if (layout.is_state) {
      error = rel_error(cut, full);
    } else {
      for (std::size_t n = 0; n < refs.size(); ++n) {
        const auto from = sequence_offsets(one_chunk.spec, layout, cut_refs[n]);
        const auto to = sequence_offsets(s, layout, refs[n], s.chunk);
        for (std::size_t i = 0; i < from.size(); ++i) error.add(cut[from[i]], full[to[i]]);
      }
    }
    const double rel = error.rel();
    detail["backward_" + name] = rel;
    live = std::max(live, rel);
  }
  return live;
}

// 5. Multi-chunk liveness, over each sequence's own chunks.
CheckFigure liveness_check(const Problem& problem, const OracleOutput& f64,
                           const SelfCheckOptions& options) {
  if (most_chunks(problem.spec) <= 1) {
    CheckFigure c =
        make_check("liveness", std::numeric_limits<double>::quiet_NaN(), SelfCheckBars::liveness,
                   false, "not applicable: one chunk (T <= chunk) has no carry");
    c.passed = true;
    return c;
  }
  nlohmann::json detail = nlohmann::json::object();
  const double distinct = later_chunks_distinct(problem);
  detail["min_later_chunk_vs_first_chunk_input_diff"] = distinct;
  const double forward = forward_liveness(problem, f64, options);
  detail["forward"] = forward;
  const double backward = backward_liveness(problem, f64, options, detail);
  detail["backward"] = backward;
  const double figure = distinct > 0.0 ? std::min(forward, backward) : 0.0;
  return make_check(
      "liveness", figure, SelfCheckBars::liveness, false,
      "min of: rel change of later-chunk o when chunk-0 k,v scale by 1.5; rel change of chunk-0 "
      "gradients vs the one-chunk prefix; (0 if a later chunk's inputs copy chunk 0)",
      detail);
}

// 6. Per-path liveness: the share of each gradient carried by each cotangent
// alone, and how far the cotangents' parts are from summing to the whole.
PathLiveness path_liveness(const Problem& problem, const OracleOutput& f64,
                           const SelfCheckOptions& options) {
  const FixtureSpec& s = problem.spec;
  PathLiveness paths;
  paths.threshold = SelfCheckBars::path_share;
  const auto cotangents = cotangent_layouts(s);
  std::vector<OracleOutput> alone;
  for (const auto& only : cotangents) {
    Problem cut = problem;
    for (const auto& other : cotangents)
      if (other.name != only.name)
        std::fill(cut.values[other.name].begin(), cut.values[other.name].end(), 0.0);
    alone.push_back(evaluate<double>(cut, true, options.threads, options.faults));
  }
  for (std::size_t c = 0; c < cotangents.size(); ++c) {
    for (const auto& name : gradient_names(s)) {
      const auto& full = f64.tensors.at(name);
      const auto& part = alone[c].tensors.at(name);
      double part_max = 0.0, full_max = 0.0;
      for (std::size_t i = 0; i < full.size(); ++i) {
        part_max = std::max(part_max, std::abs(part[i]));
        full_max = std::max(full_max, std::abs(full[i]));
      }
      PathShare p;
      p.cotangent = cotangents[c].name;
      p.gradient = name;
      p.share = full_max == 0.0 ? std::numeric_limits<double>::quiet_NaN() : part_max / full_max;
      p.structural = path_exists(p.cotangent, p.gradient);
      p.covered = p.structural && std::isfinite(p.share) && p.share >= paths.threshold;
      paths.paths.push_back(p);
    }
  }
  for (const auto& name : gradient_names(s)) {
    std::vector<double> sum = alone[0].tensors.at(name);
    for (std::size_t c = 1; c < alone.size(); ++c)
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += alone[c].tensors.at(name)[i];
    paths.linearity = std::max(paths.linearity, rel_max_error(sum, f64.tensors.at(name)));
  }
  return paths;
}

}  // namespace

SelfCheckReport run_self_checks(const Problem& problem, const OracleOutput& quad,
                                const SelfCheckOptions& options) {
  auto announce = [&](const std::string& name) {
    if (options.on_check) options.on_check(name);
  };
  SelfCheckReport report;

  announce("f64 oracle");
  const OracleOutput f64 = evaluate<double>(problem, true, options.threads, options.faults);
  Derivatives d{problem, options, f64, random_directions(problem, options.directions_per_tensor),
                {},      {}};
  announce("forward mode");
  d.forward = forward_mode_directional(problem, d.directions, options.threads, options.faults);
  for (const auto& direction : d.directions)
    d.reverse.push_back(dot(f64.tensors.at(gradient_name(direction.tensor)), direction.values));

  report.checks.push_back(reverse_vs_forward_check(d));
  announce("finite differences");
  report.checks.push_back(fd_check(d));
  announce("taylor remainder");
  report.checks.push_back(taylor_check(d));
  report.checks.push_back(f64_vs_quad_check(f64, quad));
  announce("liveness");
  report.checks.push_back(liveness_check(problem, f64, options));
  announce("path liveness");
  report.paths = path_liveness(problem, f64, options);
  if (problem.spec.packed()) {
    announce("packed vs alone");
    report.checks.push_back(packed_vs_alone_check(problem, quad, options.threads, options.faults));
  }
  return report;
}

CheckFigure packed_vs_alone_check(const Problem& problem, const OracleOutput& quad, int threads,
                                  const GeneratorFaults& faults) {
  const FixtureSpec& s = problem.spec;
  std::vector<TensorLayout> given = input_layouts(s), computed = output_layouts(s);
  for (const auto& layout : cotangent_layouts(s)) given.push_back(layout);
  for (auto layout : input_layouts(s)) {
    layout.name = gradient_name(layout.name);
    computed.push_back(layout);
  }
  const std::vector<SequenceRef> refs = sequences(s);
  const int heads = s.value_heads();
  std::size_t differing = 0, compared = 0;
  nlohmann::json per_tensor = nlohmann::json::object();
  for (int n = 0; n < s.states(); ++n) {
    const Problem alone = draw_problem(alone_spec(s, n));
    const OracleOutput alone_quad = evaluate_quad(alone, true, threads, faults);
    const std::vector<SequenceRef> alone_refs = sequences(alone.spec);
    auto compare = [&](const TensorLayout& layout, const std::vector<double>& packed,
                       const std::vector<double>& single) {
      for (int hv = 0; hv < heads; ++hv) {
        const auto at = sequence_offsets(s, layout, refs[static_cast<std::size_t>(n * heads + hv)]);
        const auto from =
            sequence_offsets(alone.spec, layout, alone_refs[static_cast<std::size_t>(hv)]);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < at.size(); ++i)
          bad += std::bit_cast<std::uint64_t>(packed[at[i]]) !=
                 std::bit_cast<std::uint64_t>(single[from[i]]);
        compared += at.size();
        differing += bad;
        if (bad > 0) per_tensor[layout.name] = per_tensor.value(layout.name, 0) + bad;
      }
    };
    for (const auto& layout : given)
      compare(layout, problem.at(layout.name), alone.at(layout.name));
    for (const auto& layout : computed)
      compare(layout, quad.tensors.at(layout.name), alone_quad.tensors.at(layout.name));
  }
  per_tensor["compared"] = compared;
  return make_check(
      "packed_vs_alone", static_cast<double>(differing), SelfCheckBars::packed_vs_alone, true,
      "each sequence generated alone (B = 1, its own seed): its inputs, cotangents and "
      "quad outputs and gradients against its slices of the packed fixture; figure = "
      "differing elements (bits)",
      per_tensor);
}

}  // namespace deltaproof::oracle

// oracle/selfcheck.hpp — the generator's self-checks (DESIGN.md section 3).
// Each produces a named figure, a bar and a verdict; `gen` refuses to write a
// fixture when any fails. The figures go into the fixture's metadata.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "oracle/evaluate.hpp"

namespace deltaproof::oracle {

struct CheckFigure {
  std::string check;            // e.g. "reverse_vs_forward_mode"
  double figure = 0.0;          // the measured number
  double bar = 0.0;             // the bar it is held to
  bool lower_is_better = true;  // figure <= bar passes, else figure >= bar
  bool passed = false;
  std::string method;     // how it was measured, in a phrase
  nlohmann::json detail;  // per-tensor or per-term figures
};

struct SelfCheckReport {
  std::vector<CheckFigure> checks;
  bool passed() const;
  const CheckFigure* first_failure() const;
  nlohmann::json to_json() const;
};

struct SelfCheckOptions {
  int threads = 0;
  // Up to this many input coordinates, forward mode checks every coordinate;
  // beyond it, `directions_per_tensor` random directions per input tensor.
  std::size_t coordinate_limit = 20000;
  int directions_per_tensor = 8;
  int fd_directions_per_tensor = 2;
  GeneratorFaults faults;
  // Called with the name of each check as it starts (progress display).
  std::function<void(const std::string&)> on_check;
};

// The bars, with why each sits where it does.
struct SelfCheckBars {
  // double reverse sweep vs double forward mode: both exact up to f64 rounding
  static constexpr double reverse_vs_forward_mode = 1e-10;
  // 6th-order central differences in f64 resolve ~1e-13 of the derivative
  static constexpr double fd_vs_forward_mode = 1e-8;
  // |L(x+hd) - L(x) - h<grad,d>| falls as h^2 (slope 2) for the right gradient
  // and as h^1 for a wrong one
  static constexpr double taylor_min_order = 1.8;
  // the oracle's own rounding: f64 vs quad on every output and gradient
  static constexpr double f64_vs_quad = 1e-9;
  // later-chunk outputs must move when earlier-chunk inputs move
  static constexpr double liveness = 1e-6;
};

// Runs every check except determinism (the fixture builder owns that one).
// `quad` is the oracle's output in quad; the f64 oracle runs inside.
SelfCheckReport run_self_checks(const Problem& problem, const OracleOutput& quad,
                                const SelfCheckOptions& options);

// rel = max|a - b| / max|b| over a whole tensor (0 when both are all zero).
double rel_max_error(const std::vector<double>& a, const std::vector<double>& b);

// The problem cut to its first `length` tokens, with dht set to zero.
Problem prefix_problem(const Problem& problem, int length);

}  // namespace deltaproof::oracle

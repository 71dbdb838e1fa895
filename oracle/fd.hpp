// oracle/fd.hpp — the finite-difference checks of DESIGN.md section 3, over
// double or quad:
//   central_derivative      d/ds f(s) at s = 0 by Boost.Math's sixth-order
//                           central stencil, with its own error estimate and
//                           the step it used;
//   taylor_remainder_sweep  r(h) = |f(h) - f(0) - h f'(0)| over a sweep of h,
//                           and the slope of log r against log h: 2 when the
//                           claimed derivative is right, 1 when it is wrong.
// f is a one-dimensional restriction of the loss, f(s) = L(x + s d), so the
// derivative checked is the directional derivative <grad L, d>.
// Tests: tests/oracle/fd_test.cpp.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <boost/math/differentiation/finite_difference.hpp>

#include "oracle/scalar.hpp"

namespace deltaproof::oracle {

template <class Real>
struct FdResult {
  Real derivative;      // d/ds f(s) at s = 0
  Real error_estimate;  // Boost's bound: truncation (from a 7th-difference) + rounding
  Real step;            // h; the stencil evaluates f at +-h, +-2h, +-3h, +-4h
};

// The step Boost's sixth-order stencil takes at x = 0, for reporting. This is
// the formula of finite_difference_derivative's fd_tag<6> branch
// (boost/math/differentiation/finite_difference.hpp, Boost 1.74): it balances
// the truncation error h^6 |f^(7)| / 140 against the rounding error
// 5 |f| eps / h, with |f| and |f^(7)| taken as 1. Boost then makes x + h
// exactly representable; at x = 0, (0 + h) - 0 == h, so h stands.
// tests/oracle/fd_test.cpp checks this against the points Boost evaluates.
template <class Real>
Real sixth_order_fd_step() {
  using std::pow;
  const Real eps = std::numeric_limits<Real>::epsilon();
  Real h = pow(eps / 168, Real(1) / Real(7));
  const Real x = 0;
  const Real x_plus_h = x + h;
  h = x_plus_h - x;
  return h;
}

// d/ds f(s) at s = 0. f takes and returns Real. Double: error ~ 1e-13 |f|;
// quad: ~ 1e-29 |f| (eps^(6/7) for functions whose derivatives are O(1)).
template <class Real, class F>
FdResult<Real> central_derivative(F f) {
  const auto restricted = [&f](Real s) -> Real { return f(s); };
  Real error_estimate = 0;
  const Real derivative =
      boost::math::differentiation::finite_difference_derivative<decltype(restricted), Real, 6>(
          restricted, Real(0), &error_estimate);
  return {derivative, error_estimate, sixth_order_fd_step<Real>()};
}

// Remainders at or below kTaylorFloorUlps ulps of |f(0)| are rounding noise,
// not Taylor remainder: they are reported and left out of the fit. A caller
// whose f(0) is a sum with cancellation passes the sum of |terms| as
// rounding_scale instead.
inline constexpr double kTaylorFloorUlps = 8;

struct TaylorPoint {
  double step;       // h
  double remainder;  // r(h) = |f(h) - f(0) - h dd|
  bool below_floor;  // r(h) <= floor: reported, not fitted
};

struct TaylorSweep {
  std::vector<TaylorPoint> points;  // in the order of the steps given
  // kTaylorFloorUlps * eps(Real) * (rounding_scale when given, else |f(0)|)
  double floor = 0;
  // Least-squares slope of log r against log h over the points above the
  // floor; NaN when fewer than two such points (or distinct steps) remain, so
  // that any range check on it fails.
  double slope = std::numeric_limits<double>::quiet_NaN();
  int points_used = 0;
};

// r(h) = |f(h) - f0 - h directional_derivative| for each h in steps, computed
// in Real. r falls as h^2 when directional_derivative = f'(0) and as h^1
// otherwise; pick steps where the h^2 term stands above rounding (double:
// h ~ 1e-5 .. 1e-7 for O(1) functions; quad reaches much smaller h) and where
// a wrong derivative's h^1 term dominates h^2 |f''| / 2. rounding_scale <= 0
// (the default) takes |f0| as the scale of f's rounding error.
template <class Real, class F>
TaylorSweep taylor_remainder_sweep(F f, Real f0, Real directional_derivative,
                                   std::span<const double> steps, Real rounding_scale = Real(-1)) {
  using std::abs;
  using std::isfinite;
  using std::log;
  TaylorSweep sweep;
  const Real floor = Real(kTaylorFloorUlps) * std::numeric_limits<Real>::epsilon() *
                     (rounding_scale > Real(0) ? rounding_scale : abs(f0));
  sweep.floor = to_double(floor);
  std::vector<double> log_steps, log_remainders;
  for (const double h : steps) {
    if (!(h > 0) || !std::isfinite(h)) {
      std::ostringstream message;
      message << "taylor_remainder_sweep: step " << h
              << " is not a positive finite number; give steps h > 0 (e.g. 2^-14 .. 2^-22)";
      throw std::invalid_argument(message.str());
    }
    const Real step = Real(h);
    const Real remainder = abs(f(step) - f0 - step * directional_derivative);
    if (!isfinite(remainder)) {
      std::ostringstream message;
      message << "taylor_remainder_sweep: the remainder at step " << h << " is "
              << to_double(remainder)
              << "; f(h), f(0) and the directional derivative must all be finite";
      throw std::domain_error(message.str());
    }
    const bool below_floor = remainder <= floor;
    sweep.points.push_back({h, to_double(remainder), below_floor});
    if (below_floor) continue;
    log_steps.push_back(to_double(log(step)));
    log_remainders.push_back(to_double(log(remainder)));
  }
  sweep.points_used = static_cast<int>(log_steps.size());
  if (sweep.points_used < 2) return sweep;

  // Slope = sum (x - mean x)(y - mean y) / sum (x - mean x)^2.
  const double count = static_cast<double>(sweep.points_used);
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < log_steps.size(); ++i) {
    mean_x += log_steps[i] / count;
    mean_y += log_remainders[i] / count;
  }
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < log_steps.size(); ++i) {
    sxy += (log_steps[i] - mean_x) * (log_remainders[i] - mean_y);
    sxx += (log_steps[i] - mean_x) * (log_steps[i] - mean_x);
  }
  if (sxx > 0) sweep.slope = sxy / sxx;
  return sweep;
}

}  // namespace deltaproof::oracle

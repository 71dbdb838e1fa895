// tests/oracle/fd_test.cpp — the finite-difference checks (oracle/fd.hpp) on
// functions with known derivatives, in double and quad: Boost's sixth-order
// central derivative lands within its own error estimate, the reported step
// is the one Boost used, and the Taylor-remainder slope tells a right
// derivative (2) from a wrong one (1). Run: oracle_tests --gtest_filter='Fd*:Taylor*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "oracle/dual.hpp"
#include "oracle/fd.hpp"
#include "oracle/scalar.hpp"

namespace deltaproof::oracle {
namespace {

// A function of s, its value and derivative at s = 0, in closed form.
template <class Real>
struct AnalyticCase {
  std::string name;
  Real (*f)(Real);
  Real f0;
  Real derivative;
};

template <class Real>
Real shifted_exp(Real s) {
  return exp(Real(3) / 10 + s);
}

// sin's Taylor polynomial to degree 9 around 0, evaluated at 2/5 + s.
template <class Real>
Real sin_polynomial(Real s) {
  const Real x = Real(2) / 5 + s;
  const Real x2 = x * x;
  return x * (1 - x2 / 6 * (1 - x2 / 20 * (1 - x2 / 42 * (1 - x2 / 72))));
}

template <class Real>
Real lorentzian(Real s) {
  const Real x = Real(7) / 10 + s;
  return 1 / (1 + x * x);
}

template <class Real>
std::vector<AnalyticCase<Real>> analytic_cases() {
  const Real e = Real(3) / 10, p = Real(2) / 5, l = Real(7) / 10;
  const Real p2 = p * p;
  return {
      {"exp(3/10 + s)", shifted_exp<Real>, exp(e), exp(e)},
      {"sin polynomial at 2/5 + s", sin_polynomial<Real>, sin_polynomial<Real>(Real(0)),
       // d/dx of x - x^3/6 + x^5/120 - x^7/5040 + x^9/362880
       1 - p2 / 2 + p2 * p2 / 24 - p2 * p2 * p2 / 720 + p2 * p2 * p2 * p2 / 40320},
      {"1/(1 + (7/10 + s)^2)", lorentzian<Real>, 1 / (1 + l * l),
       -2 * l / ((1 + l * l) * (1 + l * l))},
  };
}

template <class Real>
void check_central_derivative(double relative_bar) {
  for (const auto& c : analytic_cases<Real>()) {
    const FdResult<Real> fd = central_derivative<Real>(c.f);
    const Real error = abs(fd.derivative - c.derivative);
    const double relative = to_double(error / abs(c.derivative));
    EXPECT_LE(error, fd.error_estimate)
        << c.name << ": error " << to_double(error) << " exceeds Boost's estimate "
        << to_double(fd.error_estimate);
    EXPECT_LT(relative, relative_bar) << c.name << ": relative error " << relative;
    EXPECT_GT(fd.step, Real(0)) << c.name;
  }
}

TEST(Fd, CentralDerivativeDoubleIsWithinItsEstimate) { check_central_derivative<double>(1e-12); }
TEST(Fd, CentralDerivativeQuadIsWithinItsEstimate) { check_central_derivative<quad>(1e-25); }

// The step reported is the step Boost used: every point it evaluates is
// k * step for k in +-{1, 2, 3, 4}, and each of those eight appears.
template <class Real>
void check_reported_step() {
  std::vector<Real> arguments;
  const auto recording = [&arguments](Real s) {
    arguments.push_back(s);
    return exp(s);
  };
  const FdResult<Real> fd = central_derivative<Real>(recording);
  std::vector<int> multiples;
  for (const Real& s : arguments) {
    const Real k = s / fd.step;
    const int rounded = static_cast<int>(to_double(k));
    EXPECT_EQ(k, Real(rounded)) << "f evaluated at " << to_double(s) << ", not a multiple of step "
                                << to_double(fd.step);
    multiples.push_back(rounded);
  }
  std::sort(multiples.begin(), multiples.end());
  multiples.erase(std::unique(multiples.begin(), multiples.end()), multiples.end());
  EXPECT_EQ(multiples, (std::vector<int>{-4, -3, -2, -1, 1, 2, 3, 4}));
}

TEST(Fd, ReportedStepIsTheStepBoostUsesDouble) { check_reported_step<double>(); }
TEST(Fd, ReportedStepIsTheStepBoostUsesQuad) { check_reported_step<quad>(); }

// Steps 2^-first .. 2^-last.
std::vector<double> dyadic_steps(int first, int last) {
  std::vector<double> steps;
  for (int k = first; k <= last; ++k) steps.push_back(std::ldexp(1.0, -k));
  return steps;
}

template <class Real>
Real product_of_cases(Real s) {
  return shifted_exp(s) * lorentzian(s);
}

template <class Real>
void check_taylor_slopes(const std::vector<double>& steps) {
  const Real e = exp(Real(3) / 10), l = Real(7) / 10;
  const Real lor = 1 / (1 + l * l), dlor = -2 * l * lor * lor;
  const Real f0 = e * lor, right = e * lor + e * dlor;  // (exp * lorentzian)'
  const Real wrong = right * (1 + Real(1e-3));
  const TaylorSweep good = taylor_remainder_sweep(product_of_cases<Real>, f0, right, steps);
  const TaylorSweep bad = taylor_remainder_sweep(product_of_cases<Real>, f0, wrong, steps);
  EXPECT_EQ(good.points_used, static_cast<int>(steps.size()));
  EXPECT_EQ(bad.points_used, static_cast<int>(steps.size()));
  EXPECT_GE(good.slope, 1.9);
  EXPECT_LE(good.slope, 2.1);
  EXPECT_GE(bad.slope, 0.9);
  EXPECT_LE(bad.slope, 1.1);
}

TEST(Taylor, SlopeIsTwoForTheRightDerivativeAndOneForAWrongOneDouble) {
  check_taylor_slopes<double>(dyadic_steps(14, 22));
}
TEST(Taylor, SlopeIsTwoForTheRightDerivativeAndOneForAWrongOneQuad) {
  check_taylor_slopes<quad>(dyadic_steps(20, 40));
}

TEST(Taylor, RemaindersAtTheFloorAreReportedAndNotFitted) {
  // f(s) = 1 + 2s + 2^-30 s^2 in double: for h = 2^-k the remainder is
  // 2^-(2k+30) exactly while 1 + 2h + 2^-30 h^2 fits in 53 bits, and rounds
  // to (nearly) 0 after; the floor is 8 eps |f0| = 2^-49, so k = 5..9 are
  // fitted (slope exactly 2) and k = 10..16 are reported below the floor.
  const auto f = [](double s) { return 1 + 2 * s + std::ldexp(s * s, -30); };
  const std::vector<double> steps = dyadic_steps(5, 16);
  const TaylorSweep sweep = taylor_remainder_sweep(f, 1.0, 2.0, steps);
  EXPECT_EQ(sweep.floor, 8 * std::numeric_limits<double>::epsilon());
  ASSERT_EQ(sweep.points.size(), steps.size());
  EXPECT_EQ(sweep.points_used, 5);
  EXPECT_NEAR(sweep.slope, 2.0, 1e-12);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const int k = 5 + static_cast<int>(i);
    EXPECT_EQ(sweep.points[i].step, steps[i]);
    EXPECT_EQ(sweep.points[i].below_floor, k >= 10) << "h = 2^-" << k;
    if (k <= 9) {
      EXPECT_EQ(sweep.points[i].remainder, std::ldexp(1.0, -(2 * k + 30)));
    }
  }

  // A caller's rounding scale replaces |f0|: 4 raises the floor to 2^-47, so
  // only k = 5..8 are fitted.
  const TaylorSweep scaled = taylor_remainder_sweep(f, 1.0, 2.0, steps, 4.0);
  EXPECT_EQ(scaled.floor, 32 * std::numeric_limits<double>::epsilon());
  EXPECT_EQ(scaled.points_used, 4);
  EXPECT_NEAR(scaled.slope, 2.0, 1e-12);

  // An exactly linear f leaves nothing to fit: slope NaN, so range checks fail.
  const auto linear = [](double s) { return 1 + 2 * s; };
  const TaylorSweep flat = taylor_remainder_sweep(linear, 1.0, 2.0, steps);
  EXPECT_EQ(flat.points_used, 0);
  EXPECT_TRUE(std::isnan(flat.slope));
  EXPECT_FALSE(flat.slope >= 1.9 && flat.slope <= 2.1);
  // With f(0) = 0 the floor is 0, and an exact zero remainder still sits on it.
  const auto through_origin = [](double s) { return 2 * s; };
  const TaylorSweep origin = taylor_remainder_sweep(through_origin, 0.0, 2.0, steps);
  EXPECT_EQ(origin.floor, 0.0);
  EXPECT_EQ(origin.points_used, 0);
}

TEST(Taylor, BadStepsAndNonFiniteValuesAreRefusedWithAReason) {
  const auto f = [](double s) { return std::exp(s); };
  const std::vector<double> with_zero{1e-3, 0.0};
  EXPECT_THROW(taylor_remainder_sweep(f, 1.0, 1.0, with_zero), std::invalid_argument);
  const std::vector<double> negative{-1e-3};
  EXPECT_THROW(taylor_remainder_sweep(f, 1.0, 1.0, negative), std::invalid_argument);
  const auto nan_at_small_h = [](double s) {
    return s < 1e-4 ? std::numeric_limits<double>::quiet_NaN() : std::exp(s);
  };
  const std::vector<double> steps{1e-3, 1e-5};
  try {
    taylor_remainder_sweep(nan_at_small_h, 1.0, 1.0, steps);
    FAIL() << "a NaN remainder was accepted";
  } catch (const std::domain_error& error) {
    EXPECT_NE(std::string(error.what()).find("1e-05"), std::string::npos) << error.what();
  }
}

// --- the pipeline the oracle runs: a forward-mode directional derivative of
// an Eigen computation, checked by central FD and by the Taylor sweep --------

// L(z) = sum_i exp(-z_i) (A z)_i / (1 + z_i^2), z in R^4.
template <class S>
S eigen_loss(const Eigen::Matrix<S, 4, 1>& z) {
  Eigen::Matrix<S, 4, 4> A;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 4; ++c) A(r, c) = S(r + 1 - 2 * c) / 5;
  const Eigen::Matrix<S, 4, 1> Az = A * z;
  S total = 0;
  for (int i = 0; i < 4; ++i) total += exp(-z(i)) * Az(i) / (1 + z(i) * z(i));
  return total;
}

template <class Real>
void check_dual_against_fd(double fd_relative_bar, const std::vector<double>& steps) {
  using D = Dual<Real, 2>;
  const double z0[4] = {0.3, -0.2, 0.8, 0.1};
  const double d0[4] = {1.0, 0.5, -0.25, 2.0};  // direction 0
  const double d1[4] = {0.0, -1.0, 1.0, 0.5};   // direction 1
  Eigen::Matrix<D, 4, 1> z;
  for (int i = 0; i < 4; ++i) z(i) = D(Real(z0[i]), {Real(d0[i]), Real(d1[i])});
  const D loss = eigen_loss(z);
  for (int direction = 0; direction < 2; ++direction) {
    const double* d = direction == 0 ? d0 : d1;
    const auto along = [&](Real s) {
      Eigen::Matrix<Real, 4, 1> zs;
      for (int i = 0; i < 4; ++i) zs(i) = Real(z0[i]) + s * Real(d[i]);
      return eigen_loss(zs);
    };
    const Real forward_mode = tangent_of(loss, direction);
    const FdResult<Real> fd = central_derivative<Real>(along);
    const Real error = abs(fd.derivative - forward_mode);
    EXPECT_LE(error, fd.error_estimate) << "direction " << direction;
    EXPECT_LT(to_double(error / abs(forward_mode)), fd_relative_bar) << "direction " << direction;
    const TaylorSweep sweep = taylor_remainder_sweep(along, loss.value, forward_mode, steps);
    EXPECT_GE(sweep.slope, 1.9) << "direction " << direction;
    EXPECT_LE(sweep.slope, 2.1) << "direction " << direction;
    const TaylorSweep wrong =
        taylor_remainder_sweep(along, loss.value, forward_mode + Real(1e-3), steps);
    EXPECT_GE(wrong.slope, 0.9) << "direction " << direction;
    EXPECT_LE(wrong.slope, 1.1) << "direction " << direction;
  }
}

TEST(FdPipeline, ForwardModeAgreesWithCentralFdDouble) {
  check_dual_against_fd<double>(1e-11, dyadic_steps(14, 22));
}
TEST(FdPipeline, ForwardModeAgreesWithCentralFdQuad) {
  check_dual_against_fd<quad>(1e-25, dyadic_steps(20, 40));
}

}  // namespace
}  // namespace deltaproof::oracle

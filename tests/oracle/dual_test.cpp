// tests/oracle/dual_test.cpp — forward-mode duals (oracle/dual.hpp) against
// derivatives known in closed form: polynomials, exp, log, sqrt, quotients,
// several directions in one pass, Eigen matrix algebra over Dual<double, N>,
// Dual<quad, N> and plain quad. Run: oracle_tests --gtest_filter='Dual*:Eigen*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include <Eigen/Core>

#include "oracle/dual.hpp"
#include "oracle/scalar.hpp"

namespace deltaproof::oracle {
namespace {

using D1 = Dual<double, 1>;
using D3 = Dual<double, 3>;
using Q2 = Dual<quad, 2>;

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S>
using RowMat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class S>
using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// Relative agreement bar for double results that went through a few roundings.
constexpr double kDoubleRel = 1e-14;
constexpr double kQuadRel = 1e-31;

// A variable for direction 0 of a one-direction dual.
D1 variable(double x) { return D1(x, {1.0}); }

void expect_rel_near(double expected, double actual, double rel, const char* what) {
  const double bar = rel * std::max(1.0, std::abs(expected));
  EXPECT_NEAR(expected, actual, bar) << what;
}

void expect_rel_near_quad(const quad& expected, const quad& actual, const char* what) {
  const quad error = abs(expected - actual);
  const quad bar = kQuadRel * std::max(quad(1), abs(expected));
  EXPECT_LE(error, bar) << what << ": expected " << expected << ", got " << actual;
}

TEST(Dual, PolynomialMatchesItsDerivative) {
  // p(x) = 3x^3 - 2x^2 + x - 5, p'(x) = 9x^2 - 4x + 1
  for (double x0 : {-2.5, -0.3, 0.0, 1.7, 4.0}) {
    const D1 x = variable(x0);
    const D1 p = 3 * x * x * x - 2.0 * x * x + x - 5;
    expect_rel_near(3 * x0 * x0 * x0 - 2 * x0 * x0 + x0 - 5, p.value, kDoubleRel, "p value");
    expect_rel_near(9 * x0 * x0 - 4 * x0 + 1, tangent_of(p, 0), kDoubleRel, "p'");
  }
}

TEST(Dual, ConstantsOnEitherSideAndCompoundAssignment) {
  const double x0 = 1.25;
  const D1 x = variable(x0);
  EXPECT_DOUBLE_EQ(tangent_of(2 + x, 0), 1.0);
  EXPECT_DOUBLE_EQ(tangent_of(x + 2.0, 0), 1.0);
  EXPECT_DOUBLE_EQ(tangent_of(3 - x, 0), -1.0);
  EXPECT_DOUBLE_EQ(tangent_of(x - 3, 0), 1.0);
  EXPECT_DOUBLE_EQ(tangent_of(-x, 0), -1.0);
  EXPECT_DOUBLE_EQ(tangent_of(x / 4, 0), 0.25);
  EXPECT_DOUBLE_EQ(tangent_of(5.0 / x, 0), -5.0 / (x0 * x0));  // (c/x)' = -c/x^2
  EXPECT_DOUBLE_EQ((5.0 / x).value, 5.0 / x0);

  D1 y = x;  // y = ((x + x) - 1) * x / 2 = x^2 - x/2, y' = 2x - 1/2
  y += x;
  y -= 1;
  y *= x;
  y /= 2.0;
  EXPECT_DOUBLE_EQ(y.value, x0 * x0 - x0 / 2);
  EXPECT_DOUBLE_EQ(tangent_of(y, 0), 2 * x0 - 0.5);

  D1 z = x;  // z = (x * 3 + 1 - 2) / x = 3 - 1/x, z' = 1/x^2
  z *= 3;
  z += 1.0;
  z -= 2;
  z /= x;
  EXPECT_DOUBLE_EQ(z.value, 3 - 1 / x0);
  expect_rel_near(1 / (x0 * x0), tangent_of(z, 0), kDoubleRel, "z'");
}

TEST(Dual, ElementaryFunctionsMatchTheirDerivatives) {
  for (double x0 : {0.1, 0.75, 2.0, 9.5}) {
    const D1 x = variable(x0);
    const D1 e = exp(x), l = log(x), r = sqrt(x), q = x / (1 + x * x);
    EXPECT_DOUBLE_EQ(e.value, std::exp(x0));
    EXPECT_DOUBLE_EQ(tangent_of(e, 0), std::exp(x0));
    EXPECT_DOUBLE_EQ(l.value, std::log(x0));
    EXPECT_DOUBLE_EQ(tangent_of(l, 0), 1 / x0);
    EXPECT_DOUBLE_EQ(r.value, std::sqrt(x0));
    EXPECT_DOUBLE_EQ(tangent_of(r, 0), 0.5 / std::sqrt(x0));
    // (x / (1 + x^2))' = (1 - x^2) / (1 + x^2)^2
    expect_rel_near((1 - x0 * x0) / ((1 + x0 * x0) * (1 + x0 * x0)), tangent_of(q, 0), kDoubleRel,
                    "quotient'");
    // Composition: d/dx exp(sqrt(x)) log(x) = exp(sqrt x) (log(x) / (2 sqrt x) + 1/x)
    const D1 c = exp(sqrt(x)) * log(x);
    const double expected = std::exp(std::sqrt(x0)) * (std::log(x0) / (2 * std::sqrt(x0)) + 1 / x0);
    expect_rel_near(expected, tangent_of(c, 0), kDoubleRel, "composition'");
  }
}

TEST(Dual, AbsTakesTheSignOfTheValue) {
  EXPECT_DOUBLE_EQ(tangent_of(abs(variable(-2.0)), 0), -1.0);
  EXPECT_DOUBLE_EQ(abs(variable(-2.0)).value, 2.0);
  EXPECT_DOUBLE_EQ(tangent_of(abs(variable(3.0)), 0), 1.0);
  EXPECT_DOUBLE_EQ(tangent_of(abs(variable(0.0)), 0), 1.0);  // right derivative at 0
}

TEST(Dual, ExpAtLargeNegativeArgumentsGivesZeroNotNaN) {
  for (double x0 : {-700.0, -745.0, -800.0, -1e6}) {
    const D3 x(x0, {1.0, -2.0, 0.5});
    const D3 e = exp(x);
    EXPECT_EQ(e.value, std::exp(x0)) << "x0 = " << x0;
    EXPECT_TRUE(isfinite(e)) << e;
    for (int j = 0; j < 3; ++j) EXPECT_EQ(tangent_of(e, j), std::exp(x0) * x.tangent[j]) << e;
  }
  // Decays as in DESIGN.md section 2: exp(G_r - G_i) with G ~ -300, in quad too.
  const Q2 g(quad(-12000), {quad(1), quad(-1)});
  const Q2 e = exp(g);
  EXPECT_EQ(e.value, quad(0));
  EXPECT_TRUE(isfinite(e)) << e;
  EXPECT_TRUE(isfinite(exp(Q2(quad(-300), {quad(1), quad(1)}))));
}

TEST(Dual, VectorTangentCarriesSeveralDirectionsAtOnce) {
  // f(x, y, z) = x y / z + exp(x) log(y) - sqrt(z); seed the three unit
  // directions and read the gradient from one pass.
  const double x0 = 0.3, y0 = 1.7, z0 = 2.5;
  const D3 x(x0, {1, 0, 0}), y(y0, {0, 1, 0}), z(z0, {0, 0, 1});
  const D3 f = x * y / z + exp(x) * log(y) - sqrt(z);
  expect_rel_near(y0 / z0 + std::exp(x0) * std::log(y0), tangent_of(f, 0), kDoubleRel, "df/dx");
  expect_rel_near(x0 / z0 + std::exp(x0) / y0, tangent_of(f, 1), kDoubleRel, "df/dy");
  expect_rel_near(-x0 * y0 / (z0 * z0) - 0.5 / std::sqrt(z0), tangent_of(f, 2), kDoubleRel,
                  "df/dz");

  // A general direction is the same linear combination of the tangents.
  const D1 xd(x0, {0.5}), yd(y0, {-2.0}), zd(z0, {3.0});
  const D1 fd = xd * yd / zd + exp(xd) * log(yd) - sqrt(zd);
  expect_rel_near(0.5 * f.tangent[0] - 2.0 * f.tangent[1] + 3.0 * f.tangent[2], tangent_of(fd, 0),
                  kDoubleRel, "directional");
}

TEST(Dual, QuadDualsKeepQuadPrecision) {
  // p(x) = x^3 / 3 - x exp(x) at x = 1/3: p'(x) = x^2 - (1 + x) exp(x)
  const quad x0 = quad(1) / 3;
  const Q2 x(x0, {quad(1), quad(2)});
  const Q2 p = x * x * x / 3 - x * exp(x);
  const quad expected = x0 * x0 - (1 + x0) * exp(x0);
  expect_rel_near_quad(expected, tangent_of(p, 0), "p' in direction 1");
  expect_rel_near_quad(2 * expected, tangent_of(p, 1), "p' in direction 2");
  // The tangent is not a double in disguise: it differs from the double
  // result by far more than quad's rounding.
  const double x_double = 1.0 / 3;
  const double expected_double = x_double * x_double - (1 + x_double) * std::exp(x_double);
  EXPECT_GT(abs(tangent_of(p, 0) - quad(expected_double)), quad(1e-20));
  expect_rel_near_quad(log(x0) * 2, log(x * x).value, "log value");
  expect_rel_near_quad(1 / (2 * sqrt(x0)), tangent_of(sqrt(x), 0), "sqrt'");
}

TEST(Dual, ComparisonsUseTheValue) {
  const D1 a(1.0, {5.0}), b(2.0, {-5.0});
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(b > a);
  EXPECT_TRUE(a <= 1);
  EXPECT_TRUE(1.0 >= a);
  EXPECT_TRUE(a == D1(1.0, {0.0}));  // tangents play no part
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(a == 1);
  EXPECT_TRUE(0.5 < a);
  EXPECT_EQ(std::max(a, b).tangent[0], -5.0);
  const Q2 q(quad(3), {quad(1), quad(1)});
  EXPECT_TRUE(q > 2);
  EXPECT_TRUE(q < quad(4));
  EXPECT_TRUE(2.5 < q);
}

TEST(Dual, ValueAndTangentHelpersWorkOnPlainScalars) {
  EXPECT_EQ(value_of(2.5), 2.5);
  EXPECT_EQ(tangent_of(2.5, 0), 0.0);
  EXPECT_EQ(value_of(quad(2)), quad(2));
  EXPECT_EQ(tangent_of(quad(2), 1), quad(0));
  const D3 x(1.0, {2.0, 3.0, 4.0});
  EXPECT_EQ(value_of(x), 1.0);
  EXPECT_EQ(tangent_of(x, 2), 4.0);
  EXPECT_THROW(tangent_of(x, 3), std::out_of_range);
  EXPECT_EQ(to_double(quad(0.25)), 0.25);
  EXPECT_EQ(to_double(0.25), 0.25);
}

// --- Eigen over duals ---------------------------------------------------------

TEST(EigenDual, NumTraitsForwardToTheReal) {
  using Traits = Eigen::NumTraits<D3>;
  EXPECT_EQ(Traits::epsilon().value, std::numeric_limits<double>::epsilon());
  EXPECT_EQ(Traits::highest().value, std::numeric_limits<double>::max());
  EXPECT_EQ(Traits::lowest().value, -std::numeric_limits<double>::max());
  EXPECT_EQ(Traits::digits10(), std::numeric_limits<double>::digits10);
  EXPECT_GT(int(Traits::MulCost), int(Traits::AddCost));
  using QuadTraits = Eigen::NumTraits<Q2>;
  EXPECT_EQ(QuadTraits::epsilon().value, std::numeric_limits<quad>::epsilon());
  EXPECT_LT(QuadTraits::lowest().value, quad(0));
  EXPECT_EQ(QuadTraits::digits(), 113);
}

// d/dt (A + t B) x = B x, for three matrices B_j carried as three directions.
template <class Real>
void check_matrix_vector_tangents(double rel) {
  using D = Dual<Real, 3>;
  const int n = 5;
  Mat<Real> A(n, n), B[3];
  Vec<Real> x(n);
  for (int j = 0; j < 3; ++j) B[j].resize(n, n);
  for (int r = 0; r < n; ++r) {
    x(r) = Real(1) / (r + 2);
    for (int c = 0; c < n; ++c) {
      A(r, c) = Real(r - 2 * c) / 7;
      for (int j = 0; j < 3; ++j) B[j](r, c) = Real((r + 1) * (j + 1) - c) / 3;
    }
  }
  Mat<D> M(n, n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) M(r, c) = D(A(r, c), {B[0](r, c), B[1](r, c), B[2](r, c)});
  const Vec<Real> y0 = A * x;
  const Vec<D> y = M * x.template cast<D>();
  for (int j = 0; j < 3; ++j) {
    const Vec<Real> expected = B[j] * x;
    for (int r = 0; r < n; ++r) {
      const Real bar = Real(rel) * (1 + abs(expected(r)));
      EXPECT_LE(abs(tangent_of(y(r), j) - expected(r)), bar) << "direction " << j << " row " << r;
      EXPECT_LE(abs(value_of(y(r)) - y0(r)), bar) << "row " << r;
    }
  }
  // values_of / tangents_of give the same as plain matrices.
  EXPECT_LE(abs((values_of(y) - y0).cwiseAbs().maxCoeff()), Real(rel));
  EXPECT_LE(abs((tangents_of(y, 1) - B[1] * x).cwiseAbs().maxCoeff()), Real(rel));
}

TEST(EigenDual, MatrixVectorTangentsDouble) { check_matrix_vector_tangents<double>(kDoubleRel); }
TEST(EigenDual, MatrixVectorTangentsQuad) { check_matrix_vector_tangents<quad>(kQuadRel); }

// One token of DESIGN.md section 1 in Eigen, the ops the oracle uses, over any
// scalar S (double, quad, Dual):
//   P = Diag(exp g) S;  e = P^T (b*k);  S' = P + k (w*v - e)^T;  o = scale S'^T q
template <class S, class Real>
struct TokenStep {
  RowMat<S> state;
  Vec<S> out;
};
template <class S, class Real>
TokenStep<S, Real> token_step(const RowMat<S>& state0, const Vec<S>& q, const Vec<S>& k,
                              const Vec<S>& g, const Vec<S>& b, const Vec<S>& v, const Vec<S>& w,
                              const Real& scale) {
  const Vec<S> decay = g.array().exp().matrix();
  RowMat<S> state = decay.asDiagonal() * state0;
  const Vec<S> bk = b.cwiseProduct(k);
  Vec<S> u = (w.array() * v.array()).matrix();
  u.noalias() -= state.transpose() * bk;
  state.noalias() += k * u.transpose();
  const Vec<S> out = scale * (state.transpose() * q);  // a Real scale times a Dual vector
  return {state, out};
}

// Fixed inputs of one small token: K = 4, V = 3.
struct TokenInputs {
  RowMat<double> state0{4, 3};
  Vec<double> q{4}, k{4}, g{4}, b{4}, v{3}, w{3};
  TokenInputs() {
    for (int i = 0; i < 4; ++i) {
      q(i) = 0.3 + 0.1 * i;
      k(i) = 0.5 - 0.2 * i;
      g(i) = -0.1 - 0.7 * i;
      b(i) = 0.2 + 0.15 * i;
      for (int j = 0; j < 3; ++j) state0(i, j) = std::sin(1.0 + i + 2.0 * j);
    }
    for (int j = 0; j < 3; ++j) {
      v(j) = 1.0 - 0.4 * j;
      w(j) = 0.6 + 0.1 * j;
    }
  }
};

template <class S>
Vec<S> with_direction(const Vec<double>& value, const Vec<double>& direction, int slot) {
  Vec<S> out(value.size());
  for (Eigen::Index i = 0; i < value.size(); ++i) {
    out(i) = S(value(i));
    out(i).tangent[slot] = direction(i);
  }
  return out;
}

TEST(EigenDual, TokenStepTangentsMatchAnalyticDirections) {
  // Three directions in one pass: 0 moves the state, 1 moves v, 2 moves g.
  // The step is linear in S and v, and d/dt exp(g + t dg) = exp(g) dg, so:
  //   dir 0: dP = Diag(a) dS0,   de = dP^T bk,  dS' = dP - k de^T
  //   dir 1: dS' = k (w*dv)^T
  //   dir 2: dP = Diag(a*dg) S0, de = dP^T bk,  dS' = dP - k de^T
  // and do = scale dS'^T q in each.
  const TokenInputs in;
  const double scale = 0.5;
  RowMat<double> dstate0(4, 3);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) dstate0(i, j) = 0.1 * (i + 1) - 0.3 * j;
  const Vec<double> dv = Vec<double>::LinSpaced(3, -1.0, 2.0);
  const Vec<double> dg = Vec<double>::LinSpaced(4, 0.5, -0.5);

  RowMat<D3> state0 = in.state0.cast<D3>();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) state0(i, j).tangent[0] = dstate0(i, j);
  const auto step = token_step<D3, double>(state0, in.q.cast<D3>(), in.k.cast<D3>(),
                                           with_direction<D3>(in.g, dg, 2), in.b.cast<D3>(),
                                           with_direction<D3>(in.v, dv, 1), in.w.cast<D3>(), scale);
  EXPECT_TRUE(step.state.array().isFinite().all());

  const Vec<double> decay = in.g.array().exp().matrix();
  const Vec<double> bk = in.b.cwiseProduct(in.k);
  RowMat<double> expected_dstate[3];
  {
    const RowMat<double> dP = decay.asDiagonal() * dstate0;
    const Vec<double> de = dP.transpose() * bk;
    expected_dstate[0] = dP - in.k * de.transpose();
  }
  expected_dstate[1] = in.k * in.w.cwiseProduct(dv).transpose();
  {
    const RowMat<double> dP = decay.cwiseProduct(dg).asDiagonal() * in.state0;
    const Vec<double> de = dP.transpose() * bk;
    expected_dstate[2] = dP - in.k * de.transpose();
  }
  const auto plain =
      token_step<double, double>(in.state0, in.q, in.k, in.g, in.b, in.v, in.w, scale);
  EXPECT_LE((values_of(step.state) - plain.state).cwiseAbs().maxCoeff(), kDoubleRel);
  EXPECT_LE((values_of(step.out) - plain.out).cwiseAbs().maxCoeff(), kDoubleRel);
  for (int d = 0; d < 3; ++d) {
    const Vec<double> expected_dout = scale * (expected_dstate[d].transpose() * in.q);
    EXPECT_LE((tangents_of(step.state, d) - expected_dstate[d]).cwiseAbs().maxCoeff(), kDoubleRel)
        << "state tangent, direction " << d;
    EXPECT_LE((tangents_of(step.out, d) - expected_dout).cwiseAbs().maxCoeff(), kDoubleRel)
        << "output tangent, direction " << d;
  }
}

TEST(EigenQuad, TokenStepOverQuadMatchesAHandLoop) {
  // The same Eigen ops over plain quad, against index loops in quad.
  const TokenInputs in;
  const quad scale = quad(1) / 3;
  const auto step = token_step<quad, quad>(in.state0.cast<quad>(), in.q.cast<quad>(),
                                           in.k.cast<quad>(), in.g.cast<quad>(), in.b.cast<quad>(),
                                           in.v.cast<quad>(), in.w.cast<quad>(), scale);
  quad state[4][3], u[3], out[3];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) state[i][j] = exp(quad(in.g(i))) * quad(in.state0(i, j));
  for (int j = 0; j < 3; ++j) {
    u[j] = quad(in.w(j)) * quad(in.v(j));
    for (int i = 0; i < 4; ++i) u[j] -= state[i][j] * quad(in.b(i)) * quad(in.k(i));
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) state[i][j] += quad(in.k(i)) * u[j];
  for (int j = 0; j < 3; ++j) {
    out[j] = 0;
    for (int i = 0; i < 4; ++i) out[j] += state[i][j] * quad(in.q(i));
    out[j] *= scale;
  }
  for (int j = 0; j < 3; ++j) {
    expect_rel_near_quad(out[j], step.out(j), "output");
    for (int i = 0; i < 4; ++i) expect_rel_near_quad(state[i][j], step.state(i, j), "state");
  }
  // Mixing quad matrices with double and int scalars.
  const Vec<quad> scaled = 2.5 * step.out + step.out * 2;
  expect_rel_near_quad(quad(4.5) * step.out(0), scaled(0), "mixed scalar");
}

TEST(EigenDual, QuadDualTokenStep) {
  // Dual<quad, N> through the same Eigen ops: direction 0 moves v.
  using QD = Dual<quad, 1>;
  const TokenInputs in;
  const Vec<double> dv = Vec<double>::Ones(3);
  Vec<QD> v(3);
  for (int j = 0; j < 3; ++j) v(j) = QD(quad(in.v(j)), {quad(dv(j))});
  const quad scale = quad(1) / 3;
  const auto step =
      token_step<QD, quad>(in.state0.cast<quad>().cast<QD>(), in.q.cast<quad>().cast<QD>(),
                           in.k.cast<quad>().cast<QD>(), in.g.cast<quad>().cast<QD>(),
                           in.b.cast<quad>().cast<QD>(), v, in.w.cast<quad>().cast<QD>(), scale);
  // do = scale (k (w*dv)^T)^T q = scale (k.q) (w*dv)
  quad kq = 0;
  for (int i = 0; i < 4; ++i) kq += quad(in.k(i)) * quad(in.q(i));
  for (int j = 0; j < 3; ++j)
    expect_rel_near_quad(scale * kq * quad(in.w(j)) * quad(dv(j)), tangent_of(step.out(j), 0),
                         "do/dv");
}

TEST(EigenDual, LargeProductsThroughEigensBlockedKernel) {
  // 70 x 70 goes through Eigen's blocked GEMM (packing, block panels), not the
  // small-size lazy product: d/dt (A + t I)^2 = 2A at t = 0.
  const int n = 70;
  Mat<double> A(n, n);
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c) A(r, c) = std::sin(0.1 * r + 0.37 * c);
  Mat<D1> M = A.cast<D1>();
  for (int i = 0; i < n; ++i) M(i, i).tangent[0] = 1.0;
  Mat<D1> square(n, n);
  square.noalias() = M * M;
  EXPECT_LE((values_of(square) - A * A).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LE((tangents_of(square, 0) - 2 * A).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(EigenDual, ReductionsAndScalarMixing) {
  Vec<D1> x(3);
  for (int i = 0; i < 3; ++i) x(i) = D1(i + 1.0, {1.0});
  // sum, dot, squaredNorm, norm are Duals carrying the tangent.
  EXPECT_DOUBLE_EQ(tangent_of(x.sum(), 0), 3.0);
  EXPECT_DOUBLE_EQ(tangent_of(x.dot(x), 0), 2 * (1 + 2 + 3));
  EXPECT_DOUBLE_EQ(tangent_of(x.squaredNorm(), 0), 2 * (1 + 2 + 3));
  EXPECT_DOUBLE_EQ(tangent_of(x.norm(), 0), 6 / std::sqrt(14.0));
  EXPECT_DOUBLE_EQ(x.maxCoeff().value, 3.0);
  // Real, int and double scalars on either side; a Real scalar multiplies the
  // tangent without being promoted.
  const double scale = 0.25;
  const Vec<D1> y = scale * x + x * scale - 2 * x + x / 2.0 + x / scale;
  EXPECT_DOUBLE_EQ(tangent_of(y(0), 0), 0.25 + 0.25 - 2 + 0.5 + 4);
  // Identity, zero, constant.
  Mat<D1> I = Mat<D1>::Identity(2, 2);
  I += Mat<D1>::Constant(2, 2, D1(1.0, {1.0}));
  EXPECT_DOUBLE_EQ(I(0, 0).value, 2.0);
  EXPECT_DOUBLE_EQ(tangent_of(I(1, 0), 0), 1.0);
  // Mixed Dual x Real element-wise products.
  const Vec<double> weights = Vec<double>::Constant(3, 3.0);
  const Vec<D1> weighted = x.cwiseProduct(weights);
  EXPECT_DOUBLE_EQ(tangent_of(weighted(2), 0), 3.0);
  const Vec<D1> arr = (x.array() * weights.array() + 1).matrix();
  EXPECT_DOUBLE_EQ(arr(2).value, 10.0);
  // isFinite looks at the tangents (allFinite()/hasNaN() look at values only).
  Vec<D1> bad = x;
  bad(1).tangent[0] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(bad.array().isFinite().all());
  EXPECT_TRUE(bad.allFinite());  // the pitfall this test documents
}

}  // namespace
}  // namespace deltaproof::oracle

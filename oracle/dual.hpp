// oracle/dual.hpp — forward-mode dual numbers with vector tangents, for the
// oracle's forward-mode gradients (DESIGN.md section 3): one pass carries N
// directions at once. A Dual<Real, N> is a value x and N tangents dx/ds_j;
// every operation applies the exact chain rule to each tangent, written out so
// that a reader can check it against calculus in one line. No expression
// templates: each operation returns a plain Dual.
//
// Also here: Eigen::NumTraits and ScalarBinaryOpTraits for Dual, so that
// Eigen::Matrix<Dual<Real, N>, ...> supports the oracle's state algebra
// (products, outer products, transposes, asDiagonal, cwiseProduct, array ops,
// noalias) and `constant * matrix` with a Real or int/double constant.
//
// Usage: seed each input with its tangents, run the oracle, read the tangents:
//   Dual<double, 2> x(1.5, {1.0, 0.0}), y(0.5, {0.0, 1.0});
//   auto f = x * exp(y);  // tangent_of(f, 0) = df/dx, tangent_of(f, 1) = df/dy
//
// Eigen with duals, what to know:
// - A matrix product (operator* between two matrices or vectors, noalias or
//   not) wants one scalar type on both sides: cast the Real operand first,
//   `M * x.template cast<D>()`. Dual-by-Real products compile on some paths
//   only (row-major GEMV, outer products) and not on others (column-major
//   GEMV, GEMM): Eigen would have to narrow a Dual factor to a Real.
// - Coefficient-wise ops mix freely: scale * v, v / 2, M + A, cwiseProduct,
//   array *, x.asDiagonal() * M, with a Real, int or double on either side.
// - m.cast<double>() does not compile (a Dual does not narrow); read parts
//   with values_of(m) and tangents_of(m, j).
// - hasNaN()/allFinite() see values only; m.array().isFinite().all() sees
//   tangents too.
// - No pow, sin, cos, tanh: only exp, log, sqrt, abs (what section 1 needs).
// Tests: tests/oracle/dual_test.cpp.
#pragma once

#include <array>
#include <compare>
#include <concepts>
#include <cstddef>
#include <limits>
#include <ostream>
#include <type_traits>

#include <Eigen/Core>

#include "oracle/scalar.hpp"

namespace deltaproof::oracle {

template <class Real, int N>
struct Dual;

template <class T>
struct is_dual : std::false_type {};
template <class Real, int N>
struct is_dual<Dual<Real, N>> : std::true_type {};
template <class T>
inline constexpr bool is_dual_v = is_dual<T>::value;

// A plain number that mixes with Dual<Real, N> as a constant (zero tangent):
// Real itself or any built-in arithmetic type, so that `2 * x` and `x / 3.0`
// work for Real = double and Real = quad alike.
template <class S, class Real>
concept ConstantFor = std::same_as<S, Real> || std::is_arithmetic_v<S>;

template <class T>
concept Arithmetic = std::is_arithmetic_v<T>;

// double, quad, or anything else that is not a Dual.
template <class T>
concept PlainScalar = !is_dual_v<T>;

template <class Real, int N>
struct Dual {
  static_assert(N >= 1, "a Dual carries at least one tangent direction");
  static constexpr std::size_t kDirections = static_cast<std::size_t>(N);

  Real value{};
  std::array<Real, N> tangent{};  // tangent[j] = d value / d s_j

  Dual() = default;
  // A constant: every tangent zero. Implicit, so that a Real or a literal
  // converts wherever a Dual is expected (Eigen's setZero, Scalar(1), ...).
  Dual(const Real& constant) : value(constant) {}
  template <Arithmetic A>
  Dual(A constant) : value(static_cast<Real>(constant)) {}
  Dual(const Real& primal, const std::array<Real, N>& directional)
      : value(primal), tangent(directional) {}

  // --- arithmetic between duals ---------------------------------------------

  friend Dual operator+(const Dual& a) { return a; }

  friend Dual operator-(const Dual& a) {
    Dual r(-a.value);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = -a.tangent[j];
    return r;
  }

  // (a + b)' = a' + b'
  friend Dual operator+(const Dual& a, const Dual& b) {
    Dual r(a.value + b.value);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = a.tangent[j] + b.tangent[j];
    return r;
  }

  // (a - b)' = a' - b'
  friend Dual operator-(const Dual& a, const Dual& b) {
    Dual r(a.value - b.value);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = a.tangent[j] - b.tangent[j];
    return r;
  }

  // (a b)' = a' b + a b'
  friend Dual operator*(const Dual& a, const Dual& b) {
    Dual r(a.value * b.value);
    for (std::size_t j = 0; j < kDirections; ++j)
      r.tangent[j] = a.tangent[j] * b.value + a.value * b.tangent[j];
    return r;
  }

  // (a / b)' = (a' b - a b') / b^2 = (a' - (a/b) b') / b; the second form
  // cannot overflow in b^2.
  friend Dual operator/(const Dual& a, const Dual& b) {
    const Real quotient = a.value / b.value;
    Dual r(quotient);
    for (std::size_t j = 0; j < kDirections; ++j)
      r.tangent[j] = (a.tangent[j] - quotient * b.tangent[j]) / b.value;
    return r;
  }

  // --- arithmetic with a constant c (c' = 0) ---------------------------------

  // (a + c)' = (c + a)' = a'
  template <ConstantFor<Real> S>
  friend Dual operator+(const Dual& a, const S& c) {
    Dual r = a;
    r.value = a.value + static_cast<Real>(c);
    return r;
  }
  template <ConstantFor<Real> S>
  friend Dual operator+(const S& c, const Dual& a) {
    Dual r = a;
    r.value = static_cast<Real>(c) + a.value;
    return r;
  }

  // (a - c)' = a';  (c - a)' = -a'
  template <ConstantFor<Real> S>
  friend Dual operator-(const Dual& a, const S& c) {
    Dual r = a;
    r.value = a.value - static_cast<Real>(c);
    return r;
  }
  template <ConstantFor<Real> S>
  friend Dual operator-(const S& c, const Dual& a) {
    Dual r(static_cast<Real>(c) - a.value);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = -a.tangent[j];
    return r;
  }

  // (a c)' = (c a)' = a' c
  template <ConstantFor<Real> S>
  friend Dual operator*(const Dual& a, const S& c) {
    const Real constant = static_cast<Real>(c);
    Dual r(a.value * constant);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = a.tangent[j] * constant;
    return r;
  }
  template <ConstantFor<Real> S>
  friend Dual operator*(const S& c, const Dual& a) {
    const Real constant = static_cast<Real>(c);
    Dual r(constant * a.value);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = constant * a.tangent[j];
    return r;
  }

  // (a / c)' = a' / c;  (c / a)' = -(c/a) a' / a
  template <ConstantFor<Real> S>
  friend Dual operator/(const Dual& a, const S& c) {
    const Real constant = static_cast<Real>(c);
    Dual r(a.value / constant);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = a.tangent[j] / constant;
    return r;
  }
  template <ConstantFor<Real> S>
  friend Dual operator/(const S& c, const Dual& a) {
    const Real quotient = static_cast<Real>(c) / a.value;
    Dual r(quotient);
    for (std::size_t j = 0; j < kDirections; ++j)
      r.tangent[j] = -(quotient * a.tangent[j]) / a.value;
    return r;
  }

  // --- compound assignment ---------------------------------------------------

  Dual& operator+=(const Dual& b) { return *this = *this + b; }
  Dual& operator-=(const Dual& b) { return *this = *this - b; }
  Dual& operator*=(const Dual& b) { return *this = *this * b; }
  Dual& operator/=(const Dual& b) { return *this = *this / b; }
  template <ConstantFor<Real> S>
  Dual& operator+=(const S& c) {
    return *this = *this + c;
  }
  template <ConstantFor<Real> S>
  Dual& operator-=(const S& c) {
    return *this = *this - c;
  }
  template <ConstantFor<Real> S>
  Dual& operator*=(const S& c) {
    return *this = *this * c;
  }
  template <ConstantFor<Real> S>
  Dual& operator/=(const S& c) {
    return *this = *this / c;
  }

  // --- comparisons: on the value only ----------------------------------------
  // Tangents play no part, so branches (abs, max, Eigen's pivoting) take the
  // side the value takes. C++20 derives !=, <, <=, >, >= and the mirrored
  // forms (c < a) from these four.

  friend bool operator==(const Dual& a, const Dual& b) { return a.value == b.value; }
  friend std::partial_ordering operator<=>(const Dual& a, const Dual& b) {
    return compare_values(a.value, b.value);
  }
  template <ConstantFor<Real> S>
  friend bool operator==(const Dual& a, const S& c) {
    return a.value == static_cast<Real>(c);
  }
  template <ConstantFor<Real> S>
  friend std::partial_ordering operator<=>(const Dual& a, const S& c) {
    return compare_values(a.value, static_cast<Real>(c));
  }

  // --- elementary functions (found by ADL; see oracle/scalar.hpp) ------------

  // exp(a)' = exp(a) a'. When exp(a) underflows to 0 the tangents are 0, not
  // NaN: the product never forms exp(a) a' as a ratio.
  friend Dual exp(const Dual& a) {
    using std::exp;
    const Real exp_value = exp(a.value);
    Dual r(exp_value);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = exp_value * a.tangent[j];
    return r;
  }

  // log(a)' = a' / a
  friend Dual log(const Dual& a) {
    using std::log;
    Dual r(log(a.value));
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = a.tangent[j] / a.value;
    return r;
  }

  // sqrt(a)' = a' / (2 sqrt(a)); infinite at a = 0, as the derivative is.
  friend Dual sqrt(const Dual& a) {
    using std::sqrt;
    const Real root = sqrt(a.value);
    const Real twice_root = root + root;
    Dual r(root);
    for (std::size_t j = 0; j < kDirections; ++j) r.tangent[j] = a.tangent[j] / twice_root;
    return r;
  }

  // |a|' = sign(a) a', the sign taken from the value; at a = 0 the tangent
  // is a' (the right derivative).
  friend Dual abs(const Dual& a) { return a.value < Real(0) ? -a : a; }

  // NaN or infinity in the value or in any tangent. Eigen's
  // m.array().isNaN() / isFinite() reach these; m.hasNaN() and m.allFinite()
  // do not (they compare values only), so use the array forms on duals.
  friend bool isnan(const Dual& a) {
    using std::isnan;
    if (isnan(a.value)) return true;
    for (const Real& t : a.tangent)
      if (isnan(t)) return true;
    return false;
  }
  friend bool isfinite(const Dual& a) {
    using std::isfinite;
    if (!isfinite(a.value)) return false;
    for (const Real& t : a.tangent)
      if (!isfinite(t)) return false;
    return true;
  }
  friend bool isinf(const Dual& a) { return !isfinite(a) && !isnan(a); }

  // "value [t0, t1, ...]", so that a failing test prints both parts.
  friend std::ostream& operator<<(std::ostream& out, const Dual& a) {
    out << a.value << " [";
    for (std::size_t j = 0; j < kDirections; ++j) out << (j ? ", " : "") << a.tangent[j];
    return out << "]";
  }

 private:
  static std::partial_ordering compare_values(const Real& x, const Real& y) {
    if (x < y) return std::partial_ordering::less;
    if (y < x) return std::partial_ordering::greater;
    if (x == y) return std::partial_ordering::equivalent;
    return std::partial_ordering::unordered;  // a NaN
  }
};

// value_of / tangent_of read any scalar the oracle runs over, so that
// scalar-generic code (and the tests) need not know whether it holds a Dual.
// A plain number is a constant: its tangents are zero.
template <PlainScalar Real>
const Real& value_of(const Real& x) {
  return x;
}
template <class Real, int N>
const Real& value_of(const Dual<Real, N>& x) {
  return x.value;
}
template <PlainScalar Real>
Real tangent_of(const Real& /*x*/, int /*direction*/) {
  return Real(0);
}
template <class Real, int N>
const Real& tangent_of(const Dual<Real, N>& x, int direction) {
  return x.tangent.at(static_cast<std::size_t>(direction));
}

// The values, or one direction's tangents, of a Dual matrix as a plain
// Eigen matrix of Real with the same shape.
template <class Derived>
auto values_of(const Eigen::MatrixBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  return m.unaryExpr([](const Scalar& x) { return value_of(x); }).eval();
}
template <class Derived>
auto tangents_of(const Eigen::MatrixBase<Derived>& m, int direction) {
  using Scalar = typename Derived::Scalar;
  return m.unaryExpr([direction](const Scalar& x) { return tangent_of(x, direction); }).eval();
}

}  // namespace deltaproof::oracle

namespace Eigen {

// Dual is a real (not complex) signed floating type whose precision is its
// Real's. Real, NonInteger and Literal are the Dual itself: norms and sums of
// a Dual matrix are Duals (they carry tangents), and a literal that meets a
// Dual matrix is promoted to a Dual constant.
template <class R, int N>
struct NumTraits<deltaproof::oracle::Dual<R, N>> {
  using Self = deltaproof::oracle::Dual<R, N>;
  using Real = Self;
  using NonInteger = Self;
  using Nested = Self;
  using Literal = Self;

  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    // A Dual holds N + 1 Reals; a product costs 2N + 1 multiplications and
    // N additions of Real.
    ReadCost = (N + 1) * int(NumTraits<R>::ReadCost),
    AddCost = (N + 1) * int(NumTraits<R>::AddCost),
    MulCost = (2 * N + 1) * int(NumTraits<R>::MulCost) + N * int(NumTraits<R>::AddCost),
  };

  static Self epsilon() { return Self(NumTraits<R>::epsilon()); }
  static Self dummy_precision() { return Self(NumTraits<R>::dummy_precision()); }
  static Self highest() { return Self((std::numeric_limits<R>::max)()); }
  // Not NumTraits<R>::lowest(): Boost 1.74's version for float128 returns the
  // smallest positive number instead of -max.
  static Self lowest() { return Self(-(std::numeric_limits<R>::max)()); }
  static Self infinity() { return Self(std::numeric_limits<R>::infinity()); }
  static Self quiet_NaN() { return Self(std::numeric_limits<R>::quiet_NaN()); }
  static int digits10() { return std::numeric_limits<R>::digits10; }
  static int digits() { return std::numeric_limits<R>::digits; }
  static int min_exponent() { return std::numeric_limits<R>::min_exponent; }
  static int max_exponent() { return std::numeric_limits<R>::max_exponent; }
};

// Dual (op) Real and Real (op) Dual give a Dual, without promoting the Real
// to a Dual first: `scale * v` with a Real scale and a Dual vector multiplies
// each tangent by scale (the mixed operators above).
template <class R, int N, class BinaryOp>
struct ScalarBinaryOpTraits<deltaproof::oracle::Dual<R, N>, R, BinaryOp> {
  using ReturnType = deltaproof::oracle::Dual<R, N>;
};
template <class R, int N, class BinaryOp>
struct ScalarBinaryOpTraits<R, deltaproof::oracle::Dual<R, N>, BinaryOp> {
  using ReturnType = deltaproof::oracle::Dual<R, N>;
};

}  // namespace Eigen

// oracle/scalar.hpp — the plain scalar types the oracle runs over: double and
// quad (Boost's float128, IEEE binary128 through libquadmath; link -lquadmath).
// Including this header also makes Eigen matrices over quad work (Boost ships
// the Eigen NumTraits in boost/multiprecision/eigen.hpp).
//
// Math functions: code inside namespace deltaproof::oracle writes `exp(x)`,
// `log(x)`, `sqrt(x)`, `abs(x)` unqualified, for every scalar type. For double
// the using-declarations below supply std::exp and friends (ADL cannot: double
// has no namespace); for quad, argument-dependent lookup finds Boost's
// functions; for duals, ADL finds the hidden friends in oracle/dual.hpp. Code
// outside the namespace writes `using std::exp;` first, then `exp(x)`. Never
// write `std::exp(x)` or `oracle::exp(x)` in scalar-generic code: a qualified
// name turns ADL off, and quad and duals then fail to compile.
#pragma once

#include <cmath>

#include <Eigen/Core>
#include <boost/multiprecision/eigen.hpp>
#include <boost/multiprecision/float128.hpp>

namespace deltaproof::oracle {

using quad = boost::multiprecision::float128;

using std::abs;
using std::exp;
using std::log;
using std::sqrt;

inline double to_double(double x) { return x; }
inline double to_double(const quad& x) { return static_cast<double>(x); }

}  // namespace deltaproof::oracle

// core/rng.cpp — xoshiro256** (Blackman & Vigna) seeded by splitmix64, and a
// Box-Muller transform on portable log/sin/cos. Only IEEE-exact operations
// (+ - * / sqrt, frexp/ldexp, floor) are used, so every compiler and libm gives
// the same bits; the build disables FMA contraction (-ffp-contract=off).
#include "core/rng.hpp"

#include <cmath>

namespace deltaproof {

std::uint64_t splitmix64_next(std::uint64_t& state) {
  state += 0x9E3779B97F4A7C15ULL;
  std::uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

namespace {

std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr double kLn2 = 0.69314718055994530942;
constexpr double kHalfPi = 1.57079632679489661923;
constexpr double kSqrtHalf = 0.70710678118654752440;

}  // namespace

Rng::Rng(std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t mix = seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + 1;
  for (auto& word : state_) word = splitmix64_next(mix);
}

Rng Rng::from_state(const std::array<std::uint64_t, 4>& state) {
  Rng rng(0);
  rng.state_ = state;
  return rng;
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const std::uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return result;
}

double Rng::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform01(); }

double Rng::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  const double u1 = 1.0 - uniform01();  // (0, 1]: log is finite
  const double u2 = uniform01();
  const double radius = std::sqrt(-2.0 * portable_log(u1));
  const double theta = 2.0 * 3.14159265358979323846 * u2;
  spare_normal_ = radius * portable_sin(theta);
  has_spare_normal_ = true;
  return radius * portable_cos(theta);
}

// log x = e ln2 + log m with m in [sqrt(1/2), sqrt(2)), and log m by the atanh
// series 2 (s + s^3/3 + s^5/5 + ...), s = (m-1)/(m+1), |s| < 0.172: 14 terms
// reach below 2^-53.
double portable_log(double x) {
  int exponent = 0;
  double mantissa = std::frexp(x, &exponent);  // x = mantissa 2^exponent, mantissa in [0.5, 1)
  if (mantissa < kSqrtHalf) {
    mantissa *= 2.0;
    exponent -= 1;
  }
  const double s = (mantissa - 1.0) / (mantissa + 1.0);
  const double s2 = s * s;
  double series = 0.0;
  for (int n = 27; n >= 1; n -= 2) series = 1.0 / n + s2 * series;
  return exponent * kLn2 + 2.0 * s * series;
}

namespace {

// Taylor series of sin and cos on [0, pi/2): 15 terms each bring the last term
// below 2^-60.
void sin_cos_quarter(double r, double& sine, double& cosine) {
  const double r2 = r * r;
  double sin_series = 0.0;
  double cos_series = 0.0;
  for (int n = 15; n >= 1; --n) {
    sin_series = 1.0 - r2 * sin_series / ((2.0 * n) * (2.0 * n + 1.0));
    cos_series = 1.0 - r2 * cos_series / ((2.0 * n - 1.0) * (2.0 * n));
  }
  sine = r * sin_series;
  cosine = cos_series;
}

// Splits x in [-2pi, 2pi] into quadrant n (0..3) and remainder r in [0, pi/2).
void sin_cos(double x, double& sine, double& cosine) {
  double quarter_turns = x / kHalfPi;
  double quadrant = std::floor(quarter_turns);
  double r = (quarter_turns - quadrant) * kHalfPi;
  int n = static_cast<int>(quadrant) % 4;
  if (n < 0) n += 4;
  double s = 0.0;
  double c = 0.0;
  sin_cos_quarter(r, s, c);
  switch (n) {
    case 0:
      sine = s;
      cosine = c;
      break;
    case 1:
      sine = c;
      cosine = -s;
      break;
    case 2:
      sine = -s;
      cosine = -c;
      break;
    default:
      sine = -c;
      cosine = s;
      break;
  }
}

}  // namespace

double portable_cos(double x) {
  double s = 0.0;
  double c = 0.0;
  sin_cos(x, s, c);
  return c;
}

double portable_sin(double x) {
  double s = 0.0;
  double c = 0.0;
  sin_cos(x, s, c);
  return s;
}

}  // namespace deltaproof

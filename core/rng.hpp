// core/rng.hpp — a portable random number generator whose streams are
// bit-identical on every compiler and standard library: xoshiro256** seeded by
// splitmix64, uniform doubles from the top 53 bits, and normals from our own
// Box-Muller whose log/cos are built from +, -, *, / and sqrt only (IEEE-exact
// operations), because std::normal_distribution and libm differ between
// platforms.
#pragma once

#include <array>
#include <cstdint>

namespace deltaproof {

std::uint64_t splitmix64_next(std::uint64_t& state);

class Rng {
 public:
  // `stream` separates independent streams of one seed (one per tensor).
  explicit Rng(std::uint64_t seed, std::uint64_t stream = 0);
  // A generator in a given xoshiro256** state (for checks against the reference).
  static Rng from_state(const std::array<std::uint64_t, 4>& state);

  std::uint64_t next_u64();              // xoshiro256**
  double uniform01();                    // [0, 1), multiples of 2^-53
  double uniform(double lo, double hi);  // [lo, hi)
  double normal();                       // standard normal, Box-Muller

 private:
  std::array<std::uint64_t, 4> state_{};
  bool has_spare_normal_ = false;
  double spare_normal_ = 0.0;
};

// The portable transcendental functions behind normal(); exposed for tests.
double portable_log(double x);  // x > 0
double portable_cos(double x);  // |x| <= 2 pi
double portable_sin(double x);  // |x| <= 2 pi

}  // namespace deltaproof

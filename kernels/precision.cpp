// kernels/precision.cpp — see precision.hpp.
#include "kernels/precision.hpp"

#include <cmath>

#include "core/names.hpp"

namespace deltaproof::kernels {

namespace {
constexpr std::pair<Precision, std::string_view> kPrecisionNames[] = {
    {Precision::f32, "f32"},
    {Precision::tf32, "tf32"},
    {Precision::bf16, "bf16"},
};
constexpr std::pair<Rounding, std::string_view> kRoundingNames[] = {
    {Rounding::nearest_even, "nearest-even"},
    {Rounding::toward_zero, "toward-zero"},
    {Rounding::stochastic, "stochastic"},
};
}  // namespace

std::string_view precision_name(Precision p) { return name_of(kPrecisionNames, p); }
std::optional<Precision> parse_precision(std::string_view name) {
  return find_value(kPrecisionNames, name);
}

double unit_roundoff(Precision p) {
  switch (p) {
    case Precision::tf32:
      return std::ldexp(1.0, -11);
    case Precision::bf16:
      return std::ldexp(1.0, -8);
    default:
      return std::ldexp(1.0, -24);
  }
}

std::string_view rounding_name(Rounding r) { return name_of(kRoundingNames, r); }

int dropped_bits(Precision p) {
  switch (p) {
    case Precision::tf32:
      return kTf32DroppedBits;
    case Precision::bf16:
      return kBf16DroppedBits;
    default:
      return 0;
  }
}

bool PrecisionContract::rounds_anything() const {
  return takes_operands() || takes_intermediates() || takes_outputs();
}

float round_float(float x, Precision to, Rounding rule, std::uint32_t random_bits) {
  return round_dropping(x, dropped_bits(to), rule, random_bits);
}

Rounder::Rounder(const PrecisionContract& contract, std::uint64_t stream)
    : contract_(contract), state_(contract.seed * 0x9E3779B97F4A7C15ull ^ (stream + 1)) {}

// splitmix64: a counter-based stream, the same on every machine
std::uint32_t Rounder::next_random() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<std::uint32_t>((z ^ (z >> 31)) >> 32);
}

float Rounder::round(float x, Precision to) {
  if (to == Precision::f32) return x;
  const std::uint32_t bits = contract_.rounding == Rounding::stochastic ? next_random() : 0u;
  return round_float(x, to, contract_.rounding, bits);
}

}  // namespace deltaproof::kernels

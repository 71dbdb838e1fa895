// kernels/precision.hpp — precision classes and their contracts
// (docs/PRECISION.md): where a kernel of a class may round, and an emulation
// of that rounding for the CPU chunked twin, which then evaluates a fixture
// as a kernel of the class would: the same-precision baseline.
//
// A contract names three rounding points; a class allows a subset of them:
//   operands       the two operands of every matrix product (f32 accumulation)
//   intermediates  what a chunked kernel stores between its stages: the WY
//                  factors Ut, Wt, U, the per-chunk states S0 and dS
//   outputs        o, ht and every gradient, as written
// f32 allows none; tf32 allows operands (rounded to TF32: 10 mantissa bits);
// bf16 allows all three (rounded to bf16: 7 mantissa bits).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/round_bits.hpp"

namespace deltaproof::kernels {

enum class Precision { f32, tf32, bf16 };
std::string_view precision_name(Precision p);
std::optional<Precision> parse_precision(std::string_view name);
// The unit roundoff of a class's narrowest type: 2^-24, 2^-11, 2^-8.
double unit_roundoff(Precision p);
// The low mantissa bits of an f32 the class's narrowest type drops: 0, 13, 16.
int dropped_bits(Precision p);

// How a value is rounded at a rounding point: Rounding, in round_bits.hpp.
std::string_view rounding_name(Rounding r);

struct PrecisionContract {
  Precision precision = Precision::f32;
  Rounding rounding = Rounding::nearest_even;
  std::uint64_t seed = 0;  // the stochastic stream
  // Which of the class's allowed points this evaluation takes (a point the
  // class does not allow is never taken, whatever these say).
  bool operands = true, intermediates = true, outputs = true;
  bool rounds_anything() const;
  bool takes_operands() const { return operands && precision != Precision::f32; }
  bool takes_intermediates() const { return intermediates && precision == Precision::bf16; }
  bool takes_outputs() const { return outputs && precision == Precision::bf16; }
};

// Rounds f32 values to a class's type, kept in f32. One Rounder per
// independent task (one per head): its stochastic stream is (seed, stream).
class Rounder {
 public:
  Rounder() = default;  // exact: rounds nothing
  Rounder(const PrecisionContract& contract, std::uint64_t stream);
  bool operands() const { return contract_.takes_operands(); }
  bool intermediates() const { return contract_.takes_intermediates(); }
  bool outputs() const { return contract_.takes_outputs(); }
  // x rounded to `to` (tf32 or bf16; f32 returns x) by the contract's rule.
  float round(float x, Precision to);
  // x rounded at a point of the contract: an operand, an intermediate, an output.
  float operand(float x) { return operands() ? round(x, contract_.precision) : x; }
  float intermediate(float x) { return intermediates() ? round(x, Precision::bf16) : x; }
  float output(float x) { return outputs() ? round(x, Precision::bf16) : x; }

 private:
  std::uint32_t next_random();
  PrecisionContract contract_;
  std::uint64_t state_ = 0;
};

// Element-wise rounding of a float to bf16 / tf32 by a rule, kept in f32.
float round_float(float x, Precision to, Rounding rule, std::uint32_t random_bits);

}  // namespace deltaproof::kernels

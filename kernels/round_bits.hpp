// kernels/round_bits.hpp — the one rounding of an f32 to a narrower type
// (bf16, TF32), the result kept in f32: host and device code alike
// (kernels/precision.cpp's Rounder and the CUDA kernels' contract points).
// Plain C++ that nvcc compiles for the device too.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#define DP_HOST_DEVICE __host__ __device__
#else
#define DP_HOST_DEVICE
#endif

namespace deltaproof::kernels {

// How a value is rounded at a rounding point. toward_zero is what Hopper's
// tensor cores do to an f32 register read as TF32 (the low 13 bits are
// ignored); stochastic rounds up with probability equal to the dropped
// fraction, from a counter-based stream (reproducible bit for bit).
enum class Rounding { nearest_even, toward_zero, stochastic };

// The mantissa bits of an f32 that a narrower type drops: bf16 keeps the top
// 16 bits (7 mantissa bits), TF32 the top 19 (10 mantissa bits).
inline constexpr int kBf16DroppedBits = 16;
inline constexpr int kTf32DroppedBits = 13;

DP_HOST_DEVICE inline std::uint32_t float_bits(float x) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(x);
#else
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
#endif
}

DP_HOST_DEVICE inline float bits_float(std::uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
#endif
}

// x with its low `dropped` bits rounded away by `rule` (0 dropped: x itself);
// inf and NaN pass unchanged. random_bits feed the stochastic rule only. A
// carry out of the mantissa moves the exponent up, as it should; an overflow
// to inf is what the narrow type would do too.
DP_HOST_DEVICE inline float round_dropping(float x, int dropped, Rounding rule,
                                           std::uint32_t random_bits = 0u) {
  if (dropped == 0) return x;
  std::uint32_t bits = float_bits(x);
  if ((bits & 0x7F800000u) == 0x7F800000u) return x;  // inf or NaN
  const std::uint32_t low_mask = (1u << dropped) - 1u;
  if (rule == Rounding::nearest_even)
    bits += (low_mask >> 1) + ((bits >> dropped) & 1u);
  else if (rule == Rounding::stochastic)
    bits += random_bits & low_mask;
  return bits_float(bits & ~low_mask);
}

}  // namespace deltaproof::kernels

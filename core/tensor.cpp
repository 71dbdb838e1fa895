// core/tensor.cpp — dtype tables, round-to-nearest-even narrowing, and the
// little-endian byte codecs behind Tensor.
//
// Rounding is done by one routine, round_to_format(), working on the double
// directly: narrowing a double to BF16 through F32 would round twice and miss
// RNE on ties created by the first rounding. The routine uses only exact
// operations (frexp, ldexp, floor, comparisons), so its result does not depend
// on the floating-point environment's rounding mode.
#include "core/tensor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/error.hpp"
#include "core/names.hpp"
#include "core/sha256.hpp"

namespace deltaproof {
namespace {

// A binary floating-point format: `precision` significant bits (the implicit
// leading bit included), normal exponents min_exponent..max_exponent, gradual
// underflow below min_exponent.
struct BinaryFormat {
  int precision;
  int min_exponent;
  int max_exponent;
};
constexpr BinaryFormat kF32Format{24, -126, 127};
constexpr BinaryFormat kF16Format{11, -14, 15};
constexpr BinaryFormat kBf16Format{8, -126, 127};

// Rounds x to `format` with round-to-nearest-even; the result is the exact
// double the narrow value represents. NaN stays NaN, infinities and zeros keep
// their sign, and magnitudes that round past the largest finite value become
// infinity (IEEE 754 section 7.4).
double round_to_format(double x, BinaryFormat format) {
  if (std::isnan(x)) return std::copysign(std::numeric_limits<double>::quiet_NaN(), x);
  if (std::isinf(x) || x == 0.0) return x;
  const double magnitude = std::fabs(x);
  int frexp_exponent = 0;
  std::frexp(magnitude, &frexp_exponent);  // magnitude in [2^(frexp_exponent-1), 2^frexp_exponent)
  // Below the normal range the spacing stays that of the smallest binade.
  const int exponent = std::max(frexp_exponent - 1, format.min_exponent);
  const double infinity = std::copysign(std::numeric_limits<double>::infinity(), x);
  if (exponent > format.max_exponent) return infinity;
  // The value of one unit in the last place; scaling by it is exact.
  const int ulp_exponent = exponent - (format.precision - 1);
  const double scaled = std::ldexp(magnitude, -ulp_exponent);  // < 2^precision
  double rounded = std::floor(scaled);
  const double remainder = scaled - rounded;
  if (remainder > 0.5 || (remainder == 0.5 && std::fmod(rounded, 2.0) != 0.0)) rounded += 1.0;
  const double result = std::ldexp(rounded, ulp_exponent);
  if (result >= std::ldexp(1.0, format.max_exponent + 1)) return infinity;
  return std::copysign(result, x);
}

template <typename UInt>
void store_little_endian(UInt value, std::byte* out) {
  for (std::size_t i = 0; i < sizeof(UInt); ++i) {
    out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
  }
}

template <typename UInt>
UInt load_little_endian(const std::byte* in) {
  UInt value = 0;
  for (std::size_t i = 0; i < sizeof(UInt); ++i) {
    value |= static_cast<UInt>(std::to_integer<unsigned>(in[i])) << (8 * i);
  }
  return value;
}

// The encoders take a value already rounded to their format, so every
// conversion below is exact. NaNs are stored as the canonical quiet NaN (with
// the input's sign) so that equal inputs give equal bytes and hashes.
std::uint32_t encode_f32(double rounded) {
  if (std::isnan(rounded)) return std::signbit(rounded) ? 0xffc00000u : 0x7fc00000u;
  return std::bit_cast<std::uint32_t>(static_cast<float>(rounded));
}

std::uint16_t encode_bf16(double rounded) {
  if (std::isnan(rounded)) return std::signbit(rounded) ? 0xffc0 : 0x7fc0;
  // A BF16 value is an F32 value whose low 16 bits are zero.
  return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(static_cast<float>(rounded)) >>
                                    16);
}

std::uint16_t encode_f16(double rounded) {
  const std::uint16_t sign = std::signbit(rounded) ? 0x8000 : 0;
  if (std::isnan(rounded)) return sign | 0x7e00;
  if (std::isinf(rounded)) return sign | 0x7c00;
  const double magnitude = std::fabs(rounded);
  if (magnitude == 0.0) return sign;
  int frexp_exponent = 0;
  std::frexp(magnitude, &frexp_exponent);
  const int exponent = frexp_exponent - 1;
  if (exponent < kF16Format.min_exponent) {
    // Subnormal: magnitude = fraction * 2^-24 with fraction < 1024.
    return sign | static_cast<std::uint16_t>(std::ldexp(magnitude, 24));
  }
  // Normal: magnitude = significand * 2^(exponent - 10), significand in [1024, 2048).
  const auto significand = static_cast<std::uint16_t>(std::ldexp(magnitude, 10 - exponent));
  return sign | static_cast<std::uint16_t>((exponent + 15) << 10) |
         static_cast<std::uint16_t>(significand - 1024);
}

double decode_f32(std::uint32_t bits) { return std::bit_cast<float>(bits); }

double decode_bf16(std::uint16_t bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
}

double decode_f16(std::uint16_t bits) {
  const double sign = (bits & 0x8000) ? -1.0 : 1.0;
  const int exponent_field = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  if (exponent_field == 0x1f) {
    return fraction != 0 ? std::copysign(std::numeric_limits<double>::quiet_NaN(), sign)
                         : sign * std::numeric_limits<double>::infinity();
  }
  if (exponent_field == 0) return sign * std::ldexp(fraction, -24);
  return sign * std::ldexp(fraction + 1024, exponent_field - 25);
}

void store_value(DType dtype, double value, std::byte* out) {
  switch (dtype) {
    case DType::F64:
      store_little_endian(std::bit_cast<std::uint64_t>(value), out);
      return;
    case DType::F32:
      store_little_endian(encode_f32(round_to_f32(value)), out);
      return;
    case DType::F16:
      store_little_endian(encode_f16(round_to_f16(value)), out);
      return;
    case DType::BF16:
      store_little_endian(encode_bf16(round_to_bf16(value)), out);
      return;
    case DType::I64:
      if (!(std::fabs(value) <= 0x1p53) || std::nearbyint(value) != value)
        throw InputError(fmt::format("{} is not an integer an I64 tensor can hold exactly", value));
      store_little_endian(static_cast<std::uint64_t>(static_cast<std::int64_t>(value)), out);
      return;
  }
  throw std::invalid_argument("store_value: unknown DType");
}

double load_value(DType dtype, const std::byte* in) {
  switch (dtype) {
    case DType::F64:
      return std::bit_cast<double>(load_little_endian<std::uint64_t>(in));
    case DType::F32:
      return decode_f32(load_little_endian<std::uint32_t>(in));
    case DType::F16:
      return decode_f16(load_little_endian<std::uint16_t>(in));
    case DType::BF16:
      return decode_bf16(load_little_endian<std::uint16_t>(in));
    case DType::I64:
      return static_cast<double>(static_cast<std::int64_t>(load_little_endian<std::uint64_t>(in)));
  }
  throw std::invalid_argument("load_value: unknown DType");
}

std::size_t byte_count(DType dtype, const Shape& shape) {
  const std::int64_t numel = shape_numel(shape);
  const auto size = static_cast<std::uint64_t>(dtype_size(dtype));
  if (static_cast<std::uint64_t>(numel) > std::numeric_limits<std::size_t>::max() / size) {
    throw InputError(fmt::format("a {} tensor of shape {} is too large to hold in memory",
                                 dtype_name(dtype), shape_string(shape)));
  }
  return static_cast<std::size_t>(numel) * static_cast<std::size_t>(size);
}

}  // namespace

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
      return 4;
    case DType::F16:
    case DType::BF16:
      return 2;
  }
  throw std::invalid_argument("dtype_size: unknown DType");
}

namespace {
constexpr std::pair<DType, std::string_view> kDtypeNames[] = {
    {DType::F64, "F64"},   {DType::F32, "F32"}, {DType::F16, "F16"},
    {DType::BF16, "BF16"}, {DType::I64, "I64"},
};
}  // namespace

std::string_view dtype_name(DType dtype) {
  if (const std::string_view name = name_of(kDtypeNames, dtype); name != "?") return name;
  throw std::invalid_argument("dtype_name: unknown DType");
}

DType parse_dtype(std::string_view name, std::string_view context) {
  if (const auto dtype = find_value(kDtypeNames, name)) return *dtype;
  throw FormatError(fmt::format(
      "{}: unknown dtype '{}'; deltaproof reads F64, F32, F16, BF16 and I64", context, name));
}

bool is_floating(DType dtype) { return dtype != DType::I64; }

std::int64_t shape_numel(const Shape& shape) {
  // A zero extent makes the product zero whatever the other extents are.
  for (std::int64_t extent : shape) {
    if (extent < 0) {
      throw InputError(fmt::format("shape {} has a negative extent", shape_string(shape)));
    }
    if (extent == 0) return 0;
  }
  std::int64_t numel = 1;
  for (std::int64_t extent : shape) {
    if (__builtin_mul_overflow(numel, extent, &numel)) {
      throw InputError(fmt::format("shape {} has more elements than a 64-bit count can hold",
                                   shape_string(shape)));
    }
  }
  return numel;
}

std::string shape_string(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

double round_to_f32(double x) { return round_to_format(x, kF32Format); }
double round_to_bf16(double x) { return round_to_format(x, kBf16Format); }
double round_to_f16(double x) { return round_to_format(x, kF16Format); }

double round_to_dtype(double x, DType dtype) {
  switch (dtype) {
    case DType::F64:
      return x;
    case DType::F32:
      return round_to_f32(x);
    case DType::F16:
      return round_to_f16(x);
    case DType::BF16:
      return round_to_bf16(x);
    case DType::I64:
      return std::nearbyint(x);
  }
  throw std::invalid_argument("round_to_dtype: unknown DType");
}

Tensor::Tensor(DType dtype, Shape shape, std::vector<std::byte> bytes)
    : dtype_(dtype), shape_(std::move(shape)), bytes_(std::move(bytes)) {
  const std::size_t expected = byte_count(dtype_, shape_);
  if (bytes_.size() != expected) {
    throw InputError(fmt::format("a {} tensor of shape {} needs {} bytes but {} were given",
                                 dtype_name(dtype_), shape_string(shape_), expected,
                                 bytes_.size()));
  }
}

Tensor Tensor::from_f64(DType dtype, Shape shape, std::span<const double> values) {
  const std::int64_t numel = shape_numel(shape);
  if (static_cast<std::uint64_t>(numel) != values.size()) {
    throw InputError(fmt::format("a tensor of shape {} holds {} values but {} were given",
                                 shape_string(shape), numel, values.size()));
  }
  std::vector<std::byte> bytes(byte_count(dtype, shape));
  const std::size_t size = dtype_size(dtype);
  for (std::size_t i = 0; i < values.size(); ++i) store_value(dtype, values[i], &bytes[i * size]);
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  // +0.0 is all-zero bytes in every dtype.
  std::vector<std::byte> bytes(byte_count(dtype, shape));
  return Tensor(dtype, std::move(shape), std::move(bytes));
}

Tensor Tensor::from_i64(Shape shape, std::span<const std::int64_t> values) {
  if (static_cast<std::uint64_t>(shape_numel(shape)) != values.size()) {
    throw InputError(fmt::format("a tensor of shape {} holds {} values but {} were given",
                                 shape_string(shape), shape_numel(shape), values.size()));
  }
  std::vector<std::byte> bytes(byte_count(DType::I64, shape));
  for (std::size_t i = 0; i < values.size(); ++i)
    store_little_endian(static_cast<std::uint64_t>(values[i]), &bytes[i * 8]);
  return Tensor(DType::I64, std::move(shape), std::move(bytes));
}

std::vector<std::int64_t> Tensor::to_i64() const {
  if (dtype_ != DType::I64)
    throw InputError(fmt::format("a {} tensor was read as I64", dtype_name(dtype_)));
  std::vector<std::int64_t> values(bytes_.size() / 8);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::int64_t>(load_little_endian<std::uint64_t>(&bytes_[i * 8]));
  return values;
}

std::vector<double> Tensor::to_f64() const {
  const std::size_t size = dtype_size(dtype_);
  std::vector<double> values(bytes_.size() / size);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = load_value(dtype_, &bytes_[i * size]);
  return values;
}

double Tensor::at(std::int64_t flat_index) const {
  const std::int64_t count = numel();
  if (flat_index < 0 || flat_index >= count) {
    throw std::out_of_range(
        fmt::format("Tensor::at: index {} is outside a tensor of {} elements", flat_index, count));
  }
  return load_value(dtype_, &bytes_[static_cast<std::size_t>(flat_index) * dtype_size(dtype_)]);
}

std::string Tensor::sha256() const { return sha256_hex(bytes_); }

}  // namespace deltaproof

// tests/core/tensor_test.cpp — dtype tables, round-to-nearest-even narrowing
// (golden cases, exhaustive 16-bit round trips, random cross-checks against
// independent references), byte layout and Tensor's invariants.
#include "core/tensor.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "core/sha256.hpp"

namespace deltaproof {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double pow2(int exponent) { return std::ldexp(1.0, exponent); }

// Exact comparison that also tells -0 from +0.
void expect_same_double(double actual, double expected, const char* what) {
  EXPECT_EQ(std::bit_cast<std::uint64_t>(actual), std::bit_cast<std::uint64_t>(expected))
      << what << ": expected " << expected << " (sign " << std::signbit(expected) << "), got "
      << actual << " (sign " << std::signbit(actual) << ")";
}

// The raw little-endian bytes of one element stored as `dtype`.
std::vector<std::uint8_t> stored_bytes(DType dtype, double value) {
  const Tensor tensor = Tensor::from_f64(dtype, {1}, std::vector<double>{value});
  std::vector<std::uint8_t> bytes;
  for (std::byte b : tensor.bytes()) bytes.push_back(std::to_integer<std::uint8_t>(b));
  return bytes;
}

std::uint16_t stored_u16(DType dtype, double value) {
  const std::vector<std::uint8_t> bytes = stored_bytes(dtype, value);
  return static_cast<std::uint16_t>(bytes[0] | (bytes[1] << 8));
}

Tensor tensor_from_u16(DType dtype, std::uint16_t bits) {
  return Tensor(dtype, {1},
                {static_cast<std::byte>(bits & 0xff), static_cast<std::byte>(bits >> 8)});
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    EXPECT_EQ(parse_dtype(dtype_name(dtype), "ctx"), dtype);
  }
}

TEST(DType, UnknownNameIsFormatErrorNamingContext) {
  try {
    parse_dtype("U8", "weights.safetensors: tensor 'q'");
    FAIL() << "parse_dtype accepted U8";
  } catch (const FormatError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("weights.safetensors: tensor 'q'"), std::string::npos) << message;
    EXPECT_NE(message.find("'U8'"), std::string::npos) << message;
  }
  EXPECT_THROW(parse_dtype("f64", "ctx"), FormatError);  // names are case-sensitive
  EXPECT_THROW(parse_dtype("", "ctx"), FormatError);
}

TEST(Shape, NumelAndString) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({1, 32, 2, 8}), 512);
  EXPECT_EQ(shape_numel({3, 0, 5}), 0);
  EXPECT_EQ(shape_numel({0, std::numeric_limits<std::int64_t>::max(), 4}), 0);
  EXPECT_EQ(shape_string({1, 32, 2, 8}), "[1, 32, 2, 8]");
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_THROW(shape_numel({2, -1}), InputError);
  EXPECT_THROW(shape_numel({1ll << 32, 1ll << 32}), InputError);
}

// --- F32 --------------------------------------------------------------------

TEST(RoundToF32, GoldenCases) {
  expect_same_double(round_to_f32(1.0), 1.0, "one");
  expect_same_double(round_to_f32(1.0 + pow2(-24)), 1.0, "tie rounds to even (down)");
  expect_same_double(round_to_f32(1.0 + 3 * pow2(-24)), 1.0 + pow2(-22), "tie rounds to even (up)");
  expect_same_double(round_to_f32(1.0 + pow2(-24) + pow2(-52)), 1.0 + pow2(-23), "above tie");
  expect_same_double(round_to_f32(0.1), static_cast<double>(0.1f), "0.1");
  expect_same_double(round_to_f32(FLT_MAX), FLT_MAX, "largest finite");
  expect_same_double(round_to_f32((2.0 - pow2(-24)) * pow2(127)), kInf, "overflow tie -> inf");
  expect_same_double(round_to_f32((2.0 - pow2(-24) - pow2(-30)) * pow2(127)), FLT_MAX,
                     "below overflow tie");
  expect_same_double(round_to_f32(-1e39), -kInf, "negative overflow");
  expect_same_double(round_to_f32(pow2(-149)), pow2(-149), "smallest subnormal");
  expect_same_double(round_to_f32(pow2(-150)), 0.0, "half the smallest subnormal -> 0");
  expect_same_double(round_to_f32(3 * pow2(-150)), pow2(-148), "subnormal tie to even");
  expect_same_double(round_to_f32(-pow2(-151)), -0.0, "negative underflow keeps sign");
  expect_same_double(round_to_f32(-0.0), -0.0, "negative zero");
  expect_same_double(round_to_f32(kInf), kInf, "inf");
  EXPECT_TRUE(std::isnan(round_to_f32(kNaN)));
}

TEST(RoundToF32, MatchesHardwareConversionOnRandomDoubles) {
  std::mt19937_64 generator(12345);
  std::uniform_int_distribution<int> exponent(-160, 135);
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  for (int i = 0; i < 200000; ++i) {
    const double x = (i % 2 ? -1.0 : 1.0) * std::ldexp(significand(generator), exponent(generator));
    const double expected = static_cast<double>(static_cast<float>(x));
    ASSERT_EQ(round_to_f32(x), expected) << "x = " << x;
  }
}

TEST(StoreF32, LittleEndianBytes) {
  EXPECT_EQ(stored_bytes(DType::F32, 1.0), (std::vector<std::uint8_t>{0x00, 0x00, 0x80, 0x3f}));
  EXPECT_EQ(stored_bytes(DType::F32, -2.0), (std::vector<std::uint8_t>{0x00, 0x00, 0x00, 0xc0}));
  EXPECT_EQ(stored_bytes(DType::F32, kNaN), (std::vector<std::uint8_t>{0x00, 0x00, 0xc0, 0x7f}));
  EXPECT_EQ(stored_bytes(DType::F32, 1e300), (std::vector<std::uint8_t>{0x00, 0x00, 0x80, 0x7f}));
}

// --- BF16 -------------------------------------------------------------------

TEST(RoundToBf16, GoldenCases) {
  const double bf16_max = (2.0 - pow2(-7)) * pow2(127);
  expect_same_double(round_to_bf16(1.0), 1.0, "one");
  expect_same_double(round_to_bf16(1.0 + pow2(-8)), 1.0, "tie rounds to even (down)");
  expect_same_double(round_to_bf16(1.0 + 3 * pow2(-8)), 1.0 + pow2(-6), "tie rounds to even (up)");
  // Through F32 this would first round to 1 + 2^-8 (a tie), then to 1.0.
  expect_same_double(round_to_bf16(1.0 + pow2(-8) + pow2(-30)), 1.0 + pow2(-7),
                     "no double rounding");
  expect_same_double(round_to_bf16(-(1.0 + pow2(-8) + pow2(-30))), -(1.0 + pow2(-7)),
                     "no double rounding, negative");
  expect_same_double(round_to_bf16(3.140625), 3.140625, "exact value");
  expect_same_double(round_to_bf16(bf16_max), bf16_max, "largest finite");
  expect_same_double(round_to_bf16((2.0 - pow2(-8)) * pow2(127)), kInf, "overflow tie -> inf");
  expect_same_double(round_to_bf16((2.0 - pow2(-8) - pow2(-20)) * pow2(127)), bf16_max,
                     "below overflow tie");
  expect_same_double(round_to_bf16(FLT_MAX), kInf, "FLT_MAX overflows bf16");
  expect_same_double(round_to_bf16(-1e39), -kInf, "negative overflow");
  expect_same_double(round_to_bf16(pow2(-126)), pow2(-126), "smallest normal");
  expect_same_double(round_to_bf16(pow2(-133)), pow2(-133), "smallest subnormal");
  expect_same_double(round_to_bf16(pow2(-134)), 0.0, "half the smallest subnormal -> 0");
  expect_same_double(round_to_bf16(1.5 * pow2(-134)), pow2(-133), "above half -> smallest");
  expect_same_double(round_to_bf16(3 * pow2(-134)), pow2(-132), "subnormal tie to even");
  expect_same_double(round_to_bf16(-pow2(-140)), -0.0, "negative underflow keeps sign");
  expect_same_double(round_to_bf16(pow2(-1074)), 0.0, "double subnormal");
  expect_same_double(round_to_bf16(-kInf), -kInf, "-inf");
  EXPECT_TRUE(std::isnan(round_to_bf16(kNaN)));
}

// An independent reference for normal-range BF16: integer RNE on the double's
// 53-bit significand, keeping the top 8 bits.
double reference_bf16_normal_range(double x) {
  const std::uint64_t bits = std::bit_cast<std::uint64_t>(x);
  const int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  const std::uint64_t significand = (bits & ((1ull << 52) - 1)) | (1ull << 52);
  std::uint64_t kept = significand >> 45;
  const std::uint64_t dropped = significand & ((1ull << 45) - 1);
  const std::uint64_t half = 1ull << 44;
  if (dropped > half || (dropped == half && (kept & 1))) ++kept;
  const double magnitude = std::ldexp(static_cast<double>(kept), exponent - 7);
  const double rounded = magnitude >= pow2(128) ? kInf : magnitude;
  return (bits >> 63) ? -rounded : rounded;
}

TEST(RoundToBf16, MatchesIntegerReferenceOnRandomDoubles) {
  std::mt19937_64 generator(777);
  std::uniform_int_distribution<int> exponent(-126, 127);
  std::uniform_int_distribution<std::uint64_t> fraction(0, (1ull << 52) - 1);
  for (int i = 0; i < 200000; ++i) {
    std::uint64_t low_bits = fraction(generator);
    // Every fourth case is an exact tie or one ulp either side of it.
    if (i % 4 == 0) low_bits = (low_bits & ~((1ull << 45) - 1)) | (1ull << 44);
    if (i % 8 == 4) low_bits = (low_bits & ~((1ull << 45) - 1)) | ((1ull << 44) + 1);
    if (i % 8 == 6) low_bits = (low_bits & ~((1ull << 45) - 1)) | ((1ull << 44) - 1);
    const std::uint64_t bits = (static_cast<std::uint64_t>(i & 1) << 63) |
                               (static_cast<std::uint64_t>(exponent(generator) + 1023) << 52) |
                               low_bits;
    const double x = std::bit_cast<double>(bits);
    ASSERT_EQ(round_to_bf16(x), reference_bf16_normal_range(x)) << "x = " << x;
  }
}

TEST(StoreBf16, BitPatterns) {
  EXPECT_EQ(stored_bytes(DType::BF16, 1.0), (std::vector<std::uint8_t>{0x80, 0x3f}));
  EXPECT_EQ(stored_u16(DType::BF16, -2.0), 0xc000);
  EXPECT_EQ(stored_u16(DType::BF16, kInf), 0x7f80);
  EXPECT_EQ(stored_u16(DType::BF16, -1e39), 0xff80);
  EXPECT_EQ(stored_u16(DType::BF16, kNaN), 0x7fc0);
  EXPECT_EQ(stored_u16(DType::BF16, pow2(-133)), 0x0001);
  EXPECT_EQ(stored_u16(DType::BF16, -0.0), 0x8000);
  EXPECT_EQ(stored_u16(DType::BF16, 1.0 + pow2(-8) + pow2(-30)), 0x3f81);
}

// Every non-NaN BF16 pattern decodes to a double that encodes back to itself.
TEST(StoreBf16, ExhaustiveRoundTrip) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const double value = tensor_from_u16(DType::BF16, static_cast<std::uint16_t>(bits)).at(0);
    if (std::isnan(value)) {
      ASSERT_EQ(bits & 0x7f80, 0x7f80u);
      continue;
    }
    ASSERT_EQ(round_to_bf16(value), value) << "bits " << bits;
    ASSERT_EQ(stored_u16(DType::BF16, value), bits) << "bits " << bits;
  }
}

// --- F16 --------------------------------------------------------------------

TEST(RoundToF16, GoldenCases) {
  expect_same_double(round_to_f16(1.0), 1.0, "one");
  expect_same_double(round_to_f16(1.0 + pow2(-11)), 1.0, "tie rounds to even (down)");
  expect_same_double(round_to_f16(1.0 + 3 * pow2(-11)), 1.0 + pow2(-9), "tie rounds to even (up)");
  expect_same_double(round_to_f16(1.0 + pow2(-11) + pow2(-40)), 1.0 + pow2(-10), "above tie");
  expect_same_double(round_to_f16(0.1), 0.0999755859375, "0.1");
  expect_same_double(round_to_f16(65504.0), 65504.0, "largest finite");
  expect_same_double(round_to_f16(65519.99), 65504.0, "below overflow tie");
  expect_same_double(round_to_f16(65520.0), kInf, "overflow tie -> inf");
  expect_same_double(round_to_f16(-1e6), -kInf, "negative overflow");
  expect_same_double(round_to_f16(pow2(-14)), pow2(-14), "smallest normal");
  expect_same_double(round_to_f16(1023.5 * pow2(-24)), pow2(-14),
                     "subnormal tie rounds up to normal");
  expect_same_double(round_to_f16(1022.5 * pow2(-24)), 1022 * pow2(-24), "subnormal tie to even");
  expect_same_double(round_to_f16(pow2(-24)), pow2(-24), "smallest subnormal");
  expect_same_double(round_to_f16(pow2(-25)), 0.0, "half the smallest subnormal -> 0");
  expect_same_double(round_to_f16(1.5 * pow2(-25)), pow2(-24), "above half -> smallest");
  expect_same_double(round_to_f16(3 * pow2(-25)), pow2(-23), "tie between 1 and 2 ulps -> 2");
  expect_same_double(round_to_f16(-pow2(-30)), -0.0, "negative underflow keeps sign");
  expect_same_double(round_to_f16(kInf), kInf, "inf");
  EXPECT_TRUE(std::isnan(round_to_f16(kNaN)));
}

#ifdef __FLT16_MAX__
// GCC and Clang convert double to _Float16 in one correctly rounded step.
TEST(RoundToF16, MatchesCompilerFloat16OnRandomDoubles) {
  std::mt19937_64 generator(4242);
  std::uniform_int_distribution<int> exponent(-28, 17);
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  for (int i = 0; i < 200000; ++i) {
    double x = (i % 2 ? -1.0 : 1.0) * std::ldexp(significand(generator), exponent(generator));
    if (i % 3 == 0) x = static_cast<double>(static_cast<float>(x));  // fewer bits: more ties
    const double expected = static_cast<double>(static_cast<_Float16>(x));
    ASSERT_EQ(round_to_f16(x), expected) << "x = " << x;
  }
}
#endif

TEST(StoreF16, BitPatterns) {
  EXPECT_EQ(stored_bytes(DType::F16, 1.0), (std::vector<std::uint8_t>{0x00, 0x3c}));
  EXPECT_EQ(stored_u16(DType::F16, -2.0), 0xc000);
  EXPECT_EQ(stored_u16(DType::F16, 65504.0), 0x7bff);
  EXPECT_EQ(stored_u16(DType::F16, 1e9), 0x7c00);
  EXPECT_EQ(stored_u16(DType::F16, -kInf), 0xfc00);
  EXPECT_EQ(stored_u16(DType::F16, kNaN), 0x7e00);
  EXPECT_EQ(stored_u16(DType::F16, pow2(-24)), 0x0001);
  EXPECT_EQ(stored_u16(DType::F16, 1023 * pow2(-24)), 0x03ff);
  EXPECT_EQ(stored_u16(DType::F16, pow2(-14)), 0x0400);
  EXPECT_EQ(stored_u16(DType::F16, -0.0), 0x8000);
}

TEST(StoreF16, ExhaustiveRoundTrip) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const double value = tensor_from_u16(DType::F16, static_cast<std::uint16_t>(bits)).at(0);
    if (std::isnan(value)) {
      ASSERT_EQ(bits & 0x7c00, 0x7c00u);
      ASSERT_NE(bits & 0x03ff, 0u);
      continue;
    }
    ASSERT_EQ(round_to_f16(value), value) << "bits " << bits;
    ASSERT_EQ(stored_u16(DType::F16, value), bits) << "bits " << bits;
  }
}

// --- Tensor -----------------------------------------------------------------

TEST(Tensor, F64StoresExactBitsLittleEndian) {
  EXPECT_EQ(stored_bytes(DType::F64, 1.0),
            (std::vector<std::uint8_t>{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  const std::vector<double> values = {0.1, -0.0, pow2(-1074), -kInf, 1e308, 3.0};
  const Tensor tensor = Tensor::from_f64(DType::F64, {2, 3}, values);
  const std::vector<double> back = tensor.to_f64();
  ASSERT_EQ(back.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) expect_same_double(back[i], values[i], "f64");
}

TEST(Tensor, RoundTripOfRepresentableValuesIsExact) {
  const std::vector<double> values = {1.0, -0.5, 0.0, 3.140625, -1024.0, pow2(-14), kInf};
  for (DType dtype : {DType::F64, DType::F32, DType::F16, DType::BF16}) {
    const Tensor tensor = Tensor::from_f64(dtype, {7}, values);
    EXPECT_EQ(tensor.bytes().size(), 7 * dtype_size(dtype));
    EXPECT_EQ(tensor.to_f64(), values) << dtype_name(dtype);
    for (std::int64_t i = 0; i < 7; ++i) EXPECT_EQ(tensor.at(i), values[i]);
  }
}

TEST(Tensor, FromF64RoundsEachValue) {
  const std::vector<double> values = {0.1, 1.0 + pow2(-8) + pow2(-30), 70000.0};
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    const std::vector<double> stored = Tensor::from_f64(dtype, {3}, values).to_f64();
    for (std::size_t i = 0; i < values.size(); ++i) {
      EXPECT_EQ(stored[i], round_to_dtype(values[i], dtype)) << dtype_name(dtype) << " " << i;
    }
  }
  EXPECT_EQ(round_to_dtype(0.1, DType::F64), 0.1);
}

TEST(Tensor, ZerosAndEmptyShapes) {
  const Tensor zeros = Tensor::zeros(DType::BF16, {2, 2});
  EXPECT_EQ(zeros.to_f64(), (std::vector<double>{0, 0, 0, 0}));
  const Tensor empty = Tensor::zeros(DType::F32, {0, 5});
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.bytes().empty());
  const Tensor scalar = Tensor::from_f64(DType::F64, {}, std::vector<double>{2.5});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.at(0), 2.5);
}

TEST(Tensor, RejectsWrongByteAndValueCounts) {
  try {
    Tensor(DType::F32, {2, 3}, std::vector<std::byte>(20));
    FAIL() << "accepted 20 bytes for 6 F32 values";
  } catch (const InputError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("[2, 3]"), std::string::npos) << message;
    EXPECT_NE(message.find("24 bytes"), std::string::npos) << message;
  }
  EXPECT_THROW(Tensor::from_f64(DType::F64, {2}, std::vector<double>{1.0}), InputError);
  EXPECT_THROW(Tensor::zeros(DType::F64, {-1}), InputError);
  EXPECT_THROW(Tensor::zeros(DType::F64, {1ll << 62, 4}), InputError);
}

TEST(Tensor, AtChecksItsIndex) {
  const Tensor tensor = Tensor::from_f64(DType::F64, {2}, std::vector<double>{1.0, 2.0});
  EXPECT_THROW(tensor.at(2), std::out_of_range);
  EXPECT_THROW(tensor.at(-1), std::out_of_range);
}

TEST(Tensor, Sha256IsOfTheRawBytes) {
  const Tensor tensor = Tensor::from_f64(DType::F32, {2}, std::vector<double>{1.0, -2.0});
  EXPECT_EQ(tensor.sha256(), sha256_hex(tensor.bytes()));
  // Python: hashlib.sha256(np.array([1, -2], np.float32).tobytes()).hexdigest()
  EXPECT_EQ(tensor.sha256(), "ee4ac73c2bd27756ab82780f27c73a7bc4d3f0bb6acb37e008bc27eccd7e588b");
}

TEST(Tensor, EqualityComparesDtypeShapeAndBytes) {
  const std::vector<double> values = {1.0, 2.0};
  EXPECT_EQ(Tensor::from_f64(DType::F32, {2}, values), Tensor::from_f64(DType::F32, {2}, values));
  EXPECT_NE(Tensor::from_f64(DType::F32, {2}, values),
            Tensor::from_f64(DType::F32, {1, 2}, values));
  EXPECT_NE(Tensor::from_f64(DType::F16, {2}, values), Tensor::from_f64(DType::BF16, {2}, values));
}

}  // namespace
}  // namespace deltaproof

namespace deltaproof {
namespace {

TEST(TensorI64, HoldsIntegersExactlyAndRefusesWhatIsNotOne) {
  const std::vector<std::int64_t> offsets{0, 1, 7, (std::int64_t{1} << 40) + 3};
  const Tensor t = Tensor::from_i64({4}, offsets);
  EXPECT_EQ(t.dtype(), DType::I64);
  EXPECT_EQ(t.to_i64(), offsets);
  EXPECT_EQ(t.at(3), static_cast<double>((std::int64_t{1} << 40) + 3));
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(parse_dtype("I64", "x"), DType::I64);
  EXPECT_FALSE(is_floating(DType::I64));
  EXPECT_TRUE(is_floating(DType::BF16));
  EXPECT_EQ(Tensor::from_f64(DType::I64, {2}, std::vector<double>{3, -4}).to_i64(),
            (std::vector<std::int64_t>{3, -4}));
  EXPECT_THROW(Tensor::from_f64(DType::I64, {1}, std::vector<double>{0.5}), InputError);
  EXPECT_THROW(Tensor::from_f64(DType::F32, {1}, std::vector<double>{1}).to_i64(), InputError);
}

}  // namespace
}  // namespace deltaproof

// core/tensor.hpp — a dense, contiguous, row-major tensor of F64, F32, F16 or
// BF16 values (or I64 integers: a packed batch's cu_seqlens), stored as raw
// little-endian bytes exactly as safetensors holds them. Numerical code reads
// it through to_f64() and builds it through from_f64(), which rounds to the
// storage dtype (round-to-nearest-even); integers through from_i64/to_i64.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace deltaproof {

enum class DType { F64, F32, F16, BF16, I64 };

// F64, F32, F16 and BF16: what a fixture's and a candidate's numbers may be.
bool is_floating(DType dtype);

std::size_t dtype_size(DType dtype);
// The safetensors spelling: "F64", "F32", "F16", "BF16", "I64".
std::string_view dtype_name(DType dtype);
// Parses a safetensors dtype name; throws FormatError naming `context` on an
// unknown one.
DType parse_dtype(std::string_view name, std::string_view context);

using Shape = std::vector<std::int64_t>;
std::int64_t shape_numel(const Shape& shape);
std::string shape_string(const Shape& shape);  // "[1, 32, 2, 8]"

// Rounding of a double to the value set of a narrower dtype (RNE), returned as
// the exact double that the narrow value represents.
double round_to_f32(double x);
double round_to_bf16(double x);
double round_to_f16(double x);
double round_to_dtype(double x, DType dtype);

class Tensor {
 public:
  Tensor() = default;
  // Takes ownership of raw bytes; throws InputError if the byte count is not
  // numel * dtype_size.
  Tensor(DType dtype, Shape shape, std::vector<std::byte> bytes);

  // Rounds each value to `dtype` and stores it.
  static Tensor from_f64(DType dtype, Shape shape, std::span<const double> values);
  static Tensor zeros(DType dtype, Shape shape);
  static Tensor from_i64(Shape shape, std::span<const std::int64_t> values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  std::int64_t numel() const { return shape_numel(shape_); }
  std::span<const std::byte> bytes() const { return bytes_; }

  // Every element widened to double (exact for the four floating dtypes, and
  // for integers up to 2^53).
  std::vector<double> to_f64() const;
  // An I64 tensor's elements; throws InputError on another dtype.
  std::vector<std::int64_t> to_i64() const;
  double at(std::int64_t flat_index) const;

  // Lower-case hex SHA-256 of the raw bytes.
  std::string sha256() const;

  bool operator==(const Tensor& other) const = default;

 private:
  DType dtype_ = DType::F64;
  Shape shape_;
  std::vector<std::byte> bytes_;
};

}  // namespace deltaproof

// oracle/op.cpp — names, layouts and validation of ops, regimes and specs.
#include "oracle/op.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/names.hpp"
#include "core/op.hpp"

namespace deltaproof::oracle {

namespace {
constexpr std::pair<Regime, std::string_view> kRegimeNames[] = {
    {Regime::default_, "default"},
    {Regime::mild, "mild"},
    {Regime::stress, "stress"},
    {Regime::edge, "edge"},
};
}  // namespace

std::string_view regime_name(Regime regime) { return name_of(kRegimeNames, regime); }
std::optional<Regime> parse_regime(std::string_view name) { return find_value(kRegimeNames, name); }

double FixtureSpec::scale() const { return 1.0 / std::sqrt(static_cast<double>(K)); }

std::string FixtureSpec::describe() const {
  return fmt::format("{} B{} T{} H{} K{} V{} chunk{} {} {} seed{}", op_name(op), B, T, H, K, V,
                     chunk, regime_name(regime), dtype == DType::BF16 ? "bf16" : "f32", seed) +
         (zero_h0 ? " h0=0" : "") + (masked_do ? " dO-masked" : "") +
         (HV > 0 && HV != H ? fmt::format(" HV{}", HV) : "") +
         (packed() ? fmt::format(" cu_seqlens={}", fmt::join(cu_seqlens, ",")) : "");
}

void FixtureSpec::validate() const {
  auto require_range = [](const char* flag, long long value, long long lo, long long hi) {
    if (value < lo || value > hi)
      throw InputError(
          fmt::format("{} is {}, but it must be between {} and {}; pass {} N with N in "
                      "that range.",
                      flag, value, lo, hi, flag));
  };
  require_range("--B", B, 1, 64);
  require_range("--T", T, 1, 1 << 16);
  require_range("--H", H, 1, 256);
  require_range("--K", K, 1, 256);
  require_range("--V", V, 1, 256);
  if (!is_supported_chunk(chunk))
    throw InputError(
        fmt::format("--chunk is {}, but kernels use chunk sizes {}; pass one of those.", chunk,
                    chunk_sizes_text()));
  if (HV != 0 && (HV < H || HV % H != 0 || HV > 256))
    throw InputError(fmt::format(
        "--HV is {}, but the value heads must be a multiple of the {} key heads (--H), at most "
        "256; pass --HV {} or another multiple.",
        HV, H, 2 * H));
  if (packed()) {
    const std::string why = packing_problem(cu_seqlens, B, T);
    if (!why.empty())
      throw InputError(fmt::format("--cu-seqlens {}: {}.", fmt::join(cu_seqlens, ","), why));
  }
  if (dtype != DType::F32 && dtype != DType::BF16)
    throw InputError(
        fmt::format("--dtype {} is not an input dtype; pass f32 or bf16.", dtype_name(dtype)));
}

std::string packing_problem(const std::vector<std::int64_t>& cu_seqlens, int B, int T) {
  if (cu_seqlens.size() < 2)
    return fmt::format("it holds {} offsets; packed sequences need at least 2 (0 and T)",
                       cu_seqlens.size());
  if (B != 1) return fmt::format("packed sequences need batch size 1, not {}", B);
  if (cu_seqlens.front() != 0) return fmt::format("it must start at 0, not {}", cu_seqlens.front());
  for (std::size_t n = 1; n < cu_seqlens.size(); ++n)
    if (cu_seqlens[n] <= cu_seqlens[n - 1])
      return fmt::format(
          "it must increase strictly, but offset {} is {} after {} (a sequence of length {})", n,
          cu_seqlens[n], cu_seqlens[n - 1], cu_seqlens[n] - cu_seqlens[n - 1]);
  if (cu_seqlens.back() != T)
    return fmt::format("it must end at the {} tokens (T), not at {}", T, cu_seqlens.back());
  return "";
}

void refuse_packed_or_grouped(const FixtureSpec& spec) {
  if (spec.packed() || spec.group() > 1)
    throw InputError(fmt::format(
        "{}: packed sequences and grouped value heads are not computed by the GPU reference "
        "(gen --reference gpu-f64, --production) yet; gen computes them in quad "
        "(issue 14, docs/VARLEN.md).",
        spec.describe()));
}

Shape TensorLayout::shape(const FixtureSpec& spec) const {
  if (is_state) return {spec.states(), spec.value_heads(), spec.K, spec.V};
  if (width == 0) return {spec.B, spec.T, heads(spec)};
  return {spec.B, spec.T, heads(spec), width};
}

namespace {
// The op table's tensors of one role as layouts (core/op.hpp).
std::vector<TensorLayout> layouts_of(const FixtureSpec& spec, Role role) {
  std::vector<TensorLayout> layouts;
  for (const TensorInfo& t : op_tensors(spec.op))
    if (t.role == role)
      layouts.push_back({std::string(t.name), t.axis == Axis::state,
                         std::max(0, axis_width(t.axis, spec.K, spec.V)), on_key_head(t.name)});
  return layouts;
}
}  // namespace

std::vector<TensorLayout> input_layouts(const FixtureSpec& spec) {
  return layouts_of(spec, Role::input);
}

std::vector<TensorLayout> cotangent_layouts(const FixtureSpec& spec) {
  return layouts_of(spec, Role::cotangent);
}

std::vector<TensorLayout> output_layouts(const FixtureSpec& spec) {
  return layouts_of(spec, Role::output);
}

std::string gradient_name(std::string_view input_name) {
  std::string name = "d";
  name.append(input_name);
  return name;
}

}  // namespace deltaproof::oracle

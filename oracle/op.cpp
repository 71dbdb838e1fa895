// oracle/op.cpp — names, layouts and validation of ops, regimes and specs.
#include "oracle/op.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

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
constexpr std::pair<DType, std::string_view> kInputDtypeNames[] = {
    {DType::F32, "f32"},
    {DType::BF16, "bf16"},
};
}  // namespace

std::string_view regime_name(Regime regime) { return name_of(kRegimeNames, regime); }
std::optional<Regime> parse_regime(std::string_view name) { return find_value(kRegimeNames, name); }

std::string_view input_dtype_name(DType dtype) { return name_of(kInputDtypeNames, dtype); }
std::optional<DType> parse_input_dtype(std::string_view name) {
  return find_value(kInputDtypeNames, name);
}

double FixtureSpec::scale() const { return 1.0 / std::sqrt(static_cast<double>(K)); }

std::string FixtureSpec::describe() const {
  return fmt::format("{} B{} T{} H{} K{} V{} chunk{} {} {} seed{}", op_name(op), B, T, H, K, V,
                     chunk, regime_name(regime), input_dtype_name(dtype), seed) +
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

void to_json(nlohmann::json& j, const FixtureSpec& s) {
  j = {{"op", op_name(s.op)},
       {"B", s.B},
       {"T", s.T},
       {"H", s.H},
       {"K", s.K},
       {"V", s.V},
       {"chunk", s.chunk},
       {"regime", regime_name(s.regime)},
       {"dtype", input_dtype_name(s.dtype)},
       {"seed", s.seed},
       {"h0", s.h0_is_zero() ? "zero" : "drawn"},
       {"scale", s.scale()}};
  if (s.group() > 1) j["HV"] = s.HV;
  if (s.packed()) j["cu_seqlens"] = s.cu_seqlens;
  if (s.masked_do) j["do_mask"] = kDoMask;
}

void from_json(const nlohmann::json& j, FixtureSpec& s) {
  auto entry = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw InputError(fmt::format("spec {}: it has no '{}'.", j.dump(), key));
    return j.at(key);
  };
  auto name = [&](const char* key) {
    const nlohmann::json& v = entry(key);
    if (!v.is_string())
      throw InputError(fmt::format("spec {}: '{}' is {}, not a string.", j.dump(), key, v.dump()));
    return v.get<std::string>();
  };
  auto integer = [&](const char* key) {
    const nlohmann::json& v = entry(key);
    if (!v.is_number_integer())
      throw InputError(
          fmt::format("spec {}: '{}' is {}, not an integer.", j.dump(), key, v.dump()));
    return v.get<long long>();
  };
  s = FixtureSpec{};
  const auto op = parse_op(name("op"));
  if (!op)
    throw InputError(
        fmt::format("spec {}: 'op' is '{}', not gdn2, kda or gdn.", j.dump(), name("op")));
  s.op = *op;
  s.B = static_cast<int>(integer("B"));
  s.T = static_cast<int>(integer("T"));
  s.H = static_cast<int>(integer("H"));
  s.K = static_cast<int>(integer("K"));
  s.V = static_cast<int>(integer("V"));
  s.chunk = static_cast<int>(integer("chunk"));
  const auto regime = parse_regime(name("regime"));
  if (!regime)
    throw InputError(fmt::format("spec {}: 'regime' is '{}', not default, mild, stress or edge.",
                                 j.dump(), name("regime")));
  s.regime = *regime;
  const auto dtype = parse_input_dtype(name("dtype"));
  if (!dtype)
    throw InputError(
        fmt::format("spec {}: 'dtype' is '{}', not f32 or bf16.", j.dump(), name("dtype")));
  s.dtype = *dtype;
  s.seed = static_cast<std::uint64_t>(integer("seed"));
  const std::string h0 = name("h0");
  if (h0 != "zero" && h0 != "drawn")
    throw InputError(fmt::format("spec {}: 'h0' is '{}', not zero or drawn.", j.dump(), h0));
  s.zero_h0 = h0 == "zero" && s.regime != Regime::edge;
  if (j.contains("HV")) s.HV = static_cast<int>(integer("HV"));
  if (j.contains("cu_seqlens")) s.cu_seqlens = entry("cu_seqlens").get<std::vector<std::int64_t>>();
  if (j.contains("do_mask")) {
    if (name("do_mask") != kDoMask)
      throw InputError(fmt::format("spec {}: 'do_mask' is '{}'; the one mask is '{}'.", j.dump(),
                                   name("do_mask"), kDoMask));
    s.masked_do = true;
  }
}

std::map<std::string, std::string> spec_metadata(const FixtureSpec& s) {
  std::map<std::string, std::string> m;
  m["op"] = op_name(s.op);
  m["B"] = std::to_string(s.B);
  m["T"] = std::to_string(s.T);
  m["H"] = std::to_string(s.H);
  m["K"] = std::to_string(s.K);
  m["V"] = std::to_string(s.V);
  m["chunk"] = std::to_string(s.chunk);
  m["scale"] = fmt::format("{:.17g}", s.scale());
  m["regime"] = regime_name(s.regime);
  m["dtype"] = input_dtype_name(s.dtype);
  m["seed"] = std::to_string(s.seed);
  if (s.zero_h0) m["h0"] = "zero";          // absent: drawn (the files made before the option)
  if (s.masked_do) m["do_mask"] = kDoMask;  // absent: every dO row drawn
  if (s.group() > 1) m["HV"] = std::to_string(s.HV);    // absent: HV = H
  if (s.packed()) m["N"] = std::to_string(s.states());  // absent: dense; cu_seqlens holds them
  return m;
}

namespace {
const std::string& metadata_entry(const std::map<std::string, std::string>& metadata,
                                  const std::string& key, const std::string& source) {
  auto it = metadata.find(key);
  if (it == metadata.end())
    throw InputError(
        fmt::format("{}: the metadata has no '{}' entry, so the fixture's spec "
                    "cannot be read; regenerate it with deltaproof gen.",
                    source, key));
  return it->second;
}
}  // namespace

long long metadata_integer(const std::map<std::string, std::string>& metadata,
                           const std::string& key, const std::string& source) {
  const std::string& text = metadata_entry(metadata, key, source);
  long long value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw InputError(fmt::format("{}: metadata '{}' is '{}', not an integer.", source, key, text));
  return value;
}

FixtureSpec spec_from_metadata(const std::map<std::string, std::string>& metadata,
                               const std::string& source) {
  auto get = [&](const std::string& key) -> const std::string& {
    return metadata_entry(metadata, key, source);
  };
  auto number = [&](const std::string& key) { return metadata_integer(metadata, key, source); };
  FixtureSpec s;
  const auto op = parse_op(get("op"));
  if (!op)
    throw InputError(
        fmt::format("{}: metadata 'op' is '{}', not gdn2, kda or gdn.", source, get("op")));
  s.op = *op;
  s.B = static_cast<int>(number("B"));
  s.T = static_cast<int>(number("T"));
  s.H = static_cast<int>(number("H"));
  s.K = static_cast<int>(number("K"));
  s.V = static_cast<int>(number("V"));
  s.chunk = static_cast<int>(number("chunk"));
  const auto regime = parse_regime(get("regime"));
  if (!regime)
    throw InputError(
        fmt::format("{}: metadata 'regime' is '{}', not default, mild, stress or edge.", source,
                    get("regime")));
  s.regime = *regime;
  const auto dtype = parse_input_dtype(get("dtype"));
  if (!dtype)
    throw InputError(
        fmt::format("{}: metadata 'dtype' is '{}', not f32 or bf16.", source, get("dtype")));
  s.dtype = *dtype;
  s.seed = static_cast<std::uint64_t>(number("seed"));
  if (auto it = metadata.find("h0"); it != metadata.end()) {
    if (it->second != "zero" && it->second != "drawn")
      throw InputError(
          fmt::format("{}: metadata 'h0' is '{}', not zero or drawn.", source, it->second));
    s.zero_h0 = it->second == "zero";
  }
  if (auto it = metadata.find("do_mask"); it != metadata.end()) {
    if (it->second != kDoMask)
      throw InputError(fmt::format("{}: metadata 'do_mask' is '{}'; the one mask is '{}'.", source,
                                   it->second, kDoMask));
    s.masked_do = true;
  }
  if (metadata.count("HV")) s.HV = static_cast<int>(number("HV"));
  return s;
}

std::string gen_options(const FixtureSpec& s) {
  return fmt::format(
      "--op {} --B {} --T {} --H {} --K {} --V {} --chunk {} --regime {} --dtype {} --seed {}{}",
      op_name(s.op), s.B, s.T, s.H, s.K, s.V, s.chunk, regime_name(s.regime),
      input_dtype_name(s.dtype), s.seed,
      std::string(s.zero_h0 ? " --h0 zero" : "") + (s.masked_do ? " --do-mask" : "") +
          (s.group() > 1 ? fmt::format(" --HV {}", s.HV) : "") +
          (s.packed() ? fmt::format(" --cu-seqlens {}", fmt::join(s.cu_seqlens, ",")) : ""));
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

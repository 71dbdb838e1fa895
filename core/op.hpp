// core/op.hpp — the three ops of the gated delta-rule family (DESIGN.md
// section 1), named as in reports and on the command line. Shared by the
// oracle, the kernels and the gates.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/names.hpp"

namespace deltaproof {

// gdn2: g, b in R^K and w in R^V per token. kda: b = w = beta, a scalar per
// token and head. gdn: as kda, and g a scalar per token and head.
enum class Op { gdn2, kda, gdn };

inline constexpr std::pair<Op, std::string_view> kOpNames[] = {
    {Op::gdn2, "gdn2"},
    {Op::kda, "kda"},
    {Op::gdn, "gdn"},
};
inline std::string_view op_name(Op op) { return name_of(kOpNames, op); }
inline std::optional<Op> parse_op(std::string_view name) { return find_value(kOpNames, name); }

// ---- the op table: every tensor of an op, named once ----------------------

// The axis a tensor's last index runs over: K or V per token, none (one value
// per token and head: kda's beta, gdn's g), or the [K, V] state.
enum class Axis { k, v, none, state };
// Inputs are differentiable (their gradient is "d" + name); cotangents seed
// the backward; outputs are what the forward returns.
enum class Role { input, cotangent, output, gradient };

struct TensorInfo {
  std::string_view name;
  Role role;
  Axis axis;
};

namespace op_table {
inline constexpr TensorInfo gdn2[] = {
    {"q", Role::input, Axis::k},           {"k", Role::input, Axis::k},
    {"v", Role::input, Axis::v},           {"g", Role::input, Axis::k},
    {"b", Role::input, Axis::k},           {"w", Role::input, Axis::v},
    {"h0", Role::input, Axis::state},      {"do", Role::cotangent, Axis::v},
    {"dht", Role::cotangent, Axis::state}, {"o", Role::output, Axis::v},
    {"ht", Role::output, Axis::state}};
// kda: b = w = beta, a scalar per token and head, and g per channel; gdn: g
// a scalar per token and head too
constexpr std::array<TensorInfo, 10> scalar_beta(Axis g) {
  return {{{"q", Role::input, Axis::k},
           {"k", Role::input, Axis::k},
           {"v", Role::input, Axis::v},
           {"g", Role::input, g},
           {"beta", Role::input, Axis::none},
           {"h0", Role::input, Axis::state},
           {"do", Role::cotangent, Axis::v},
           {"dht", Role::cotangent, Axis::state},
           {"o", Role::output, Axis::v},
           {"ht", Role::output, Axis::state}}};
}
inline constexpr auto kda = scalar_beta(Axis::k);
inline constexpr auto gdn = scalar_beta(Axis::none);
}  // namespace op_table

// The inputs (in the order above), the cotangents do dht and the outputs o ht
// of an op; each input's gradient is "d" + its name, on the input's axis.
// (A range of its own, not std::span: the CUDA files include this as C++17.)
struct TensorTable {
  const TensorInfo* first = nullptr;
  std::size_t count = 0;
  const TensorInfo* begin() const { return first; }
  const TensorInfo* end() const { return first + count; }
};
inline TensorTable op_tensors(Op op) {
  switch (op) {
    case Op::gdn2:
      return {op_table::gdn2, std::size(op_table::gdn2)};
    case Op::kda:
      return {op_table::kda.data(), op_table::kda.size()};
    case Op::gdn:
      return {op_table::gdn.data(), op_table::gdn.size()};
  }
  return {};
}

// A tensor of the op by name, gradients included (role gradient); nullopt
// when the op has none of that name.
inline std::optional<TensorInfo> find_tensor(Op op, std::string_view name) {
  for (const TensorInfo& t : op_tensors(op))
    if (t.name == name) return t;
  if (name.size() > 1 && name[0] == 'd')
    for (const TensorInfo& t : op_tensors(op))
      if (t.role == Role::input && t.name == name.substr(1))
        return TensorInfo{name, Role::gradient, t.axis};
  return std::nullopt;
}

// The names of an op's tensors of one role, in table order ("d" + input for
// gradients).
inline std::vector<std::string> tensor_names(Op op, Role role) {
  std::vector<std::string> names;
  for (const TensorInfo& t : op_tensors(op)) {
    if (role == Role::gradient && t.role == Role::input) {
      std::string gradient(1, 'd');
      gradient.append(t.name);
      names.push_back(std::move(gradient));
    }
    if (t.role == role) names.emplace_back(t.name);
  }
  return names;
}

// The chunk sizes the chunked kernels support, one fact read by every check
// (oracle, gates, cli; kernels/cuda/traits.cuh static_asserts its tiles
// against it). Ascending: the last is the largest.
inline constexpr std::array<int, 3> kChunkSizes = {16, 32, 64};
inline constexpr int kMaxChunkSize = kChunkSizes.back();

constexpr bool is_supported_chunk(int chunk) {
  for (int size : kChunkSizes)
    if (size == chunk) return true;
  return false;
}

// The sizes as a sentence lists them, "16, 32 or 64", or joined by `separator`
// ("16|32|64").
inline std::string chunk_sizes_text(std::string_view separator = {}) {
  std::string text;
  for (std::size_t i = 0; i < kChunkSizes.size(); ++i) {
    if (i > 0)
      text += !separator.empty()            ? std::string(separator)
              : i + 1 == kChunkSizes.size() ? std::string(" or ")
                                            : std::string(", ");
    text += std::to_string(kChunkSizes[i]);
  }
  return text;
}

// Per-token channels along an axis (0: one value per token and head), or -1
// for a state.
inline int axis_width(Axis axis, int K, int V) {
  switch (axis) {
    case Axis::k:
      return K;
    case Axis::v:
      return V;
    case Axis::none:
      return 0;
    case Axis::state:
      break;
  }
  return -1;
}

// Host and device alike (the CUDA kernels index with these too).
#ifdef __CUDACC__
#define DELTAPROOF_HOST_DEVICE __host__ __device__
#else
#define DELTAPROOF_HOST_DEVICE
#endif

// FLA layout: token tensors [B,T,H,width] (width 0 = [B,T,H]), states [B,H,K,V].
DELTAPROOF_HOST_DEVICE inline std::size_t token_offset(int T, int H, int width, int b, int t, int h,
                                                       int i) {
  const int w = width == 0 ? 1 : width;
  return ((static_cast<std::size_t>(b) * T + t) * H + h) * w + i;
}
DELTAPROOF_HOST_DEVICE inline std::size_t state_offset(int H, int K, int V, int b, int h, int i,
                                                       int j) {
  return ((static_cast<std::size_t>(b) * H + h) * K + i) * V + j;
}

// One sequence of a problem: the tokens [begin, end) of a batch row, the head
// its keys and queries come from and the head everything else comes from,
// and the index of its states (h0, ht, dht, dh0). In a dense problem that is
// batch b, all T tokens, head h for both, state b; docs/VARLEN.md says how
// packed sequences and grouped value heads fill it in.
struct SequenceRef {
  int batch = 0, begin = 0, end = 0;
  int key_head = 0, value_head = 0;
  int state = 0;
  int length() const { return end - begin; }
};

// Every sequence of a problem of B rows of T tokens, H key heads and HV value
// heads (value head hv reads key head hv / (HV / H)), packed by cu_seqlens
// when it is not empty (then B = 1): state-major, then value head.
inline std::vector<SequenceRef> problem_sequences(int B, int T, int H, int HV,
                                                  const std::vector<std::int64_t>& cu_seqlens) {
  std::vector<SequenceRef> out;
  const bool packed = !cu_seqlens.empty();
  const int states = packed ? static_cast<int>(cu_seqlens.size()) - 1 : B;
  const int group = HV / H;
  for (int n = 0; n < states; ++n)
    for (int hv = 0; hv < HV; ++hv) {
      const int begin = packed ? static_cast<int>(cu_seqlens[n]) : 0;
      const int end = packed ? static_cast<int>(cu_seqlens[n + 1]) : T;
      out.push_back({packed ? 0 : n, begin, end, hv / group, hv, n});
    }
  return out;
}

}  // namespace deltaproof

// core/op.hpp — the three ops of the gated delta-rule family (DESIGN.md
// section 1), named as in reports and on the command line. Shared by the
// oracle, the kernels and the gates.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace deltaproof {

// gdn2: g, b in R^K and w in R^V per token. kda: b = w = beta, a scalar per
// token and head. gdn: as kda, and g a scalar per token and head.
enum class Op { gdn2, kda, gdn };

inline std::string_view op_name(Op op) {
  switch (op) {
    case Op::gdn2:
      return "gdn2";
    case Op::kda:
      return "kda";
    case Op::gdn:
      return "gdn";
  }
  return "?";
}

inline std::optional<Op> parse_op(std::string_view name) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn})
    if (op_name(op) == name) return op;
  return std::nullopt;
}

// FLA layout: token tensors [B,T,H,width] (width 0 = [B,T,H]), states [B,H,K,V].
inline std::size_t token_offset(int T, int H, int width, int b, int t, int h, int i) {
  const int w = width == 0 ? 1 : width;
  return ((static_cast<std::size_t>(b) * T + t) * H + h) * w + i;
}
inline std::size_t state_offset(int H, int K, int V, int b, int h, int i, int j) {
  return ((static_cast<std::size_t>(b) * H + h) * K + i) * V + j;
}

}  // namespace deltaproof

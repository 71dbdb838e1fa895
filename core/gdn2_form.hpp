// core/gdn2_form.hpp — every op in the general gdn2 form (DESIGN.md section 1),
// on flat FLA-layout buffers: kda's and gdn's beta [B,T,H] is broadcast to b
// over K and w over V, gdn's scalar g [B,T,H] to g over K; backward, the
// gradient of a broadcast tensor is the sum over the channels it was
// broadcast to, in order (dbeta = sum db + sum dw).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "core/op.hpp"

namespace deltaproof {

// [B,T,H] -> [B,T,H,width]: each value repeated over the new last axis.
template <class T>
std::vector<T> broadcast_channels(const std::vector<T>& scalar, int width) {
  std::vector<T> out;
  out.reserve(scalar.size() * static_cast<std::size_t>(width));
  for (const T& x : scalar) out.insert(out.end(), static_cast<std::size_t>(width), x);
  return out;
}

// [B,T,H,width] -> [B,T,H]: the sum over the last axis (the adjoint of
// broadcast_channels), in the order Eigen sums a row, which the CPU backends
// and the oracle's f64 and quad evaluations summed in before this fold was
// theirs (so their gradients and the fixtures keep their bits): for float and
// double Eigen's packet reduction (core/gdn2_form.cpp, so that nvcc never
// reads Eigen); for a type Eigen does not vectorize (quad), left to right
// from the first element.
std::vector<float> sum_channels(const std::vector<float>& full, int width);
std::vector<double> sum_channels(const std::vector<double>& full, int width);
template <class T>
std::vector<T> sum_channels(const std::vector<T>& full, int width) {
  const auto w = static_cast<std::size_t>(width);
  std::vector<T> out(full.size() / w);
  for (std::size_t r = 0; r < out.size(); ++r) {
    T sum = full[r * w];
    for (std::size_t i = 1; i < w; ++i) sum += full[r * w + i];
    out[r] = sum;
  }
  return out;
}

// The gates of the gdn2 form from an op's inputs (a map from tensor name to
// flat FLA-layout values): g [B,T,H,K] (gdn's scalar g broadcast over K), b
// [B,T,H,K] and w [B,T,H,V] (kda's and gdn's beta broadcast over K and V).
template <class T>
struct Gdn2Gates {
  std::vector<T> g, b, w;
};
template <class Inputs>
auto gdn2_gates(Op op, int K, int V, const Inputs& in) {
  using T = typename std::decay_t<decltype(in.at("g"))>::value_type;
  Gdn2Gates<T> out;
  out.g = op == Op::gdn ? broadcast_channels(in.at("g"), K) : in.at("g");
  if (op == Op::gdn2) {
    out.b = in.at("b");
    out.w = in.at("w");
  } else {
    out.b = broadcast_channels(in.at("beta"), K);
    out.w = broadcast_channels(in.at("beta"), V);
  }
  return out;
}

// The gdn2-form tensors an op's input tensor feeds: beta (kda, gdn) feeds b
// and w; every other tensor its namesake (gdn's scalar g feeds g, over K).
inline std::vector<std::string_view> gdn2_tensors_fed(std::string_view name) {
  if (name == "beta") return {"b", "w"};
  return {name};
}

// The gradients of a gdn2-form run folded back to the op's own: for kda and
// gdn, dbeta = sum_channels(db, K) + sum_channels(dw, V) replaces db and dw;
// for gdn, dg [B,T,H,K] becomes sum_channels(dg, K). gdn2's stay as they are.
// Every backend and the oracle fold here.
template <class T>
void fold_gradients(Op op, int K, int V, std::map<std::string, std::vector<T>>& grads) {
  if (op == Op::gdn2) return;
  if (op == Op::gdn) grads["dg"] = sum_channels(grads.at("dg"), K);
  const std::vector<T> db = sum_channels(grads.at("db"), K);
  const std::vector<T> dw = sum_channels(grads.at("dw"), V);
  std::vector<T>& dbeta = grads["dbeta"];
  dbeta.resize(db.size());
  for (std::size_t i = 0; i < db.size(); ++i) dbeta[i] = db[i] + dw[i];
  grads.erase("db");
  grads.erase("dw");
}

}  // namespace deltaproof

// core/gdn2_form.hpp — every op in the general gdn2 form (DESIGN.md section 1),
// on flat FLA-layout buffers: kda's and gdn's beta [B,T,H] is broadcast to b
// over K and w over V, gdn's scalar g [B,T,H] to g over K; backward, the
// gradient of a broadcast tensor is the sum over the channels it was
// broadcast to, in order (dbeta = sum db + sum dw).
#pragma once

#include <cstddef>
#include <map>
#include <string>
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

// [B,T,H,width] -> [B,T,H]: the sum over the last axis, left to right (the
// adjoint of broadcast_channels).
template <class T>
std::vector<T> sum_channels(const std::vector<T>& full, int width) {
  std::vector<T> out(full.size() / static_cast<std::size_t>(width));
  for (std::size_t r = 0; r < out.size(); ++r) {
    T sum = T(0);
    for (int i = 0; i < width; ++i) sum += full[r * static_cast<std::size_t>(width) + i];
    out[r] = sum;
  }
  return out;
}

// The gradients of a gdn2-form run folded back to the op's own: for kda and
// gdn, dbeta = sum_channels(db, K) + sum_channels(dw, V) replaces db and dw;
// for gdn, dg [B,T,H,K] becomes sum_channels(dg, K). gdn2's stay as they are.
// (cuda-chunk and cuda-recurrent fold here; cpu-chunk and cpu-recurrent still
// fold per head with Eigen's row sums, whose order of addition differs in the
// last bit: moving them here changes 249 CPU gate figures, so it waits for a
// declared change.)
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

// kernels/cuda/reference64.hpp — the function and its gradients in f64 on the
// GPU (kernels/cuda/reference64.cu): DESIGN.md section 1 token by token and
// core/recurrence.hpp's reverse sweep, in double, one block per sequence. A
// reference at shapes whose CPU oracle would take hours (issue 13: B4 T4096
// H16 K=V=128, one sequence of T 32768), itself checked against the quad
// oracle on sampled sequences (oracle/sampled.hpp). Plain C++: host code
// includes it.
#pragma once

#include <vector>

namespace deltaproof::kernels::cuda {

// A problem in gdn2 form (core/gdn2_form.hpp), FLA layout, host vectors.
struct Reference64Input {
  int B = 1, T = 1, H = 1, K = 1, V = 1;
  double scale = 1.0;
  std::vector<double> q, k, g, b;  // [B,T,H,K]
  std::vector<double> v, w;        // [B,T,H,V]
  std::vector<double> h0;          // [B,H,K,V]
  std::vector<double> d_o, dht;    // cotangents (backward only)
};

// o and ht; with the backward every gradient in gdn2 form (dg db over K, dw
// over V) and dh0.
struct Reference64Output {
  std::vector<double> o, ht, dq, dk, dg, db, dv, dw, dh0;
};

// Limits of the one-block-per-sequence layout: the state and a few vectors of
// doubles in shared memory.
struct Reference64Config {
  static constexpr int kThreads = 256;
  static constexpr int kMaxDim = 128;  // K and V at most
  static constexpr int kSegment = 64;  // tokens between the forward's checkpoints
};

// Runs on the current device; throws std::runtime_error with a sentence (a
// shape it cannot run, a size that does not match, a CUDA error).
Reference64Output run_reference64(const Reference64Input& in, bool backward);

}  // namespace deltaproof::kernels::cuda

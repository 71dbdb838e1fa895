// kernels/cuda/tc_capi.cu — cuda-tc's forward, and its forward and backward,
// as C functions on device pointers, built as a shared library
// (libdeltaproof_tc.so) so that a script can run it on the same tensors as
// another kernel in one process and time both with CUDA events
// (scripts/tc_vs_fla.py). The inputs are in gdn2 form and FLA's layout (q k g b
// [B,T,H,K], v w [B,T,H,V], h0 [B,H,K,V]; or kda's or gdn's beta [B,T,H] in
// place of b and w); o is f32 or, where the caller asks, bf16; ht, the
// cotangents do and dht and every gradient are f32 (db and dw in gdn2 form).
// No allocation and no synchronisation: the caller owns the scratch
// (deltaproof_tc_scratch_bytes, deltaproof_tc_scratch_bytes_backward) and the
// stream. Packed sequences (cu_seqlens) run natively: each sequence's chunks
// start at its first token, and a chunk past a shorter sequence's end is
// skipped (its block returns at once), never computed as padding.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>

#include "kernels/cuda/tc.hpp"

extern "C" {

struct deltaproof_tc_problem {
  int B, T, H, K, V;
  float scale;
  int bf16_inputs;  // 1: q k v g b w are bf16; 0: f32
  const void *q, *k, *v, *g, *b, *w;
  const float* h0;
  float* o;
  float* ht;
  // Packed sequences (FLA's varlen), or null: B + 1 ints in device memory, and
  // then B is the number of sequences, T the longest one's length (a longer
  // sequence is cut at T), sequence b the rows [cu_seqlens[b], cu_seqlens[b+1])
  // of token tensors [1, cu_seqlens[B], H, width]; h0, ht and the state
  // gradients stay [B,H,K,V], one per sequence.
  const int* cu_seqlens;
  // Or null: o in bf16 (FLA's output type), written here instead of into o
  // (o may then be null): B*T*H*V bf16 values (packed: cu_seqlens[B]*H*V),
  // each o's f32 value rounded to nearest even.
  void* o_bf16;
  // Or null: kda's or gdn's beta [B,T,H] (the inputs' type), read in place of b and w
  // (they may then be null), which are beta broadcast over their channels;
  // the gradients db and dw stay in gdn2 form (dbeta: the sum of both over
  // their channels).
  const void* beta;
};

struct deltaproof_tc_gradients {
  const float *d_o, *dht;
  float *dq, *dk, *dv, *dg, *db, *dw, *dh0;
};

namespace {
deltaproof::kernels::cuda::DeviceProblem device_problem(const deltaproof_tc_problem& c) {
  deltaproof::kernels::cuda::DeviceProblem p;
  p.B = c.B, p.T = c.T, p.H = c.H, p.K = c.K, p.V = c.V, p.chunk = 64, p.scale = c.scale;
  p.input = c.bf16_inputs ? deltaproof::kernels::cuda::InputType::bf16
                          : deltaproof::kernels::cuda::InputType::f32;
  p.q = c.q, p.k = c.k, p.v = c.v, p.g = c.g, p.b = c.b, p.w = c.w, p.h0 = c.h0;
  p.o = c.o, p.ht = c.ht, p.cu_seqlens = c.cu_seqlens;
  p.o_bf16 = static_cast<std::uint16_t*>(c.o_bf16);
  p.beta = c.beta;
  return p;
}

// The cotangents and gradient buffers of `g` in p.
void with_gradients(deltaproof::kernels::cuda::DeviceProblem& p, const deltaproof_tc_gradients& g) {
  p.d_o = g.d_o, p.dht = g.dht, p.dq = g.dq, p.dk = g.dk, p.dv = g.dv, p.dg = g.dg, p.db = g.db;
  p.dw = g.dw, p.dh0 = g.dh0;
}

// The scratch a shape needs (with or without the backward's), or 0 when
// cuda-tc cannot run it.
std::size_t scratch_bytes(const deltaproof_tc_problem& c, bool backward) {
  if (!deltaproof::kernels::cuda::TcConfig::supports(c.B, c.H, c.K, c.V, 64).empty()) return 0;
  return deltaproof::kernels::cuda::tc_scratch_bytes(device_problem(c), backward);
}

// Runs launch(p) on the problem's DeviceProblem once the shape is known to be
// supported: 0, or 1 with the sentence in `error` (at most error_size bytes).
// (not a template: this is inside extern "C")
int checked(const deltaproof_tc_problem& c, char* error, std::size_t error_size,
            const std::function<void(deltaproof::kernels::cuda::DeviceProblem)>& launch) {
  try {
    const std::string why = deltaproof::kernels::cuda::TcConfig::supports(c.B, c.H, c.K, c.V, 64);
    if (!why.empty()) throw std::runtime_error("cuda-tc cannot run this shape: " + why);
    launch(device_problem(c));
    return 0;
  } catch (const std::exception& e) {
    if (error && error_size) std::snprintf(error, error_size, "%s", e.what());
    return 1;
  }
}
}  // namespace

// Bytes of scratch the forward needs; 0 when the shape is not supported.
std::size_t deltaproof_tc_scratch_bytes(const deltaproof_tc_problem* problem) {
  return scratch_bytes(*problem, false);
}

// Bytes of scratch the forward and backward need; 0 when the shape is not supported.
std::size_t deltaproof_tc_scratch_bytes_backward(const deltaproof_tc_problem* problem) {
  return scratch_bytes(*problem, true);
}

// Launches the forward, then the backward, on `stream`, with scratch of
// deltaproof_tc_scratch_bytes_backward bytes. Returns 0, or 1 with a sentence
// in `error`.
int deltaproof_tc_forward_backward(const deltaproof_tc_problem* problem,
                                   const deltaproof_tc_gradients* gradients, void* scratch,
                                   void* stream, char* error, std::size_t error_size) {
  return checked(*problem, error, error_size, [&](deltaproof::kernels::cuda::DeviceProblem p) {
    with_gradients(p, *gradients);
    const auto s = deltaproof::kernels::cuda::carve_tc_scratch(p, scratch, true);
    auto* cu_stream = static_cast<CUstream_st*>(stream);
    deltaproof::kernels::cuda::launch_tc_forward(p, s, cu_stream, nullptr, false);
    deltaproof::kernels::cuda::launch_tc_backward(p, s, cu_stream, nullptr, false);
  });
}

// Launches the backward's stages in `stages` (8 bwd.bk2, 16 tc_bwd_products,
// 32 tc_bwd_tokens; 56 all) on `stream`, on scratch a forward and backward
// filled, so that each can be timed alone. Returns as
// deltaproof_tc_forward_backward.
int deltaproof_tc_backward(const deltaproof_tc_problem* problem,
                           const deltaproof_tc_gradients* gradients, void* scratch, void* stream,
                           unsigned stages, char* error, std::size_t error_size) {
  return checked(*problem, error, error_size, [&](deltaproof::kernels::cuda::DeviceProblem p) {
    with_gradients(p, *gradients);
    deltaproof::kernels::cuda::launch_tc_backward(
        p, deltaproof::kernels::cuda::carve_tc_scratch(p, scratch, true),
        static_cast<CUstream_st*>(stream), nullptr, false, stages);
  });
}

// Launches the forward on `stream` (a cudaStream_t, or null); `stages` picks
// its kernels (1 fwd.intra, 2 fwd.inter, 4 fwd.output; 7 all), so that each
// can be timed alone on scratch a whole run filled. Returns 0, or 1 with a
// sentence in `error` (at most error_size bytes).
int deltaproof_tc_forward(const deltaproof_tc_problem* problem, void* scratch, void* stream,
                          unsigned stages, char* error, std::size_t error_size) {
  return checked(*problem, error, error_size, [&](deltaproof::kernels::cuda::DeviceProblem p) {
    deltaproof::kernels::cuda::launch_tc_forward(
        p, deltaproof::kernels::cuda::carve_tc_scratch(p, scratch),
        static_cast<CUstream_st*>(stream), nullptr, false, stages);
  });
}

}  // extern "C"

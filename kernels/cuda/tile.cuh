// kernels/cuda/tile.cuh — the tile layer of the CUDA kernels (as
// ThunderKittens' tile operations, without its templates): how a kernel reads
// its inputs (read_input, widened to f32), the precision contract's rounding
// points (operand, intermediate), the quad of four consecutive floats that one
// thread of a matrix product sums (Quad, load_quad, store_quad, for_quads,
// accumulate_quad), and the L2 prefetches. Each helper is one expression of the
// kernels moved here, not a new way of summing: a kernel that calls it
// computes bit for bit what it computed with the expression written out.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/traits.cuh"

namespace deltaproof::kernels::cuda {

// Element n of an input (q k v g b w) whose elements are of type In (float or
// __nv_bfloat16), widened to f32.
__device__ inline float widen(float x) { return x; }
__device__ inline float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
template <class In>
__device__ inline float read_input(const void* input, std::size_t n) {
  return widen(static_cast<const In*>(input)[n]);
}

// The precision contract's rounding points (DeviceRounding), as cpu-chunk's
// operand() and intermediate(): operand<R>(p, x) where a matrix product reads
// x, intermediate<R>(p, x) where a stage stores x for a later one to read. The
// kernels are templates on R: Exact (f32) compiles every point away, so the f32
// kernels are the code they were without contracts (a run-time test in the
// inner loops cost the f32 path 2.4x on the H200: reports/gpu/41c4c72);
// Contract rounds as p.rounding says.
struct Exact {
  static constexpr bool kRounds = false;
};
struct Contract {
  static constexpr bool kRounds = true;
};
template <class R>
__device__ inline float operand(const DeviceProblem& p, float x) {
  if constexpr (R::kRounds) return round_dropping(x, p.rounding.operand_bits, p.rounding.rule);
  return x;
}
template <class R>
__device__ inline float intermediate(const DeviceProblem& p, float x) {
  if constexpr (R::kRounds) return round_dropping(x, p.rounding.intermediate_bits, p.rounding.rule);
  return x;
}

// Four consecutive floats, one 16-byte load or store (`at` 16-byte aligned).
struct Quad {
  float v[kQuad];
};
__device__ inline Quad load_quad(const float* at) {
  const float4 x = *reinterpret_cast<const float4*>(at);
  return {{x.x, x.y, x.z, x.w}};
}
__device__ inline void store_quad(float* at, const float (&v)[kQuad]) {
  *reinterpret_cast<float4*>(at) = make_float4(v[0], v[1], v[2], v[3]);
}

// Asks L2 to fetch the 128-byte lines of [at, at + bytes) ahead of their use
// (prefetch_l2: of `floats` floats), the block's threads sharing the lines out. No effect on any
// result (and none in a host build of the kernels): the sequential kernels fetch their next chunk's
// operands so, and bwd.bk1 its whole chunk's, so that the loads which follow find L2 rather than
// wait on device memory.
__device__ inline void prefetch_bytes_l2(const void* at, std::size_t bytes) {
#ifdef __CUDA_ARCH__
  constexpr int kLine = 128;
  const char* first = static_cast<const char*>(at);
  for (std::size_t i = threadIdx.x * kLine; i < bytes; i += blockDim.x * kLine)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(first + i));
#else
  (void)at, (void)bytes;
#endif
}
__device__ inline void prefetch_l2(const float* at, std::size_t floats) {
  prefetch_bytes_l2(at, floats * sizeof(float));
}
// The same for the vectors of tokens t0 .. t0 + rows - 1 of a token tensor
// [B,T,H,width] of element type E (up to T), for (b, h).
template <class E>
__device__ inline void prefetch_tokens_l2(const DeviceProblem& p, const void* x, int width, int b,
                                          int h, int t0, int rows) {
#ifdef __CUDA_ARCH__
  constexpr int kLine = 128 / sizeof(E);  // elements per line
  const int lines = (width + kLine - 1) / kLine;
  const int last = min(rows, p.T - t0);
  for (int idx = threadIdx.x; idx < last * lines; idx += blockDim.x) {
    const E* row =
        static_cast<const E*>(x) + token_offset(p.T, p.H, width, b, t0 + idx / lines, h, 0);
    asm volatile("prefetch.global.L2 [%0];" ::"l"(row + idx % lines * kLine));
  }
#else
  (void)p, (void)x, (void)width, (void)b, (void)h, (void)t0, (void)rows;
#endif
}

// The block's items of a product with `quads` quads of rows and `lanes`
// columns: body(m0, n) for rows m0..m0+3 and column n. Consecutive threads take
// consecutive n of the same quad (a warp shares its quad when lanes >= 32).
template <class Body>
__device__ inline void for_quads(int quads, int lanes, Body body) {
  for (int idx = threadIdx.x; idx < quads * lanes; idx += blockDim.x)
    body(kQuad * (idx / lanes), idx % lanes);
}

// One step d of the sums of a quad of rows: acc[s] += a(m0 + s, d) b(d, n) for
// the four rows, the quad holding a(m0..m0+3, d) and `b` the thread's b(d, n),
// both as the product reads them (operand: `b` is passed already read so).
// Each sum adds its terms in the order of the caller's loop over d.
template <class R>
__device__ inline void accumulate_quad(const DeviceProblem& p, float (&acc)[kQuad],
                                       const Quad& quad, float b) {
#pragma unroll
  for (int s = 0; s < kQuad; ++s) acc[s] += operand<R>(p, quad.v[s]) * b;
}

// The same for two products that share their b (a(m, d) b(d, n) and
// a'(m, d) b(d, n)), the two sums of each row taken in turn.
template <class R>
__device__ inline void accumulate_quads(const DeviceProblem& p, float (&acc)[kQuad],
                                        const Quad& quad, float (&acc2)[kQuad], const Quad& quad2,
                                        float b) {
#pragma unroll
  for (int s = 0; s < kQuad; ++s) {
    acc[s] += operand<R>(p, quad.v[s]) * b;
    acc2[s] += operand<R>(p, quad2.v[s]) * b;
  }
}

// A quad of sums as a stage stores them for a later one (intermediate).
template <class R>
__device__ inline void round_intermediate(const DeviceProblem& p, float (&acc)[kQuad]) {
#pragma unroll
  for (int s = 0; s < kQuad; ++s) acc[s] = intermediate<R>(p, acc[s]);
}

}  // namespace deltaproof::kernels::cuda

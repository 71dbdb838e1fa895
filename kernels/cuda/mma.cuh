// kernels/cuda/mma.cuh — the tensor-core layer of cuda-tc: one warp's
// mma.sync m16n8k16 (bf16 operands, f32 accumulation, sm_80 and later), its
// fragments read from shared memory, and the map from a fragment register to
// the (row, column) of the tile it holds. PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type".
//
// An operand sits in shared memory as [m][k] (A) or B^T = [n][k] (B), its
// reduction index contiguous, or transposed (load_a_t, load_b_n). Every
// fragment is read by ldmatrix (sm_75): eight 16-byte rows a matrix, each row
// 16-byte aligned, so a tile's first row and column are multiples of 8 and a
// row stride is a multiple of 8 elements; .trans serves the transposed
// layouts. A row stride of a multiple of 8 plus 8 elements (16 bytes of
// padding) puts the eight rows of a matrix in different banks.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

namespace deltaproof::kernels::cuda::mma {

using bf16 = __nv_bfloat16;

// The tile shape of one instruction: m16 n8 k16.
inline constexpr int kM = 16, kN = 8, kK = 16;
// The padding of a shared operand's rows, in elements.
inline constexpr int kPad = 8;

// The lane's place in a fragment: group g = lane / 4 picks the row (A, C) or
// column (B); t = lane % 4 picks the pair of reduction indices (2t, 2t + 1).
struct Lane {
  int g, t;
};
__device__ inline Lane lane() {
  const int l = static_cast<int>(threadIdx.x) % 32;
  return {l / 4, l % 4};
}

// Two floats as a bf16 pair, rounded to nearest even; lo in the low half (the
// lower index of the pair, as the fragments expect).
__device__ inline std::uint32_t pack(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&v);
}

// What pack(x0, x1) = hi left out, x - hi (exact in f32), as a bf16 pair: a
// product through both parts (hi b + rest b) carries about 16 significant bits
// of x rather than 8.
__device__ inline std::uint32_t pack_rest(float x0, float x1, std::uint32_t hi) {
  const float2 h = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&hi));
  return pack(x0 - h.x, x1 - h.y);
}

// ldmatrix: lane l gives the address of row l % 8 of matrix l / 8 (x4: four
// 8 x 8 matrices; x2: two, lanes 0-15); register i of every lane receives
// matrix i's elements (row lane / 4, columns 2 (lane % 4) and + 1), or with
// .trans those of its transpose.
__device__ inline std::uint32_t shared_address(const bf16* at) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(at));
}
__device__ inline void ldmatrix_x4(std::uint32_t (&r)[4], const bf16* row, bool trans) {
#ifdef __CUDA_ARCH__
  if (trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
#else
  (void)r, (void)row, (void)trans;
#endif
}
__device__ inline void ldmatrix_x2(std::uint32_t (&r)[2], const bf16* row, bool trans) {
#ifdef __CUDA_ARCH__
  if (trans)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_address(row)));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_address(row)));
#else
  (void)r, (void)row, (void)trans;
#endif
}

// A 16 x 16 tile of A at (row0, col0) of a row-major [m][k] array (stride ld):
// its matrices are rows +0 and +8 by columns +0 and +8, in register order.
struct FragA {
  std::uint32_t r[4];
};
__device__ inline FragA load_a(const bf16* a, int ld, int row0, int col0) {
  const int l = static_cast<int>(threadIdx.x) % 32, m = l / 8;
  FragA f;
  ldmatrix_x4(f.r, a + (row0 + l % 8 + 8 * (m % 2)) * ld + col0 + 8 * (m / 2), false);
  return f;
}

// A 16 x 8 tile of B at (k0, n0), from B^T stored row-major [n][k] (stride ld).
struct FragB {
  std::uint32_t r[2];
};
__device__ inline FragB load_b(const bf16* bt, int ld, int n0, int k0) {
  const int l = static_cast<int>(threadIdx.x) % 32;
  FragB f;
  ldmatrix_x2(f.r, bt + (n0 + l % 8) * ld + k0 + 8 * (l / 8 % 2), false);
  return f;
}

// A 16 x 16 tile of A = X^T at (row0, col0), from X stored row-major [k][m]
// (stride ld): A's rows are X's columns, each matrix read transposed.
__device__ inline FragA load_a_t(const bf16* x, int ld, int row0, int col0) {
  const int l = static_cast<int>(threadIdx.x) % 32, m = l / 8;
  FragA f;
  ldmatrix_x4(f.r, x + (col0 + l % 8 + 8 * (m / 2)) * ld + row0 + 8 * (m % 2), true);
  return f;
}

// A 16 x 8 tile of B at (k0, n0), from B itself stored row-major [k][n]
// (stride ld), each matrix read transposed.
__device__ inline FragB load_b_n(const bf16* b, int ld, int k0, int n0) {
  const int l = static_cast<int>(threadIdx.x) % 32;
  FragB f;
  ldmatrix_x2(f.r, b + (k0 + l % 8 + 8 * (l / 8 % 2)) * ld + n0, true);
  return f;
}

// The 16 x 8 accumulator tile: c[0], c[1] at row g, columns 2t and 2t + 1;
// c[2], c[3] at row g + 8, the same columns.
struct Acc {
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
};
__device__ inline int acc_row(const Lane& l, int i) { return l.g + (i >= 2 ? 8 : 0); }
__device__ inline int acc_col(const Lane& l, int i) { return 2 * l.t + (i & 1); }

// d += a b, f32 accumulation.
__device__ inline void mma(Acc& d, const FragA& a, const FragB& b) {
#ifdef __CUDA_ARCH__
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d.c[0]), "+f"(d.c[1]), "+f"(d.c[2]), "+f"(d.c[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]), "r"(b.r[1]));
#else
  (void)d, (void)a, (void)b;
#endif
}

// A pair of floats in two parts: hi = pack(x0, x1) and rest = pack_rest(...).
__device__ inline void pack_split(float x0, float x1, std::uint32_t& hi, std::uint32_t& rest) {
  hi = pack(x0, x1);
  rest = pack_rest(x0, x1, hi);
}

// d += a b with both operands in two parts (pack_split): hi hi + hi rest +
// rest hi, in that order (rest rest is below f32's sum). About 16 significant
// bits of each operand where mma alone takes 8.
__device__ inline void mma_split(Acc& d, const FragA& a, const FragA& a_rest, const FragB& b,
                                 const FragB& b_rest) {
  mma(d, a, b);
  mma(d, a, b_rest);
  mma(d, a_rest, b);
}

// acc[j] += sum over ks in [first, last) of a(ks) b(ks, j): a warp's strip of
// kTiles 16 x 8 tiles along n, each step's A fragment read once for all of them.
template <int kTiles, class LoadA, class LoadB>
__device__ inline void accumulate(Acc (&acc)[kTiles], int first, int last, LoadA a, LoadB b) {
  for (int ks = first; ks < last; ++ks) {
    const FragA fa = a(ks);
#pragma unroll
    for (int j = 0; j < kTiles; ++j) mma(acc[j], fa, b(ks, j));
  }
}

// 16 bytes from global to shared memory without passing through registers
// (cp.async, sm_80); commit and wait group them.
__device__ inline void copy_async_16(void* shared, const void* global) {
#ifdef __CUDA_ARCH__
  const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(global));
#else
  (void)shared, (void)global;
#endif
}
// Wait until at most N of this thread's most recent groups are in flight.
template <int N>
__device__ inline void copy_async_wait_group() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}
__device__ inline void copy_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;\n" ::);
#endif
}
__device__ inline void copy_async_wait_all() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group 0;\n" ::);
#endif
}

}  // namespace deltaproof::kernels::cuda::mma

// kernels/cuda/tc.cu — cuda-tc: the chunked (WY) algorithm of DESIGN.md
// section 2 on the tensor cores (mma.sync m16n8k16: bf16 operands, f32
// accumulation), chunk 64, K and V up to 128, the bf16 precision class of
// docs/PRECISION.md. The same quantities by the same names as cuda-chunk
// (kernels/cuda/chunk.cu) and cpu-chunk (kernels/cpu/chunk.cpp): G, A, M,
// Tinv, Ut, Wt, Qg, Kdec, decay_end, S0, U.
//
// Forward, three kernels (each launch logged and checked):
//   fwd.intra   tc_fwd_intra   grid (chunks, B*H)    G; A and M (the pairs of 16-row blocks
//                                                    on the tensor cores, each through a reference
//                                                    row, a diagonal block whose decays are wide
//                                                    pairwise in f32); Tinv (f32: its diagonal
//                                                    blocks by substitution, those below on the
//                                                    tensor cores in two bf16 parts); Ut =
//                                                    Tinv (W*V) and Wt = Tinv (B*K*exp G) on the
//                                                    tensor cores; Qg, Kdec^T, decay_end
//   fwd.inter   tc_fwd_state   grid (V tiles, B*H)   in chunk order: S0 (stored), U = Ut - Wt S0
//                                                    (stored), S_end = decay_end S0 + Kdec^T U; ht
//   fwd.output  tc_fwd_output  grid (chunks, B*H)    O = Qg S0 + M U
// Backward, three kernels, four launches (the names of DESIGN.md section 2):
//   bwd.bk2     tc_bwd_state     grid (V tiles, B*H)   in reverse chunk order: dU = M^T dO +
//   (+ glue)                                           Kdec dS_end (stored), dS0 = Qg^T dO +
//                                                      Diag(exp G_C) dS_end - Wt^T dU handed to
//                                                      the chunk before; dS_end stored; dh0
//   bwd.bk1     tc_bwd_products  grid (chunks, B*H)    the matrix adjoints on the tensor cores,
//                                                      in two launches: dX, dW, dV, dY, dA
//                                                      (kXYA), then dM, dQg, dKdec, d_decay_end
//                                                      (kMKQ)
//               tc_bwd_tokens    grid (chunks, B*H, 2) dq dk db through the pairwise decays (the
//                                                      blocks on the tensor cores through a
//                                                      reference row, a diagonal block whose
//                                                      decays are wide in f32); dg by a reverse
//                                                      cumulative sum; half the channels a block
// The recurrences over chunks are the only sequential parts; they are
// separable over the columns of the state (V), so fwd.inter and bwd.bk2 give
// each block a tile of them.
//
// Rounding (the bf16 class): every product reads bf16 operands and sums in f32;
// what a stage stores for the next (Ut, Wt, Qg, Kdec, M, S0, U) is bf16; the
// carried state S stays f32 in registers; the outputs are f32 here and rounded
// to bf16 by the backend (kernels::round_outputs). The decays are pairwise,
// never exp(G_r) exp(-G_i): a product between 16-row blocks R > I reads row r
// of block R scaled by exp(G_r - G_n) and row i of block I by exp(G_n - G_i),
// n the first row of block R, both <= 1 for a log-decay g <= 0. A diagonal
// block goes through its first row too where no channel's G spans more than
// kSpanLimit = 60 in it (one factor <= 1, the other <= e^60, both well inside
// bf16's range), each operand there in two bf16 parts (mma::pack_rest: about
// 16 significant bits, near the pairwise f32 path's arithmetic: at 8, one ulp
// moved db's slope out of its band at T = 32768, docs/PRECISION.md), and
// takes exp(G_r - G_i) per pair and channel in f32 where one does. Rows past T (a partial
// last chunk) are read as zeros: their g = 0 keeps G at the last real row.
// kda's and gdn's beta (DeviceProblem::beta) is read once a row and broadcast
// over b's and w's channels as they are loaded (RowPieces' per_row): the same
// values as b and w stored at full width, a third of fwd.intra's input bytes
// fewer.
//
// Determinism: no atomic sums (the one atomic, cumulative_decay's atomicOr of a
// flag bit, is order-free); each output element is written by one thread after
// sums in a fixed order. The backward's scratch (dS_end, dU, dM, dA in bf16;
// dQg, dY, dKdec in f32) is written whole before it is read.
//
// Each stage alone, on host matrices of one chunk (a test holds each against
// its CPU twin): kernels/cuda/tc_stages.hpp, defined at the end of this file;
// tests/kernels/cuda_tc_stages_test.cpp.
//
// Compile check: nvcc -std=c++17 -arch=sm_90 -I. -c kernels/cuda/tc.cu
#include "kernels/cuda/tc.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/tc_stages.hpp"
#include "kernels/cuda/tile.cuh"

namespace deltaproof::kernels::cuda {
namespace {

using mma::Acc;
using mma::bf16;
using mma::FragA;
using mma::FragB;
using mma::kPad;

constexpr int kC = TcConfig::kChunk;
constexpr int kBlock = 16;            // the sub-blocks of A, M and Tinv
constexpr int kBlocks = kC / kBlock;  // 4

// One (b, h, chunk)'s slab of a scratch buffer: chunks of a head are consecutive.
__device__ inline std::size_t slab(int bh, int num_chunks, int c) {
  return static_cast<std::size_t>(bh) * num_chunks + c;
}

// Sequence b's first token as a flat row index, and its length: b T and T in
// a dense batch; cu_seqlens' entries for packed sequences (DeviceProblem).
__device__ inline int seq_begin(const DeviceProblem& p, int b) {
  return p.cu_seqlens ? __ldg(p.cu_seqlens + b) : b * p.T;
}
__device__ inline int seq_length(const DeviceProblem& p, int b) {
  return p.cu_seqlens ? __ldg(p.cu_seqlens + b + 1) - __ldg(p.cu_seqlens + b) : p.T;
}
// Sequence b's chunks, at most the grid's num_chunks (sized by T: a packed
// sequence longer than T is cut there, never written outside its slabs).
__device__ inline int seq_chunks(const DeviceProblem& p, int b, int num_chunks) {
  return min((seq_length(p, b) + kC - 1) / kC, num_chunks);
}
// Sequence b's token t of a token tensor of `width` channels, channel i, head h.
__device__ inline std::size_t token_at(const DeviceProblem& p, int width, int b, int t, int h,
                                       int i) {
  return token_offset(0, p.H, width, 0, seq_begin(p, b) + t, h, i);
}

// The token a chunk's row t of sequence b reads, as its flat row index, or -1
// past the sequence's end (the row is zeros). Under the partial-chunk fault
// every row of the chunk is read: past the end into the next sequence's first
// tokens (the last sequence wraps to the first), nonzero data a kernel must
// not see.
__device__ inline long long source_row(const DeviceProblem& p, int b, int t) {
  const long long row = static_cast<long long>(seq_begin(p, b)) + t;
  if (DP_FAULT(p.faults, partial_chunk_reads_past_t))
    return row % (p.cu_seqlens ? __ldg(p.cu_seqlens + p.B) : static_cast<long long>(p.B) * p.T);
  return t < seq_length(p, b) ? row : -1;
}

__device__ inline bf16 to_bf16(float x) { return __float2bfloat16_rn(x); }

// The 16-byte pieces of a row of In, widened to f32.
template <class In>
struct Piece {
  static constexpr int kVec = 16 / sizeof(In);
  static __device__ void widen(const uint4& raw, float (&out)[kVec]) {
    if constexpr (sizeof(In) == 4) {
      out[0] = __uint_as_float(raw.x), out[1] = __uint_as_float(raw.y);
      out[2] = __uint_as_float(raw.z), out[3] = __uint_as_float(raw.w);
    } else {
      const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        out[2 * i] = __uint_as_float(words[i] << 16);
        out[2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
      }
    }
  }
  // A piece of kVec copies of one value (a row's broadcast beta).
  static __device__ uint4 splat(const In& x) {
    unsigned word;
    if constexpr (sizeof(In) == 4) {
      word = __float_as_uint(x);
    } else {
      const unsigned half = __bfloat16_as_ushort(x);
      word = half | half << 16;
    }
    return make_uint4(word, word, word, word);
  }
};

// kda's and gdn's b and w where DeviceProblem::beta is set: beta [B,T,H], one value a
// row, broadcast over the channels. gate(p, x) is the tensor read for b or w
// (x), per_row(p, n) the bit of tensor n in RowPieces' per_row mask.
__device__ inline const void* gate(const DeviceProblem& p, const void* x) {
  return p.beta ? p.beta : x;
}
__device__ inline unsigned per_row(const DeviceProblem& p, int n) { return p.beta ? 1u << n : 0u; }
// Element i of a row's (flat row index) `width` channels in tensor n of x:
// the row's one value where per_row has n's bit.
__device__ inline std::size_t element_at(const DeviceProblem& p, unsigned per_row, int n, int width,
                                         long long row, int h, int i) {
  return per_row >> n & 1 ? token_offset(0, p.H, 1, 0, static_cast<int>(row), h, 0)
                          : token_offset(0, p.H, width, 0, static_cast<int>(row), h, i);
}
// The element of gate(p, x) for sequence b's token t, head h, where `at` is
// x's own element there: beta's one value a row where p.beta is set, else at.
__device__ inline std::size_t gate_at(const DeviceProblem& p, std::size_t at, int b, int t, int h) {
  return p.beta ? token_at(p, 1, b, t, h, 0) : at;
}

// A thread's part of rows t0 .. t0 + 63 of N token tensors of `width`
// channels (up to Width), for (b, h): fetch issues every load of all N before
// any is used (the block waits on device memory once, not once per tensor or
// element) and keeps them in registers; store(r, i, x) hands each row r and
// channel i < Width over, x[n] tensor n's value, zeros past T and past width.
// Where a row is not whole 16-byte pieces, fetch loads nothing and store reads
// element by element. A tensor whose bit is set in fetch's per_row (kept for
// store as per_row_mask) is [B,T,H] (kda's or gdn's beta), its row's one value
// broadcast over the channels. Which pieces a warp takes (place): by rows, 16
// lanes a row (Columns false); or by columns, 16 rows of two pieces, one
// 32-byte sector a row (Columns true: for a caller that stores the rows
// transposed, 16 rows of a column to 8 banks, not a row's 16 pieces of 8
// columns to one bank).
template <class In, int Width, int N, bool Columns = false>
struct RowPieces {
  static constexpr int kVec = Piece<In>::kVec, kPieces = kC * Width / kVec;
  static constexpr int kPerThread = kPieces / TcConfig::kIntraThreads;
  static_assert(kPieces % TcConfig::kIntraThreads == 0, "every thread loads as many pieces");
  static_assert(!Columns || (kC % kBlock == 0 && Width / kVec % 2 == 0), "whole pairs of pieces");
  // Piece idx of the chunk: its row r and first channel i.
  static __device__ void place(int idx, int& r, int& i) {
    if constexpr (Columns) {
      const int group = idx / 32, lane = idx % 32, blocks = kC / kBlock;
      r = kBlock * (group % blocks) + lane % kBlock;
      i = (2 * (group / blocks) + lane / kBlock) * kVec;
    } else {
      r = idx / (Width / kVec), i = idx % (Width / kVec) * kVec;
    }
  }
  uint4 raw[N][kPerThread];
  unsigned per_row_mask = 0;

  __device__ void fetch(const DeviceProblem& p, const void* const (&x)[N], int width, int b, int h,
                        int t0, unsigned per_row = 0) {
    per_row_mask = per_row;
    if (width % kVec != 0) return;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int idx = threadIdx.x + j * TcConfig::kIntraThreads;
      int r, i;
      place(idx, r, i);
      const int t = t0 + r;
#pragma unroll
      for (int n = 0; n < N; ++n) raw[n][j] = make_uint4(0, 0, 0, 0);
      if (const long long row = source_row(p, b, t); i < width && row >= 0) {
#pragma unroll
        for (int n = 0; n < N; ++n) {
          const In* at = static_cast<const In*>(x[n]) + element_at(p, per_row, n, width, row, h, i);
          raw[n][j] =
              per_row >> n & 1 ? Piece<In>::splat(*at) : __ldg(reinterpret_cast<const uint4*>(at));
        }
      }
    }
  }

  // Where `width` is whole pieces (fetch read them): piece(r, i, raw) for each
  // of the thread's pieces as read, raw[n] tensor n's kVec elements of row r
  // from channel i (zeros past T and past width), and true; else false, and
  // the caller takes store's element-by-element path.
  template <class Visit>
  __device__ bool each_piece(int width, Visit piece) const {
    if (width % kVec != 0) return false;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int idx = threadIdx.x + j * TcConfig::kIntraThreads;
      uint4 x[N];
#pragma unroll
      for (int n = 0; n < N; ++n) x[n] = raw[n][j];
      int r, i;
      place(idx, r, i);
      piece(r, i, x);
    }
    return true;
  }

  template <class Store>
  __device__ void store(const DeviceProblem& p, const void* const (&x)[N], int width, int b, int h,
                        int t0, Store store) const {
    if (width % kVec != 0) {
      for (int idx = threadIdx.x; idx < kC * Width; idx += blockDim.x) {
        const int r = idx / Width, i = idx % Width, t = t0 + r;
        float v[N] = {};
        if (const long long row = source_row(p, b, t); i < width && row >= 0) {
#pragma unroll
          for (int n = 0; n < N; ++n)
            v[n] = read_input<In>(x[n], element_at(p, per_row_mask, n, width, row, h, i));
        }
        store(r, i, v);
      }
      return;
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int idx = threadIdx.x + j * TcConfig::kIntraThreads;
      int r, i;
      place(idx, r, i);
      float wide[N][kVec];
#pragma unroll
      for (int n = 0; n < N; ++n) Piece<In>::widen(raw[n][j], wide[n]);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        float v[N];
#pragma unroll
        for (int n = 0; n < N; ++n) v[n] = wide[n][e];
        store(r, i + e, v);
      }
    }
  }
};

// Rows t0 .. t0 + 63 of two token tensors x and y (RowPieces: every load of
// both in flight before either is used, per_row as there): store(r, i, x, y).
template <class In, int Width, class Store>
__device__ void load_row_pairs(const DeviceProblem& p, const void* x, const void* y, int width,
                               int b, int h, int t0, Store store, unsigned per_row = 0) {
  const void* const tensors[2] = {x, y};
  RowPieces<In, Width, 2> pieces;
  pieces.fetch(p, tensors, width, b, h, t0, per_row);
  pieces.store(p, tensors, width, b, h, t0,
               [&](int r, int i, const float(&v)[2]) { store(r, i, v[0], v[1]); });
}

// G_r = sum_{i<=r} g_i in place, per channel (a thread each) of the chunk's
// rows of g at row stride ld, in row order (exclusive under the
// cumulative_decay_off_by_one fault). With `wide` (zero before), sets bit R of
// *wide where some channel's G spans more than kSpanLimit (its largest less its
// least) in 16-row block R: the block's decays are wide, and its diagonal
// block takes them pair by pair (diagonal_on_tensor_cores).
constexpr float kSpanLimit = TcConfig::kSpanLimit;
__device__ inline void cumulative_decay(const DeviceProblem& p, float* G, int ld, int width,
                                        unsigned* wide = nullptr) {
  for (int i = threadIdx.x; i < width; i += blockDim.x) {
    float running = 0.0f;
    unsigned blocks = 0;
    for (int blk = 0; blk < kBlocks; ++blk) {
      float g[kBlock];  // the block's 16 loads in flight together, then the serial sums
#pragma unroll
      for (int r = 0; r < kBlock; ++r) g[r] = G[(kBlock * blk + r) * ld + i];
      float low = 0.0f, high = 0.0f;
#pragma unroll
      for (int r = 0; r < kBlock; ++r) {
        float stored;
        if (DP_FAULT(p.faults, cumulative_decay_off_by_one)) {
          stored = running;
          running += g[r];
        } else {
          running += g[r];
          stored = running;
        }
        G[(kBlock * blk + r) * ld + i] = stored;
        low = r == 0 ? stored : fminf(low, stored);
        high = r == 0 ? stored : fmaxf(high, stored);
      }
      if (!(high - low <= kSpanLimit)) blocks |= 1u << blk;
    }
    if (wide && blocks) atomicOr(wide, blocks);
  }
}

// ---------------------------------------------------------------------------
// fwd.intra
// ---------------------------------------------------------------------------

// fwd.intra's blocks (R, I) of A and M, R * 4 + I, one or two a warp (-1: none):
// each diagonal block (0, 5, 10, 15) a warp of its own, since its operands in
// two parts take three products for one (the phase lasts as long as its
// busiest warp); the six below the diagonal two or one to each other warp.
__constant__ int kIntraTasks[TcConfig::kIntraThreads / 32][2] = {
    {0, -1}, {5, -1}, {10, -1}, {15, -1}, {12, 4}, {13, 8}, {14, -1}, {9, -1}};

// Whether diagonal block R's decays go through the reference row on the
// tensor cores: cumulative_decay left its bit of `wide` clear.
__device__ inline bool diagonal_on_tensor_cores(unsigned wide, int R) { return !(wide >> R & 1u); }

// Two consecutive bf16 of shared memory, widened.
__device__ inline float2 pair(const bf16* at) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(at));
}

// fwd.intra's shared memory: four regions, each reused once its first tenant
// is read for the last time, so that two blocks fit an SM (the phases of one
// block's chunk are short and serial; a second block fills the gaps).
//   R1  Q (bf16 [64][KP+8])                 -> (B*K*exp G)^T (bf16 [KP][72])
//   R2  K, B (bf16 [64][KP+8] each)         -> (W*V)^T (bf16 [VP][72])
//   R3  G (f32 [64][KP+1])                  -> Tinv (f32 [64][65]), its block temporaries
//   R4  A (f32 [64][65])                    -> Tinv (bf16 [64][72])
template <int KP, int VP>
struct IntraLayout {
  static constexpr int kH = KP + kPad;   // bf16 rows of a chunk's channels
  static constexpr int kF = KP + 1;      // f32 rows of G (odd: no bank conflicts)
  static constexpr int kT = kC + 1;      // f32 rows of A and Tinv
  static constexpr int kY = kBlock + 1;  // the 16 x 16 temporaries of Tinv's blocks
  static constexpr int kB = kC + kPad;   // bf16 rows of 64
  static constexpr std::size_t round16(std::size_t n) { return (n + 15) / 16 * 16; }
  static constexpr std::size_t max(std::size_t a, std::size_t b) { return a > b ? a : b; }
  static constexpr std::size_t kR1 = round16(max(2 * kC * kH, 2 * KP * kB));
  static constexpr std::size_t kR2 = round16(max(2 * 2 * kC * kH, 2 * VP * kB));
  static constexpr std::size_t kR3 =
      round16(max(4 * kC * kF, 4 * (kC * kT + kBlocks * (kBlocks - 1) / 2 * kBlock * kY)));
  static constexpr std::size_t kR4 = round16(max(4 * kC * kT, 2 * kC * kB));
  static constexpr std::size_t kBytes = kR1 + kR2 + kR3 + kR4;
};
// Whether two blocks of `bytes` of shared memory each (dynamic and static) fit
// an SM of sm_90: 228 KB an SM, 1 KB of it reserved a block. kWideFlagBytes:
// the static `wide` flag of fwd.intra and tc_bwd_tokens, as ptxas counts it.
constexpr bool two_blocks_fit(std::size_t bytes) { return 2 * (bytes + 1024) <= 228 * 1024; }
constexpr std::size_t kWideFlagBytes = 16;
static_assert(two_blocks_fit(IntraLayout<128, 128>::kBytes + kWideFlagBytes),
              "two fwd.intra blocks fit an SM");

// fwd.intra's variants (the bits of tc_fwd_intra's Variant; intra_variant):
//   kIntraShares (DELTAPROOF_TC_INTRA_SHARES=1, the default): the work between A's and M's
//     tasks and the barrier after them goes to the warps with the least of
//     those tasks, not to every thread alike: Qg to warps 6 and 7 (one task
//     each), Kdec^T to warps 0-3 (a diagonal task each), before the barrier,
//     and only (B*K*exp G)^T, which takes Q's place, after it; warps 4 and 5
//     (two tasks each) take none. The same sums element by element: the same
//     bits.
//   kIntraTinvTc (DELTAPROOF_TC_INTRA_TINV=1, the default): Tinv's blocks below the
//     diagonal on the tensor cores, a block a warp, each operand in two bf16
//     parts (about 16 significant bits, as A's and M's diagonal blocks), not
//     f32 dot products: not the same bits, Tinv as f32's to within its rounding
//     to bf16 after.
constexpr unsigned kIntraShares = 1, kIntraTinvTc = 2, kIntraVariants = 4;

template <class In, int KP, int VP, unsigned Variant = 0>
__global__ void __launch_bounds__(TcConfig::kIntraThreads, 2)
    tc_fwd_intra(DeviceProblem p, TcScratch s, int num_chunks) {
  constexpr bool Shares = Variant & kIntraShares, TinvTc = Variant & kIntraTinvTc;
  using L = IntraLayout<KP, VP>;
  extern __shared__ __align__(16) unsigned char shared[];
  unsigned char* R1 = shared;
  unsigned char* R2 = R1 + L::kR1;
  unsigned char* R3 = R2 + L::kR2;
  unsigned char* R4 = R3 + L::kR3;
  bf16* Q = reinterpret_cast<bf16*>(R1);       // q, [r][k]
  bf16* BKET = reinterpret_cast<bf16*>(R1);    // (B*K*exp G)^T, [k][i], after Q
  bf16* Kk = reinterpret_cast<bf16*>(R2);      // k, [r][k]
  bf16* Bg = Kk + kC * L::kH;                  // b, [r][k]
  bf16* WVT = reinterpret_cast<bf16*>(R2);     // (W*V)^T, [v][i], after K and B
  float* G = reinterpret_cast<float*>(R3);     // g, then G = cumsum g, [r][k]
  float* Tinv = reinterpret_cast<float*>(R3);  // [r][i], after G
  float* Y = Tinv + kC * L::kT;                // [block below the diagonal][16][17]
  float* A = reinterpret_cast<float*>(R4);     // [r][i]
  bf16* Tb = reinterpret_cast<bf16*>(R4);      // Tinv in bf16, [r][i], after A

  const int c = blockIdx.x, bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  const int t0 = c * kC, K = p.K, V = p.V;
  if (t0 >= seq_length(p, b)) return;  // past a shorter packed sequence's end
  const std::size_t n = slab(bh, num_chunks, c);
  // the block's threads as a constant, so that loops over them unroll
  constexpr int kThreads = TcConfig::kIntraThreads;
  const int tid = threadIdx.x, warp = tid / 32, lane_id = tid % 32;
  const mma::Lane l = mma::lane();

  // The chunk's rows, zeros past T and past K (q, k, b in bf16: the class's
  // operands).
  __shared__ unsigned wide;  // the 16-row blocks whose decays are wide (cumulative_decay)
  if (tid == 0) wide = 0;
  // bf16 inputs: q, k, g and b in one wait on device memory, and w and v asked
  // for as soon as those are stored, held in registers until (W*V)^T's turn
  // (the wait on them then gone); f32 inputs, twice the registers: two
  // tensors at a time, each pair when its turn comes.
  constexpr bool kEarly = sizeof(In) == 2;
  const void* const wv[2] = {gate(p, p.w), p.v};
  RowPieces<In, VP, kEarly ? 2 : 1, true> wv_early;  // by columns: stored transposed
  if constexpr (kEarly) {
    const void* const qkgb[4] = {p.q, p.k, p.g, gate(p, p.b)};
    RowPieces<In, KP, 4> rows;
    rows.fetch(p, qkgb, K, b, h, t0, per_row(p, 3));
    // q, k and b are bf16 as read: whole pieces of them are stored as they
    // are (to_bf16 of a widened bf16 is the value itself), g widened
    const bool whole = rows.each_piece(K, [&](int r, int i, const uint4(&x)[4]) {
      *reinterpret_cast<uint4*>(Q + r * L::kH + i) = x[0];
      *reinterpret_cast<uint4*>(Kk + r * L::kH + i) = x[1];
      *reinterpret_cast<uint4*>(Bg + r * L::kH + i) = x[3];
      float g[Piece<In>::kVec];
      Piece<In>::widen(x[2], g);
#pragma unroll
      for (int e = 0; e < Piece<In>::kVec; ++e) G[r * L::kF + i + e] = g[e];
    });
    if (!whole)
      rows.store(p, qkgb, K, b, h, t0, [&](int r, int i, const float(&x)[4]) {
        Q[r * L::kH + i] = to_bf16(x[0]), Kk[r * L::kH + i] = to_bf16(x[1]);
        G[r * L::kF + i] = x[2], Bg[r * L::kH + i] = to_bf16(x[3]);
      });
    wv_early.fetch(p, wv, V, b, h, t0, per_row(p, 0));
  } else {
    load_row_pairs<In, KP>(p, p.q, p.k, K, b, h, t0, [&](int r, int i, float q, float k) {
      Q[r * L::kH + i] = to_bf16(q), Kk[r * L::kH + i] = to_bf16(k);
    });
    load_row_pairs<In, KP>(
        p, p.g, gate(p, p.b), K, b, h, t0,
        [&](int r, int i, float g, float bb) {
          G[r * L::kF + i] = g, Bg[r * L::kH + i] = to_bf16(bb);
        },
        per_row(p, 1));
  }
  __syncthreads();

  cumulative_decay(p, G, L::kF, KP, &wide);
  __syncthreads();

  // The chunk-end log-decay G_C (rows past T hold g = 0, so the last row's G is
  // the last real row's); exp(G_C) in its place under double_exp_chunk_decay.
  auto chunk_end = [&](int i) {
    const float end = G[(kC - 1) * L::kF + i];
    return DP_FAULT(p.faults, double_exp_chunk_decay) ? expf(end) : end;
  };
  for (int i = tid; i < KP; i += kThreads) s.decay_end[n * KP + i] = expf(chunk_end(i));

  // A (strictly lower) and M (lower) by 16-row blocks (R, I), I <= R, on the
  // tensor cores through the reference row n = 16 R:
  //   A_RI = (B*K*e^(G - G_n))_R (K*e^(G_n - G))_I^T,
  //   M_RI = (scale Q*e^(G - G_n))_R (K*e^(G_n - G))_I^T.
  // Below the diagonal (I < R) both factors are <= 1 for g <= 0. A diagonal
  // block (I = R) takes its factors the same way where its decays are narrow
  // (no channel's G spans more than kSpanLimit in the block, so that neither
  // factor leaves bf16's range; diagonal_on_tensor_cores), its operands in two
  // parts, and pair by pair in f32 below where they are not.
  const float scale = p.scale;
  bf16* M = s.M + n * kC * kC;
  const unsigned wide_blocks = wide;
  for (int task = 0; task < 2; ++task) {
    const int RI = kIntraTasks[warp][task], R = RI / kBlocks, I = RI % kBlocks, ref = kBlock * R;
    if (RI < 0 || (I == R && !diagonal_on_tensor_cores(wide_blocks, R))) continue;
    const bool split = I == R;  // the diagonal block: every operand in two parts (pack_rest)
    Acc a[2], m[2];
    for (int ks = 0; ks < KP / mma::kK; ++ks) {
      FragA fa, fq, fa_rest{}, fq_rest{};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = ref + l.g + (j & 1) * 8, col = ks * mma::kK + 2 * l.t + (j >> 1) * 8;
        const float* Gr = G + r * L::kF + col;  // f32 rows of odd stride: element by element
        const float* Gn = G + ref * L::kF + col;
        const float e0 = __expf(Gr[0] - Gn[0]), e1 = __expf(Gr[1] - Gn[1]);
        const float2 kr = pair(Kk + r * L::kH + col), br = pair(Bg + r * L::kH + col);
        const float2 qr = pair(Q + r * L::kH + col);
        const float a0 = br.x * kr.x * e0, a1 = br.y * kr.y * e1;
        const float q0 = scale * qr.x * e0, q1 = scale * qr.y * e1;
        fa.r[j] = mma::pack(a0, a1);
        fq.r[j] = mma::pack(q0, q1);
        if (split) {
          fa_rest.r[j] = mma::pack_rest(a0, a1, fa.r[j]);
          fq_rest.r[j] = mma::pack_rest(q0, q1, fq.r[j]);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        FragB fk, fk_rest{};
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int i = kBlock * I + 8 * nt + l.g, col = ks * mma::kK + 2 * l.t + 8 * j;
          const float* Gi = G + i * L::kF + col;
          const float* Gn = G + ref * L::kF + col;
          const float2 ki = pair(Kk + i * L::kH + col);
          const float k0 = ki.x * __expf(Gn[0] - Gi[0]), k1 = ki.y * __expf(Gn[1] - Gi[1]);
          fk.r[j] = mma::pack(k0, k1);
          if (split) fk_rest.r[j] = mma::pack_rest(k0, k1, fk.r[j]);
        }
        mma::mma(a[nt], fa, fk);
        mma::mma(m[nt], fq, fk);
        // hi hi + hi rest + rest hi, the rest's product below f32's sum: mma::mma_split's
        // order, written out with A's and M's products interleaved (through mma_split
        // the kernel's code differed and fwd.intra measured 1-3% slower: reports/gpu/6997722-split)
        if (split) {
          mma::mma(a[nt], fa, fk_rest);
          mma::mma(a[nt], fa_rest, fk);
          mma::mma(m[nt], fq, fk_rest);
          mma::mma(m[nt], fq_rest, fk);
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int r = ref + mma::acc_row(l, e), i = kBlock * I + 8 * nt + mma::acc_col(l, e);
        A[r * L::kT + i] = a[nt].c[e];  // read only below the diagonal
        A[r * L::kT + i + 1] = a[nt].c[e + 1];
        const bool below = I < R;
        *reinterpret_cast<__nv_bfloat162*>(M + r * kC + i) = __floats2bfloat162_rn(
            below || i <= r ? m[nt].c[e] : 0.0f, below || i + 1 <= r ? m[nt].c[e + 1] : 0.0f);
      }
  }
  // The wide diagonal blocks, pair by pair in f32 (a pair a thread):
  // A_ri = sum_k b_r k_r k_i e^(G_r - G_i) (i < r) and
  // M_ri = scale sum_k q_r k_i e^(G_r - G_i) (i <= r).
  for (int blk = 0; blk < kBlocks; ++blk) {
    if (diagonal_on_tensor_cores(wide_blocks, blk)) continue;
    for (int idx = tid; idx < kBlock * kBlock; idx += kThreads) {
      const int r = kBlock * blk + idx / kBlock, i = kBlock * blk + idx % kBlock;
      float a = 0.0f, m = 0.0f;
      if (i <= r) {
#pragma unroll 4
        for (int k = 0; k < KP; k += 2) {  // channels past K are zeros
          const float2 kr = pair(Kk + r * L::kH + k), br = pair(Bg + r * L::kH + k);
          const float2 qr = pair(Q + r * L::kH + k), ki = pair(Kk + i * L::kH + k);
          const float e0 = ki.x * __expf(G[r * L::kF + k] - G[i * L::kF + k]);
          const float e1 = ki.y * __expf(G[r * L::kF + k + 1] - G[i * L::kF + k + 1]);
          a += br.x * kr.x * e0 + br.y * kr.y * e1;
          m += qr.x * e0 + qr.y * e1;
        }
      }
      A[r * L::kT + i] = i < r ? a : 0.0f;
      M[r * kC + i] = to_bf16(scale * m);
    }
  }
  // The blocks above the diagonal of M are zeros: 16 bytes a thread, a block's
  // row two of them (blocks (R, I), R < I, in row order).
  constexpr int kAbove = kBlocks * (kBlocks - 1) / 2, kRowPieces = kBlock * 2 / 16;
  for (int idx = tid; idx < kAbove * kBlock * kRowPieces; idx += kThreads) {
    int R = 0, rest = idx / (kBlock * kRowPieces);
    while (rest >= kBlocks - 1 - R) rest -= kBlocks - 1 - R, ++R;
    const int I = R + 1 + rest, e = idx % (kBlock * kRowPieces);
    const int r = kBlock * R + e / kRowPieces, i = kBlock * I + e % kRowPieces * 8;
    *reinterpret_cast<uint4*>(M + r * kC + i) = make_uint4(0, 0, 0, 0);
  }

  // What the later stages read: Qg = scale Q*exp G, a pair of channels a
  // thread (consecutive threads, consecutive pairs).
  // Qg: threads [first, first + count) of the block (every thread, or under
  // Shares warps 6 and 7).
  bf16* Qg = s.Qg + n * kC * KP;
  auto store_qg = [&](auto first, auto count) {
    constexpr int kFirst = decltype(first)::value, kCount = decltype(count)::value;
    if (tid < kFirst || tid >= kFirst + kCount) return;
    for (int idx = tid - kFirst; idx < kC * KP / 2; idx += kCount) {
      const int r = idx / (KP / 2), i = 2 * (idx % (KP / 2));
      const float2 q = pair(Q + r * L::kH + i);
      const float* Gr = G + r * L::kF + i;
      *reinterpret_cast<__nv_bfloat162*>(Qg + r * KP + i) =
          __floats2bfloat162_rn(scale * q.x * __expf(Gr[0]), scale * q.y * __expf(Gr[1]));
    }
  };
  // Kdec^T = (K*exp(G_C - G))^T and/or (B*K*exp G)^T (the operand of Wt,
  // where Q was), by threads [first, first + count): two rows and two channels
  // a thread, so that each channel's two rows are one bf16x2 store of the
  // transposed tiles; a warp 16 rows by 4 pairs of channels (its global stores
  // whole 32-byte sectors, its shared stores one to a bank, its reads of K and
  // B at most two to a bank; the even row's G one 8-byte read).
  bf16* KdecT = s.KdecT + n * KP * kC;
  auto store_kdec = [&](auto first, auto count, bool kdec, bool bket) {
    constexpr int kFirst = decltype(first)::value, kCount = decltype(count)::value;
    if (tid < kFirst || tid >= kFirst + kCount) return;
    for (int idx = tid - kFirst; idx < kC * KP / 4; idx += kCount) {
      const int tile = idx / 32, lane = idx % 32;
      const int r = 2 * (kBlock / 2 * (tile % kBlocks) + lane % 8);
      const int i = 2 * (4 * (tile / kBlocks) + lane / 8);
      const float2 k0 = pair(Kk + r * L::kH + i), k1 = pair(Kk + (r + 1) * L::kH + i);
      const float2 g0 = *reinterpret_cast<const float2*>(G + r * L::kF + i);  // r even: aligned
      const float* G1 = G + (r + 1) * L::kF + i;
      const float2 g1 = make_float2(G1[0], G1[1]);
      if (kdec) {
        const float e0 = chunk_end(i), e1 = chunk_end(i + 1);
        *reinterpret_cast<__nv_bfloat162*>(KdecT + i * kC + r) =
            __floats2bfloat162_rn(k0.x * __expf(e0 - g0.x), k1.x * __expf(e0 - g1.x));
        *reinterpret_cast<__nv_bfloat162*>(KdecT + (i + 1) * kC + r) =
            __floats2bfloat162_rn(k0.y * __expf(e1 - g0.y), k1.y * __expf(e1 - g1.y));
      }
      if (bket) {
        const float2 b0 = pair(Bg + r * L::kH + i), b1 = pair(Bg + (r + 1) * L::kH + i);
        *reinterpret_cast<__nv_bfloat162*>(BKET + i * L::kB + r) =
            __floats2bfloat162_rn(b0.x * k0.x * __expf(g0.x), b1.x * k1.x * __expf(g1.x));
        *reinterpret_cast<__nv_bfloat162*>(BKET + (i + 1) * L::kB + r) =
            __floats2bfloat162_rn(b0.y * k0.y * __expf(g0.y), b1.y * k1.y * __expf(g1.y));
      }
    }
  };
  using Every = std::integral_constant<int, kThreads>;
  using Zero = std::integral_constant<int, 0>;
  static_assert(kThreads == 8 * 32, "Shares' warps are kIntraTasks' eight");
  if constexpr (Shares) {
    store_qg(std::integral_constant<int, 6 * 32>{}, std::integral_constant<int, 2 * 32>{});
    store_kdec(Zero{}, std::integral_constant<int, 4 * 32>{}, true, false);
    __syncthreads();  // Q is read for the last time
    store_kdec(Zero{}, Every{}, false, true);
  } else {
    store_qg(Zero{}, Every{});
    __syncthreads();  // Q is read for the last time
    store_kdec(Zero{}, Every{}, true, true);
  }
  __syncthreads();  // K, B and G are read for the last time

  // (W*V)^T where K and B were; Tinv = (I + A)^-1, unit lower triangular, where
  // G was: the diagonal blocks by forward substitution, a column per lane
  // (warps 0-3); the blocks above the diagonal are zeros (warps 4-7).
  auto store_wv = [&](int r, int j, float w, float v) { WVT[j * L::kB + r] = to_bf16(w * v); };
  if constexpr (kEarly)
    wv_early.store(p, wv, V, b, h, t0,
                   [&](int r, int j, const float(&x)[2]) { store_wv(r, j, x[0], x[1]); });
  else
    load_row_pairs<In, VP>(p, gate(p, p.w), p.v, V, b, h, t0, store_wv, per_row(p, 0));
  if (warp < kBlocks) {
    if (lane_id < kBlock) {
      const int base = kBlock * warp;
      float x[kBlock];
#pragma unroll
      for (int r = 0; r < kBlock; ++r) {
        float v = r == lane_id ? 1.0f : 0.0f;
#pragma unroll
        for (int i = 0; i < r; ++i) v -= A[(base + r) * L::kT + base + i] * x[i];
        x[r] = v;
      }
#pragma unroll
      for (int r = 0; r < kBlock; ++r) Tinv[(base + r) * L::kT + base + lane_id] = x[r];
    }
  } else {
    for (int idx = tid - kBlocks * 32; idx < kC * kC; idx += kThreads - kBlocks * 32) {
      const int r = idx / kC, i = idx % kC;
      if (i / kBlock > r / kBlock) Tinv[r * L::kT + i] = 0.0f;
    }
  }
  __syncthreads();
  // The blocks below the diagonal: Tinv_RI = -Tinv_RR Y_RI, Y_RI = sum_{J=I}^{R-1}
  // A_RJ Tinv_JI, a thread four adjacent columns of a row (one shared load of A
  // or Tinv_RR for four products). In rounds k = 1, 2, 3: every block with
  // R - I >= k adds its sum's next 16 terms (J = I + k - 1, whole since round
  // k - 1), then the blocks with R - I = k finish. Each Y_RI is the same sums in
  // the same order (j ascending, its partial sum kept in Y between rounds) as
  // one diagonal of blocks at a time gave, but the blocks far from the
  // diagonal start their sums while the near ones finish (the longest sum, 48
  // terms, was 64 of the phase's 144 serial steps behind a barrier).
  constexpr int kQ = 4, kRowQuads = kBlock / kQ, kItems = kBlock * kRowQuads;
  constexpr int kBelow = kBlocks * (kBlocks - 1) / 2;  // Y's slots: by R - I, then I
  auto first_slot = [](int d) { return (d - 1) * (2 * kBlocks - d) / 2; };
  auto block_of = [&](int slot, int& R, int& I) {
    int d = 1;
    while (slot >= first_slot(d + 1)) ++d;
    I = slot - first_slot(d), R = I + d;
  };
  if constexpr (TinvTc) {
    // On the tensor cores (kIntraTinvTc): warp w < 6 takes slot w's block
    // (R, I) through every round, transposed so that its sum leaves the
    // accumulators as the next product's A operand: round k adds
    // Y_RI^T += Tinv_JI^T A_RJ^T, J = I + k - 1 (R - I >= k), and the blocks
    // with R - I = k finish, Tinv_RI^T = -Y_RI^T Tinv_RR^T. Every operand in
    // two bf16 parts, hi hi + hi rest + rest hi (mma::pack_split, mma_split).
    int R = 0, I = 0;
    const bool mine = warp < kBelow;
    if (mine) block_of(warp, R, I);
    // A fragment: element (m, k) of a 16 x 16 tile is at(m, k); a B
    // fragment's (k, n) at(n, k), n in n0 + [0, 8).
    auto split_a = [&](auto at, FragA& hi, FragA& rest) {
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int m = l.g + (j & 1) * 8, k = 2 * l.t + (j >> 1) * 8;
        mma::pack_split(at(m, k), at(m, k + 1), hi.r[j], rest.r[j]);
      }
    };
    auto split_b = [&](auto at, int n0, FragB& hi, FragB& rest) {
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const int n = n0 + l.g, k = 2 * l.t + 8 * j;
        mma::pack_split(at(n, k), at(n, k + 1), hi.r[j], rest.r[j]);
      }
    };
    Acc y[2];  // Y_RI^T: rows i of block I, columns r of block R
    for (int k = 1; k < kBlocks; ++k) {
      if (mine && R - I >= k) {
        const int J = I + k - 1;
        FragA t, t_rest;  // Tinv_JI^T: (i, j) is Tinv[16 J + j][16 I + i]
        split_a([&](int i, int j) { return Tinv[(kBlock * J + j) * L::kT + kBlock * I + i]; }, t,
                t_rest);
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          FragB a, a_rest;  // A_RJ^T: (j, r) is A[16 R + r][16 J + j]
          split_b([&](int r, int j) { return A[(kBlock * R + r) * L::kT + kBlock * J + j]; },
                  8 * nt, a, a_rest);
          mma::mma_split(y[nt], t, t_rest, a, a_rest);
        }
      }
      if (mine && R - I == k) {
        // Y^T's accumulators as an A fragment (tile nt holds its columns
        // 8 nt + [0, 8), c[0..1] row g, c[2..3] row g + 8: registers 2 nt and
        // 2 nt + 1 of the fragment)
        FragA yt, yt_rest;
#pragma unroll
        for (int j = 0; j < 4; ++j)
          mma::pack_split(y[j / 2].c[2 * (j % 2)], y[j / 2].c[2 * (j % 2) + 1], yt.r[j],
                          yt_rest.r[j]);
        Acc x[2];
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          FragB tr, tr_rest;  // Tinv_RR^T: (r', r) is Tinv[16 R + r][16 R + r']
          split_b([&](int r, int r2) { return Tinv[(kBlock * R + r) * L::kT + kBlock * R + r2]; },
                  8 * nt, tr, tr_rest);
          mma::mma_split(x[nt], yt, yt_rest, tr, tr_rest);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            Tinv[(kBlock * R + 8 * nt + mma::acc_col(l, e)) * L::kT + kBlock * I +
                 mma::acc_row(l, e)] = -x[nt].c[e];
      }
      __syncthreads();
    }
  } else {
    for (int k = 1; k < kBlocks; ++k) {
      const int first = first_slot(k);
      for (int idx = tid; idx < (kBelow - first) * kItems; idx += kThreads) {
        const int slot = first + idx / kItems, rl = idx / kRowQuads % kBlock;
        const int il = idx % kRowQuads * kQ;
        int R, I;
        block_of(slot, R, I);
        float* y = Y + (slot * kBlock + rl) * L::kY + il;
        float sum[kQ] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (k > 1) {
#pragma unroll
          for (int e = 0; e < kQ; ++e) sum[e] = y[e];
        }
        const int J = I + k - 1;
#pragma unroll 4
        for (int j = kBlock * J; j < kBlock * (J + 1); ++j) {
          const float a = A[(kBlock * R + rl) * L::kT + j];
#pragma unroll
          for (int e = 0; e < kQ; ++e) sum[e] += a * Tinv[j * L::kT + kBlock * I + il + e];
        }
#pragma unroll
        for (int e = 0; e < kQ; ++e) y[e] = sum[e];
      }
      __syncthreads();
      for (int idx = tid; idx < (first_slot(k + 1) - first) * kItems; idx += kThreads) {
        const int slot = first + idx / kItems, rl = idx / kRowQuads % kBlock;
        const int il = idx % kRowQuads * kQ;
        int R, I;
        block_of(slot, R, I);
        float x[kQ] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int m = 0; m < kBlock; ++m) {
          const float t = Tinv[(kBlock * R + rl) * L::kT + kBlock * R + m];
#pragma unroll
          for (int e = 0; e < kQ; ++e) x[e] -= t * Y[(slot * kBlock + m) * L::kY + il + e];
        }
#pragma unroll
        for (int e = 0; e < kQ; ++e) Tinv[(kBlock * R + rl) * L::kT + kBlock * I + il + e] = x[e];
      }
      __syncthreads();
    }
  }

  // Tinv in bf16, the operand of the next products, where A was (and for the
  // backward in the scratch), a pair of columns a thread.
  for (int idx = tid; idx < kC * kC / 2; idx += kThreads) {
    const int r = 2 * idx / kC, i = 2 * idx % kC;
    const __nv_bfloat162 t = __floats2bfloat162_rn(Tinv[r * L::kT + i], Tinv[r * L::kT + i + 1]);
    *reinterpret_cast<__nv_bfloat162*>(Tb + r * L::kB + i) = t;
    *reinterpret_cast<__nv_bfloat162*>(s.Tinv + n * kC * kC + r * kC + i) = t;
  }
  __syncthreads();

  // Ut = Tinv (W*V), Wt = Tinv (B*K*exp G): warp w takes the 16 rows of block
  // w % 4 and half the columns; Tinv's row block R reads its column blocks <= R.
  const int mt = warp % kBlocks, half = warp / kBlocks;
  auto product = [&](auto columns, const bf16* operand_t, bf16* out) {
    constexpr int kCols = decltype(columns)::value, kTiles = kCols / 2 / mma::kN;
    Acc acc[kTiles];
    mma::accumulate(
        acc, 0, mt + 1, [&](int ks) { return mma::load_a(Tb, L::kB, kBlock * mt, ks * mma::kK); },
        [&](int ks, int j) {
          return mma::load_b(operand_t, L::kB, half * kCols / 2 + j * mma::kN, ks * mma::kK);
        });
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; e += 2) {
        const int r = kBlock * mt + mma::acc_row(l, e),
                  col = half * kCols / 2 + j * mma::kN + mma::acc_col(l, e);
        *reinterpret_cast<__nv_bfloat162*>(out + r * kCols + col) =
            __floats2bfloat162_rn(acc[j].c[e], acc[j].c[e + 1]);
      }
  };
  product(std::integral_constant<int, VP>{}, WVT, s.Ut + n * kC * VP);
  product(std::integral_constant<int, KP>{}, BKET, s.Wt + n * kC * KP);
}

// ---------------------------------------------------------------------------
// fwd.inter: the state recurrence over chunks, a tile of VT state columns
// per block. Warp w holds rows [w KP/4, (w+1) KP/4) of S in registers (f32).
// ---------------------------------------------------------------------------

// The (sequence, head) a state kernel's grid row y walks (fwd.inter, bwd.bk2:
// each block walks its sequence's chunks in turn, so a packed batch's longest
// sequence sets the kernel's length). With packed sequences, at most
// kOrderedSequences of them, the rows take the sequences longest first (ties by
// index) so that the longest walks start in the first wave, not wherever the
// caller put them: a scheduling order (longest processing time first), the
// same bits. A simulation of 16 packed sequences of 293..4092 tokens (1024
// blocks, 264 at a time) gives the slowest slot 171 chunk steps this way, 206
// in index order. Every thread of the block calls it (it waits at a barrier).
// longest_first false (DELTAPROOF_TC_STATE_ORDER=1, state_order): index order.
constexpr int kOrderedSequences = 64;
__device__ inline int state_row(const DeviceProblem& p, int y, bool longest_first) {
  if (!longest_first || !p.cu_seqlens || p.B > kOrderedSequences) return y;
  __shared__ int sequence;
  const int rank = y / p.H;
  for (int b = threadIdx.x; b < p.B; b += blockDim.x) {
    const int length = seq_length(p, b);
    int ahead = 0;  // the sequences before b in the order
    for (int o = 0; o < p.B; ++o) {
      const int other = seq_length(p, o);
      ahead += other > length || (other == length && o < b);
    }
    if (ahead == rank) sequence = b;
  }
  __syncthreads();
  return sequence * p.H + y % p.H;
}

// A Rows x Cols tile of bf16 (Cols a multiple of 8) between global memory
// (row stride from_ld or to_ld) and shared memory (row stride ld), in 16-byte
// pieces, Threads threads each a fixed share: its first piece's row and
// column once, then rows a constant apart (unrolled; no division or 64-bit
// index arithmetic a piece). In fwd.inter's chunk walk the copies are the
// recurrence's own instructions: issued by every thread in a loop over
// blockDim.x they were 42% of its warps' stall samples at B1 T32768 (ncu,
// reports/gpu/09f2abb).
template <int Threads, int Rows, int Cols>
struct TilePieces {
  static constexpr int kPerRow = Cols / 8, kRowStep = Threads / kPerRow;
  static constexpr int kSteps = (Rows + kRowStep - 1) / kRowStep;
  static_assert(Cols % 8 == 0 && Threads % kPerRow == 0, "a row is whole pieces, rows whole");
  // body(r, x) for each of this thread's pieces: row r, first column x.
  template <class Body>
  static __device__ void each(Body body) {
    const int r0 = static_cast<int>(threadIdx.x) / kPerRow;
    const int x = static_cast<int>(threadIdx.x) % kPerRow * 8;
#pragma unroll
    for (int j = 0; j < kSteps; ++j)
      if (Rows % kRowStep == 0 || r0 + j * kRowStep < Rows) body(r0 + j * kRowStep, x);
  }
};

// Global to shared by cp.async (not committed).
template <int Threads, int Rows, int Cols>
__device__ inline void copy_tile_async(bf16* to, int ld, const bf16* from, int from_ld) {
  TilePieces<Threads, Rows, Cols>::each(
      [&](int r, int x) { mma::copy_async_16(to + r * ld + x, from + r * from_ld + x); });
}

// Shared to global.
template <int Threads, int Rows, int Cols>
__device__ inline void store_tile(bf16* to, int to_ld, const bf16* from, int ld) {
  TilePieces<Threads, Rows, Cols>::each([&](int r, int x) {
    *reinterpret_cast<uint4*>(to + r * to_ld + x) =
        *reinterpret_cast<const uint4*>(from + r * ld + x);
  });
}

// A chunk's KP chunk-end decays (f32) by cp.async (not committed), a 16-byte
// piece a thread.
template <int Threads, int KP>
__device__ inline void copy_decay_end_async(float* to, const float* from) {
  static_assert(KP / 4 <= Threads, "a thread a piece of the chunk-end decays");
  if (threadIdx.x < KP / 4) mma::copy_async_16(to + 4 * threadIdx.x, from + 4 * threadIdx.x);
}

// A warp's part of a KP x VT state tile in registers (f32): fwd.inter's S and
// bwd.bk2's dS. Warp w holds rows [w KP/4, (w+1) KP/4).
template <int KP, int VT>
struct StateTile {
  static constexpr int kRows = KP / 4, kMT = kRows / mma::kM;
  static constexpr int kNT = VT / mma::kN;
  Acc a[kMT][kNT];
  // body(element, k, j) for each of the warp's elements: row k of the state,
  // column j of the block's tile.
  template <class Body>
  __device__ void for_each(Body body) {
    const int warp = threadIdx.x / 32;
    const mma::Lane l = mma::lane();
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          body(a[mt][nt].c[e], warp * kRows + mt * mma::kM + mma::acc_row(l, e),
               nt * mma::kN + mma::acc_col(l, e));
  }
};

// Stages: the buffers of a chunk's operands, chunks c + 1 .. c + Stages - 1
// in flight while c is worked on (inter_stages).
template <int KP, int VT, int Stages = 2>
struct StateLayout {
  static_assert(Stages == 2 || Stages == 3, "two or three operand buffers");
  static constexpr int kVT = VT;
  static constexpr int kW = KP + kPad;   // rows of Wt and S^T
  static constexpr int kD = kC + kPad;   // rows of Kdec^T and U^T
  static constexpr int kU = kVT + kPad;  // rows of the Ut tile
  static constexpr std::size_t kBufferBytes =
      sizeof(bf16) * (kC * kW + KP * kD + kC * kU) + sizeof(float) * KP;
  static constexpr std::size_t kBytes = Stages * kBufferBytes + sizeof(bf16) * kVT * (kW + kD);
};

template <int KP, int VP, int VT, int Stages>
__global__ void __launch_bounds__(TcConfig::kStateThreads)
    tc_fwd_state(DeviceProblem p, TcScratch s, int num_chunks, bool longest_first) {
  using L = StateLayout<KP, VT, Stages>;
  constexpr int kVT = L::kVT, kRows = KP / 4, kMT = kRows / mma::kM, kNT = kVT / mma::kN;
  extern __shared__ __align__(16) unsigned char shared[];
  // Stages buffers of a chunk's operands, chunk c's in buffer c % Stages:
  // chunks c + 1 .. c + Stages - 1 arrive while c is used.
  struct Buffer {
    bf16 *Wt, *KdecT, *Ut;
    float* decay_end;
  };
  auto buffer = [&](int c) {
    Buffer at;
    at.Wt = reinterpret_cast<bf16*>(shared + c % Stages * L::kBufferBytes);
    at.KdecT = at.Wt + kC * L::kW;
    at.Ut = at.KdecT + KP * L::kD;
    at.decay_end = reinterpret_cast<float*>(at.Ut + kC * L::kU);
    return at;
  };
  bf16* ST = reinterpret_cast<bf16*>(shared + Stages * L::kBufferBytes);  // S0^T, [v][k]
  bf16* UT = ST + kVT * L::kW;                                            // U^T, [v][i]

  const int v0 = blockIdx.x * kVT, bh = state_row(p, blockIdx.y, longest_first), b = bh / p.H,
            h = bh % p.H;
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();

  // Chunk c's operands into its buffer (not committed: every thread commits
  // one group a chunk step, empty past the last chunk, so that waiting for
  // all but the Stages - 2 most recent groups waits for chunk c's).
  constexpr int kThreads = TcConfig::kStateThreads;
  auto fetch = [&](int c) {
    const Buffer to = buffer(c);
    const std::size_t n = slab(bh, num_chunks, c);
    copy_tile_async<kThreads, kC, KP>(to.Wt, L::kW, s.Wt + n * kC * KP, KP);
    copy_tile_async<kThreads, KP, kC>(to.KdecT, L::kD, s.KdecT + n * KP * kC, kC);
    copy_tile_async<kThreads, kC, kVT>(to.Ut, L::kU, s.Ut + n * kC * VP + v0, VP);
    copy_decay_end_async<kThreads, KP>(to.decay_end, s.decay_end + n * KP);
  };

  StateTile<KP, VT> S;
  auto for_state = [&](auto body) { S.for_each(body); };
  auto load_h0 = [&] {
    const bool ignored = DP_FAULT(p.faults, h0_ignored);
    for_state([&](float& x, int k, int j) {
      const int v = v0 + j;
      x = !ignored && k < p.K && v < p.V ? p.h0[state_offset(p.H, p.K, p.V, b, h, k, v)] : 0.0f;
    });
  };
  load_h0();
  const int chunks = seq_chunks(p, b, num_chunks);
#pragma unroll
  for (int c = 0; c < Stages - 1; ++c) {
    if (c < chunks) fetch(c);
    mma::copy_async_commit();
  }

  for (int c = 0; c < chunks; ++c) {
    const Buffer in = buffer(c);
    const std::size_t n = slab(bh, num_chunks, c);
    mma::copy_async_wait_group<Stages - 2>();
    __syncthreads();  // chunk c's operands are in; chunk c - 1's buffer is free
    if (c + Stages - 1 < chunks) fetch(c + Stages - 1);
    mma::copy_async_commit();
    if (c > 0 && DP_FAULT(p.faults, state_not_carried)) load_h0();

    // S0 as the products read it (bf16), transposed; stored for fwd.output.
    for_state([&](float& x, int k, int j) { ST[j * L::kW + k] = to_bf16(x); });
    __syncthreads();
    store_tile<kThreads, kVT, KP>(s.S0T + n * VP * KP + v0 * KP, KP, ST, L::kW);

    // U = Ut - Wt S0: warp w takes rows [16 w, 16 w + 16).
    Acc WtS[kNT];
    mma::accumulate(
        WtS, 0, KP / mma::kK,
        [&](int ks) { return mma::load_a(in.Wt, L::kW, warp * mma::kM, ks * mma::kK); },
        [&](int ks, int nt) { return mma::load_b(ST, L::kW, nt * mma::kN, ks * mma::kK); });
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = warp * mma::kM + mma::acc_row(l, e), v = nt * mma::kN + mma::acc_col(l, e);
        const float u = __bfloat162float(in.Ut[r * L::kU + v]) - WtS[nt].c[e];
        UT[v * L::kD + r] = to_bf16(u);
      }
    __syncthreads();
    store_tile<kThreads, kVT, kC>(s.UT + n * VP * kC + v0 * kC, kC, UT, L::kD);

    // S_end = Diag(exp G_C) S0 + Kdec^T U.
    for_state([&](float& x, int k, int) { x *= in.decay_end[k]; });
#pragma unroll
    for (int ks = 0; ks < kC / mma::kK; ++ks)
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const FragA fa = mma::load_a(in.KdecT, L::kD, warp * kRows + mt * mma::kM, ks * mma::kK);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
          mma::mma(S.a[mt][nt], fa, mma::load_b(UT, L::kD, nt * mma::kN, ks * mma::kK));
      }
  }

  for_state([&](float& x, int k, int j) {
    const int v = v0 + j;
    if (k < p.K && v < p.V) p.ht[state_offset(p.H, p.K, p.V, b, h, k, v)] = x;
  });
}

// x0 and x1 into to[0] and to[1] (to[1] only where `second`), as Out: one
// paired store where `paired` (to aligned to a pair, both columns there).
template <class Out>
__device__ inline void store_pair(Out* to, float x0, float x1, bool paired, bool second) {
  if constexpr (std::is_same_v<Out, bf16>) {
    if (paired) {
      *reinterpret_cast<__nv_bfloat162*>(to) = __floats2bfloat162_rn(x0, x1);
      return;
    }
    to[0] = to_bf16(x0);
    if (second) to[1] = to_bf16(x1);
  } else {
    if (paired) {
      *reinterpret_cast<float2*>(to) = make_float2(x0, x1);
      return;
    }
    to[0] = x0;
    if (second) to[1] = x1;
  }
}

// ---------------------------------------------------------------------------
// fwd.output: O = Qg S0 + M U, per chunk. Warp w takes the 16 rows of block
// w % 4 and half the columns.
// ---------------------------------------------------------------------------

template <int KP, int VP>
struct OutputLayout {
  static constexpr int kW = KP + kPad;  // rows of Qg and S0^T
  static constexpr int kD = kC + kPad;  // rows of M and U^T
  static constexpr std::size_t kBytes = sizeof(bf16) * ((kC + VP) * kW + (kC + VP) * kD);
};

template <int KP, int VP>
__global__ void __launch_bounds__(TcConfig::kOutputThreads)
    tc_fwd_output(DeviceProblem p, TcScratch s, int num_chunks) {
  using L = OutputLayout<KP, VP>;
  constexpr int kTiles = VP / 2 / mma::kN;
  extern __shared__ __align__(16) unsigned char shared[];
  bf16* Qg = reinterpret_cast<bf16*>(shared);
  bf16* S0T = Qg + kC * L::kW;
  bf16* M = S0T + VP * L::kW;
  bf16* UT = M + kC * L::kD;

  const int c = blockIdx.x, bh = blockIdx.y, b = bh / p.H, h = bh % p.H, t0 = c * kC;
  const int length = seq_length(p, b);
  if (t0 >= length) return;  // past a shorter packed sequence's end
  const std::size_t n = slab(bh, num_chunks, c);
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();

  // two groups of copies: Qg S0 is summed while M and U are still on their way
  constexpr int kThreads = TcConfig::kOutputThreads;
  copy_tile_async<kThreads, kC, KP>(Qg, L::kW, s.Qg + n * kC * KP, KP);
  copy_tile_async<kThreads, VP, KP>(S0T, L::kW, s.S0T + n * VP * KP, KP);
  mma::copy_async_commit();
  copy_tile_async<kThreads, kC, kC>(M, L::kD, s.M + n * kC * kC, kC);
  copy_tile_async<kThreads, VP, kC>(UT, L::kD, s.UT + n * VP * kC, kC);
  mma::copy_async_commit();
  mma::copy_async_wait_group<1>();
  __syncthreads();

  const int mt = warp % kBlocks, col0 = warp / kBlocks * VP / 2;
  Acc O[kTiles];
  for (int ks = 0; ks < KP / mma::kK; ++ks) {
    const FragA fa = mma::load_a(Qg, L::kW, kBlock * mt, ks * mma::kK);
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      mma::mma(O[j], fa, mma::load_b(S0T, L::kW, col0 + j * mma::kN, ks * mma::kK));
  }
  mma::copy_async_wait_all();
  __syncthreads();
  for (int ks = 0; ks <= mt; ++ks) {  // M is lower triangular
    const FragA fa = mma::load_a(M, L::kD, kBlock * mt, ks * mma::kK);
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      mma::mma(O[j], fa, mma::load_b(UT, L::kD, col0 + j * mma::kN, ks * mma::kK));
  }
  // o, two adjacent columns of a row at a time (an accumulator's pair, its
  // first column even: aligned where V is even and the caller's buffer is
  // aligned to a pair, which a view into a larger tensor need not be; else one
  // at a time), in bf16 where the caller asks for it, else in f32.
  bf16* const o16 = reinterpret_cast<bf16*>(p.o_bf16);
  const auto address =
      o16 ? reinterpret_cast<std::uintptr_t>(o16) : reinterpret_cast<std::uintptr_t>(p.o);
  const bool pairs = p.V % 2 == 0 && address % (o16 ? 4 : 8) == 0;
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; e += 2) {
      const int t = t0 + kBlock * mt + mma::acc_row(l, e);
      const int v = col0 + j * mma::kN + mma::acc_col(l, e);
      if (t >= length || v >= p.V) continue;
      const std::size_t at = token_at(p, p.V, b, t, h, v);
      const float x0 = O[j].c[e], x1 = O[j].c[e + 1];
      if (o16)
        store_pair(o16 + at, x0, x1, pairs, v + 1 < p.V);
      else
        store_pair(p.o + at, x0, x1, pairs, v + 1 < p.V);
    }
}

// ---------------------------------------------------------------------------
// The backward's helpers
// ---------------------------------------------------------------------------

// dO at token t and column v of sequence b (of `length` tokens), head h: zero
// past the sequence's end and past V.
__device__ inline float dO_at(const DeviceProblem& p, int b, int h, int length, int t, int v) {
  return t < length && v < p.V ? p.d_o[token_at(p, p.V, b, t, h, v)] : 0.0f;
}

// Rows t0 .. t0 + 63 of sequence b's dO, columns [v0, v0 + cols), as bf16 at
// row stride ld (dO_at's zeros).
__device__ inline void load_dO(const DeviceProblem& p, int b, int h, int t0, int v0, int cols,
                               bf16* to, int ld) {
  const int length = seq_length(p, b);
  for (int idx = threadIdx.x; idx < kC * cols; idx += blockDim.x) {
    const int r = idx / cols, j = idx % cols;
    to[r * ld + j] = to_bf16(dO_at(p, b, h, length, t0 + r, v0 + j));
  }
}

// What bwd.bk2 reads of slab n (M, Kdec^T, Qg, Wt, the chunk-end decays) and
// of dO's rows t0 .. t0 + 63, asked into L2 while the chunk after is worked
// on: the recurrence waits on each chunk's loads in turn, and at one block a
// head-tile (B1 T32768 H16) those waits on device memory were its time.
template <int KP>
__device__ inline void prefetch_chunk_l2(const DeviceProblem& p, const TcScratch& s, int b, int h,
                                         std::size_t n, int t0) {
  prefetch_bytes_l2(s.M + n * kC * kC, sizeof(bf16) * kC * kC);
  prefetch_bytes_l2(s.KdecT + n * KP * kC, sizeof(bf16) * KP * kC);
  prefetch_bytes_l2(s.Qg + n * kC * KP, sizeof(bf16) * kC * KP);
  prefetch_bytes_l2(s.Wt + n * kC * KP, sizeof(bf16) * kC * KP);
  prefetch_bytes_l2(s.decay_end + n * KP, sizeof(float) * KP);
  // dO: thread r takes row r's lines
  const int rows = min(kC, seq_length(p, b) - t0);
  for (int r = threadIdx.x; r < rows; r += blockDim.x) {
    const float* row = p.d_o + token_at(p, p.V, b, t0 + r, h, 0);
    for (int i = 0; i < p.V; i += 32) asm volatile("prefetch.global.L2 [%0];" ::"l"(row + i));
  }
}

// ---------------------------------------------------------------------------
// bwd.bk2 and the glue: the reverse recurrence over chunks for dS, the twin
// of fwd.inter, a tile of VT state columns per block. Warp w holds rows
// [w KP/4, (w+1) KP/4) of dS in registers (f32). Per chunk, last to first,
// with dS = dS_end the gradient wrt the chunk's end state (dht for the last):
//   dU  = M^T dO + Kdec dS_end                       (stored, bf16)
//   dS0 = Qg^T dO + Diag(exp G_C) dS_end - Wt^T dU    (handed to the chunk before)
// M and Qg carry the scale. dS_end is stored (bf16) for bwd.bk1; dh0 is the
// first chunk's dS0.
// ---------------------------------------------------------------------------

// Buffers = 1: each chunk's operands are loaded when its turn comes (with the
// chunk before asked into L2). Buffers = 2: two sets of them, chunk c - 1's
// copied (cp.async) and its dO rows loaded into registers while c is worked
// on, as fwd.inter does; one block an SM, for grids of at most one wave.
template <int KP, int VT, int Buffers>
struct Bk2Layout {
  static_assert(Buffers == 1 || Buffers == 2, "one or two operand buffers");
  static constexpr int kVT = VT;
  static constexpr int kW = KP + kPad;   // rows of Qg, Wt and dS^T
  static constexpr int kD = kC + kPad;   // rows of M and Kdec^T
  static constexpr int kO = kVT + kPad;  // rows of the dO and dU tiles
  // one chunk's operands: the chunk-end decays, M, Kdec^T, Qg, Wt
  static constexpr std::size_t kBufferBytes =
      sizeof(float) * KP + sizeof(bf16) * (kC * kD + KP * kD + 2 * kC * kW);
  static_assert(kBufferBytes % 16 == 0, "each buffer starts 16-byte aligned");
  static constexpr std::size_t kBytes =
      Buffers * kBufferBytes + sizeof(bf16) * (2 * kC * kO + kVT * kW);
  // dO's elements a thread holds for the chunk after (Buffers = 2)
  static constexpr int kDoPerThread = kC * kVT / TcConfig::kStateThreads;
  static_assert(kC * kVT % TcConfig::kStateThreads == 0, "dO's tile shared evenly");
};

template <int KP, int VP, int VT, int Buffers>
__global__ void __launch_bounds__(TcConfig::kStateThreads, 1)
    tc_bwd_state(DeviceProblem p, TcScratch s, int num_chunks, bool longest_first) {
  using L = Bk2Layout<KP, VT, Buffers>;
  constexpr int kVT = L::kVT, kRows = KP / 4, kMT = kRows / mma::kM, kNT = kVT / mma::kN;
  extern __shared__ __align__(16) unsigned char shared[];
  struct Buffer {
    float* decay_end;
    bf16 *M, *KdecT, *Qg, *Wt;  // [r][i], [k][i], [r][k], [i][k]
  };
  auto buffer = [&](int parity) {
    Buffer at;
    at.decay_end = reinterpret_cast<float*>(shared + (Buffers == 2 ? parity : 0) * L::kBufferBytes);
    at.M = reinterpret_cast<bf16*>(at.decay_end + KP);
    at.KdecT = at.M + kC * L::kD;
    at.Qg = at.KdecT + KP * L::kD;
    at.Wt = at.Qg + kC * L::kW;
    return at;
  };
  bf16* dO = reinterpret_cast<bf16*>(shared + Buffers * L::kBufferBytes);  // [r][v], the tile's
  bf16* dU = dO + kC * L::kO;                                              // [i][v]
  bf16* dST = dU + kC * L::kO;                                             // dS_end^T, [v][k]

  const int v0 = blockIdx.x * kVT, bh = state_row(p, blockIdx.y, longest_first), b = bh / p.H,
            h = bh % p.H;
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();
  const int length = seq_length(p, b);

  auto fetch = [&](int c, const Buffer& to) {
    const std::size_t n = slab(bh, num_chunks, c);
    constexpr int kThreads = TcConfig::kStateThreads;
    copy_tile_async<kThreads, kC, kC>(to.M, L::kD, s.M + n * kC * kC, kC);
    copy_tile_async<kThreads, KP, kC>(to.KdecT, L::kD, s.KdecT + n * KP * kC, kC);
    copy_tile_async<kThreads, kC, KP>(to.Qg, L::kW, s.Qg + n * kC * KP, KP);
    copy_tile_async<kThreads, kC, KP>(to.Wt, L::kW, s.Wt + n * kC * KP, KP);
    copy_decay_end_async<kThreads, KP>(to.decay_end, s.decay_end + n * KP);
    mma::copy_async_commit();
  };
  // Buffers = 2: chunk c's dO tile in registers, element i of thread tid at
  // row (tid + i 128) / kVT, column (tid + i 128) % kVT (dO_at's zeros).
  float next_dO[Buffers == 2 ? L::kDoPerThread : 1];
  auto load_next_dO = [&](int c) {
#pragma unroll
    for (int i = 0; i < L::kDoPerThread; ++i) {
      const int idx = tid + i * TcConfig::kStateThreads;
      next_dO[i] = dO_at(p, b, h, length, c * kC + idx / kVT, v0 + idx % kVT);
    }
  };
  auto store_next_dO = [&] {
#pragma unroll
    for (int i = 0; i < L::kDoPerThread; ++i) {
      const int idx = tid + i * TcConfig::kStateThreads;
      dO[idx / kVT * L::kO + idx % kVT] = to_bf16(next_dO[i]);
    }
  };

  StateTile<KP, VT> dS;
  auto for_state = [&](auto body) { dS.for_each(body); };
  const bool dht_ignored = DP_FAULT(p.faults, dht_ignored);
  for_state([&](float& x, int k, int j) {
    const int v = v0 + j;
    x = !dht_ignored && k < p.K && v < p.V ? p.dht[state_offset(p.H, p.K, p.V, b, h, k, v)] : 0.0f;
  });

  const int last = seq_chunks(p, b, num_chunks) - 1;
  if constexpr (Buffers == 2) {
    if (last >= 0) fetch(last, buffer(last & 1)), load_next_dO(last);
  }
  for (int c = last; c >= 0; --c) {
    const std::size_t n = slab(bh, num_chunks, c);
    const Buffer in = buffer(c & 1);
    __syncthreads();  // the chunk after's reads of shared memory are over
    if constexpr (Buffers == 1) {
      fetch(c, in);
      if (c > 0) prefetch_chunk_l2<KP>(p, s, b, h, slab(bh, num_chunks, c - 1), (c - 1) * kC);
      load_dO(p, b, h, c * kC, v0, kVT, dO, L::kO);
    } else {
      store_next_dO();
    }
    for_state([&](float& x, int k, int j) { dST[j * L::kW + k] = to_bf16(x); });
    mma::copy_async_wait_all();
    __syncthreads();
    if constexpr (Buffers == 2) {
      // chunk c - 1's operands into the other buffer (last read by chunk c + 1,
      // before the barrier above) and its dO rows into registers, while c runs;
      // chunk c - 2's asked into L2
      if (c > 0) fetch(c - 1, buffer((c - 1) & 1)), load_next_dO(c - 1);
      if (c > 1) prefetch_chunk_l2<KP>(p, s, b, h, slab(bh, num_chunks, c - 2), (c - 2) * kC);
    }
    const float* decay_end = in.decay_end;
    const bf16 *M = in.M, *KdecT = in.KdecT, *Qg = in.Qg, *Wt = in.Wt;
    store_tile<TcConfig::kStateThreads, kVT, KP>(s.dS_endT + n * VP * KP + v0 * KP, KP, dST, L::kW);

    // dU = M^T dO + Kdec dS_end: warp w takes rows [16 w, 16 w + 16); M^T is
    // upper triangular (M_ri = 0 for i > r).
    {
      Acc acc[kNT];
      mma::accumulate(
          acc, warp, kC / mma::kK,
          [&](int ks) { return mma::load_a_t(M, L::kD, warp * mma::kM, ks * mma::kK); },
          [&](int ks, int nt) { return mma::load_b_n(dO, L::kO, ks * mma::kK, nt * mma::kN); });
      mma::accumulate(
          acc, 0, KP / mma::kK,
          [&](int ks) { return mma::load_a_t(KdecT, L::kD, warp * mma::kM, ks * mma::kK); },
          [&](int ks, int nt) { return mma::load_b(dST, L::kW, nt * mma::kN, ks * mma::kK); });
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = warp * mma::kM + mma::acc_row(l, e), v = nt * mma::kN + mma::acc_col(l, e);
          const bf16 du = to_bf16(acc[nt].c[e]);
          dU[i * L::kO + v] = du;
          s.dU[n * kC * VP + i * VP + v0 + v] = du;
        }
    }
    // every warp reads all of dU below: the barrier the missing-barrier-tc
    // build leaves out (a sync fault is its own build: kernels/faults.hpp)
#ifndef DELTAPROOF_SYNC_FAULT_MISSING_BARRIER_TC
    __syncthreads();
#endif

    // dS0 = Diag(exp G_C) dS_end + Qg^T dO - Wt^T dU
    for_state([&](float& x, int k, int) { x *= decay_end[k]; });
    Acc WtdU[kMT][kNT];
#pragma unroll
    for (int ks = 0; ks < kC / mma::kK; ++ks)
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const int k0 = warp * kRows + mt * mma::kM;
        const FragA fq = mma::load_a_t(Qg, L::kW, k0, ks * mma::kK);
        const FragA fw = mma::load_a_t(Wt, L::kW, k0, ks * mma::kK);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          mma::mma(dS.a[mt][nt], fq, mma::load_b_n(dO, L::kO, ks * mma::kK, nt * mma::kN));
          mma::mma(WtdU[mt][nt], fw, mma::load_b_n(dU, L::kO, ks * mma::kK, nt * mma::kN));
        }
      }
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) dS.a[mt][nt].c[e] -= WtdU[mt][nt].c[e];
    if (c > 0 && DP_FAULT(p.faults, ds_not_handed_back))
      for_state([&](float& x, int, int) { x = 0.0f; });
  }

  if (!DP_FAULT(p.faults, dh0_not_written))
    for_state([&](float& x, int k, int j) {
      const int v = v0 + j;
      if (k < p.K && v < p.V) p.dh0[state_offset(p.H, p.K, p.V, b, h, k, v)] = x;
    });
}

// ---------------------------------------------------------------------------
// bwd.bk1, first kernel: the chunk's matrix adjoints, all on the tensor cores.
// With X = W*V and Y = B*K*exp G (Ut = Tinv X, Wt = Tinv Y):
//   dX = Tinv^T dU                dW = dX*V, dV = dX*W (outputs)
//   dM = scale dO U^T (lower)     dQg = scale dO S0^T
//   dKdec = U dS_end^T            d_decay_end = rowsum(dS_end * S0)
//   dY = -dX S0^T                 dA = -(dX Ut^T + dY Wt^T) (strictly lower)
// Warp w takes the 16 rows of block w % 4 and half the columns of each.
// ---------------------------------------------------------------------------

// What one tc_bwd_products launch computes: every product (kAllProducts, one
// block an SM: 180 KB of shared memory at K = V = 128), or half of them in
// each of two launches of at most 111 KB, two blocks an SM: kXYA (dX, dW, dV,
// dY, dA) and kMKQ (dM, dKdec, dQg, d_decay_end), each with the operands it
// reads alone (S0^T in both). The same code on the same operands: the same bits.
enum ProductsPart { kAllProducts, kXYA, kMKQ };

template <int KP, int VP, int Part = kAllProducts>
struct ProductsLayout {
  static constexpr int kD = kC + kPad;  // rows of 64: Tinv, U^T
  static constexpr int kK = KP + kPad;  // rows of KP: S0^T, dS_end^T, Wt, dY
  static constexpr int kV = VP + kPad;  // rows of VP: dU, Ut, dO, dX
  static constexpr int kMax = kK > kV ? kK : kV;
  static constexpr bool kX = Part != kMKQ, kM = Part != kXYA;  // the part's products
  // each buffer's first element, in this order, those the part does not read left out
  static constexpr std::size_t kTinv = 0;
  static constexpr std::size_t kdU = kTinv + (kX ? kC * kD : 0);
  static constexpr std::size_t kUT = kdU + (kX ? kC * kMax : 0);
  static constexpr std::size_t kS0T = kUT + (kM ? VP * kD : 0);
  static constexpr std::size_t kdST = kS0T + VP * kK;
  static constexpr std::size_t kWt = kdST + (kM ? VP * kK : 0);
  static constexpr std::size_t kUt = kWt + (kX ? kC * kK : 0);
  static constexpr std::size_t kdO = kUt + (kX ? kC * kV : 0);
  static constexpr std::size_t kdX = kdO + (kM ? kC * kV : 0);
  static constexpr std::size_t kElements = kdX + (kX ? kC * kV : 0);
  static constexpr std::size_t kBytes = sizeof(bf16) * kElements;
};

// Two blocks of a split part an SM; 128 registers a thread (the launch bounds'
// 2; 0, no minimum, for the one-launch kernel, as it was).
static_assert(two_blocks_fit(ProductsLayout<128, 128, kXYA>::kBytes) &&
                  two_blocks_fit(ProductsLayout<128, 128, kMKQ>::kBytes),
              "a split products part must fit two blocks an SM");

template <class In, int KP, int VP, int Part>
__global__ void __launch_bounds__(TcConfig::kIntraThreads, Part == kAllProducts ? 0 : 2)
    tc_bwd_products(DeviceProblem p, TcScratch s, int num_chunks) {
  using L = ProductsLayout<KP, VP, Part>;
  extern __shared__ __align__(16) unsigned char shared[];
  bf16* const base = reinterpret_cast<bf16*>(shared);
  bf16* Tinv = base + L::kTinv;  // [r][i]
  bf16* dU = base + L::kdU;      // [i][v]
  bf16* dY = dU;                 // [r][k], after dU
  bf16* UT = base + L::kUT;      // [v][i]
  bf16* S0T = base + L::kS0T;    // [v][k]
  bf16* dST = base + L::kdST;    // dS_end^T, [v][k]
  bf16* Wt = base + L::kWt;      // [i][k]
  bf16* Ut = base + L::kUt;      // [i][v]
  bf16* dO = base + L::kdO;      // [r][v]
  bf16* dX = base + L::kdX;      // [i][v]

  const int c = blockIdx.x, bh = blockIdx.y, b = bh / p.H, h = bh % p.H, t0 = c * kC;
  const int length = seq_length(p, b);
  if (t0 >= length) return;  // past a shorter packed sequence's end
  const std::size_t n = slab(bh, num_chunks, c);
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();

  if constexpr (L::kX) {
    copy_tile_async<TcConfig::kIntraThreads, kC, kC>(Tinv, L::kD, s.Tinv + n * kC * kC, kC);
    copy_tile_async<TcConfig::kIntraThreads, kC, VP>(dU, L::kV, s.dU + n * kC * VP, VP);
  }
  if constexpr (L::kM)
    copy_tile_async<TcConfig::kIntraThreads, VP, kC>(UT, L::kD, s.UT + n * VP * kC, kC);
  copy_tile_async<TcConfig::kIntraThreads, VP, KP>(S0T, L::kK, s.S0T + n * VP * KP, KP);
  if constexpr (L::kM)
    copy_tile_async<TcConfig::kIntraThreads, VP, KP>(dST, L::kK, s.dS_endT + n * VP * KP, KP);
  if constexpr (L::kX) {
    copy_tile_async<TcConfig::kIntraThreads, kC, KP>(Wt, L::kK, s.Wt + n * kC * KP, KP);
    copy_tile_async<TcConfig::kIntraThreads, kC, VP>(Ut, L::kV, s.Ut + n * kC * VP, VP);
  }
  mma::copy_async_commit();
  if constexpr (L::kM) load_dO(p, b, h, t0, 0, VP, dO, L::kV);
  mma::copy_async_wait_all();
  __syncthreads();

  // out(r, col, sum) for the warp's rows and half of kCols columns, the sums
  // over ks in [first1, steps1) of a1(ks) b1(ks, col) and over ks < steps2 of
  // a2(ks) b2(ks, col).
  const int mt = warp % kBlocks, half = warp / kBlocks;
  auto product = [&](auto columns, int first1, int steps1, auto a1, auto b1, int steps2, auto a2,
                     auto b2, auto out) {
    constexpr int kCols = decltype(columns)::value, kTiles = kCols / 2 / mma::kN;
    const int col0 = half * kCols / 2;
    Acc acc[kTiles];
    mma::accumulate(acc, first1, steps1, a1,
                    [&](int ks, int j) { return b1(ks, col0 + j * mma::kN); });
    mma::accumulate(acc, 0, steps2, a2, [&](int ks, int j) { return b2(ks, col0 + j * mma::kN); });
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        out(kBlock * mt + mma::acc_row(l, e), col0 + j * mma::kN + mma::acc_col(l, e), acc[j].c[e]);
  };
  auto none_a = [](int) { return FragA{}; };
  auto none_b = [](int, int) { return FragB{}; };
  using Cols64 = std::integral_constant<int, kC>;
  using ColsK = std::integral_constant<int, KP>;
  using ColsV = std::integral_constant<int, VP>;
  const float scale = p.scale;
  const std::size_t nKP = n * kC * KP;

  // dX = Tinv^T dU (Tinv^T is upper triangular); dW = dX*V, dV = dX*W.
  if constexpr (L::kX)
    product(
        ColsV{}, mt, kC / mma::kK,
        [&](int ks) { return mma::load_a_t(Tinv, L::kD, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b_n(dU, L::kV, ks * mma::kK, col); }, 0, none_a,
        none_b,
        [&](int r, int j, float x) {
          dX[r * L::kV + j] = to_bf16(x);
          if (t0 + r < length && j < p.V) {
            const std::size_t at = token_at(p, p.V, b, t0 + r, h, j);
            p.dw[at] = x * read_input<In>(p.v, at);
            p.dv[at] = x * read_input<In>(gate(p, p.w), gate_at(p, at, b, t0 + r, h));
          }
        });
  if constexpr (L::kM) {
    // dM = scale dO U^T, lower with its diagonal.
    product(
        Cols64{}, 0, VP / mma::kK,
        [&](int ks) { return mma::load_a(dO, L::kV, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b_n(UT, L::kD, ks * mma::kK, col); }, 0, none_a,
        none_b,
        [&](int r, int i, float x) {
          s.dM[n * kC * kC + r * kC + i] = to_bf16(i <= r ? scale * x : 0.0f);
        });
    // dKdec = U dS_end^T; dQg = scale dO S0^T.
    product(
        ColsK{}, 0, VP / mma::kK,
        [&](int ks) { return mma::load_a_t(UT, L::kD, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b_n(dST, L::kK, ks * mma::kK, col); }, 0, none_a,
        none_b, [&](int r, int k, float x) { s.dKdec[nKP + r * KP + k] = x; });
    product(
        ColsK{}, 0, VP / mma::kK,
        [&](int ks) { return mma::load_a(dO, L::kV, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b_n(S0T, L::kK, ks * mma::kK, col); }, 0, none_a,
        none_b, [&](int r, int k, float x) { s.dQg[nKP + r * KP + k] = scale * x; });
    // d_decay_end = rowsum(dS_end * S0), a channel per thread.
    for (int k = tid; k < KP; k += blockDim.x) {
      float sum = 0.0f;
      for (int v = 0; v < VP; ++v)
        sum += __bfloat162float(dST[v * L::kK + k]) * __bfloat162float(S0T[v * L::kK + k]);
      s.d_decay_end[n * KP + k] = sum;
    }
  }
  if constexpr (L::kX) {
    __syncthreads();  // dX is whole; dU is read for the last time

    // dY = -dX S0^T, where dU was.
    product(
        ColsK{}, 0, VP / mma::kK,
        [&](int ks) { return mma::load_a(dX, L::kV, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b_n(S0T, L::kK, ks * mma::kK, col); }, 0, none_a,
        none_b,
        [&](int r, int k, float x) {
          dY[r * L::kK + k] = to_bf16(-x);
          s.dY[nKP + r * KP + k] = -x;
        });
    __syncthreads();

    // dA = -(dX Ut^T + dY Wt^T), strictly lower.
    product(
        Cols64{}, 0, VP / mma::kK,
        [&](int ks) { return mma::load_a(dX, L::kV, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b(Ut, L::kV, col, ks * mma::kK); }, KP / mma::kK,
        [&](int ks) { return mma::load_a(dY, L::kK, kBlock * mt, ks * mma::kK); },
        [&](int ks, int col) { return mma::load_b(Wt, L::kK, col, ks * mma::kK); },
        [&](int r, int i, float x) {
          s.dA[n * kC * kC + r * kC + i] = to_bf16(i < r ? -x : 0.0f);
        });
  }
}

// ---------------------------------------------------------------------------
// bwd.bk1, second kernel: the token gradients dq dk db dg. The pairwise
// decays exp(G_r - G_i) of M and A come back as four sums per element:
//   rows (r):    dQM_r = sum_{i<=r} dM_ri e_ri k_i    dBK_r = sum_{i<r} dA_ri e_ri k_i
//   columns (i): dKM_i = sum_{r>=i} dM_ri e_ri q_r    dKA_i = sum_{r>i} dA_ri e_ri (b*k)_r
// The 16-row blocks below the diagonal on the tensor cores through a
// reference row n (exp(G_r - G_i) = exp(G_r - G_n) exp(G_n - G_i), both <= 1):
// the row sums of block R through n = 16 R, the column sums of block I
// through n = 16 I + 15. A diagonal block goes the same way where its decays
// are narrow (diagonal_on_tensor_cores: the factors >= 1 stay under e^60) and
// pair by pair in f32 where they are wide. Then, per
// element (with E = exp G, Kdec's decay D = exp(G_C - G)):
//   dq = dQg E + dQM            db = (dBK + dY E) k
//   dk = dY b E + dBK b + dKdec D + dKM + dKA
//   dG = (dQg E + dQM) q + (dY E + dBK) b k - dKdec k D - (dKM + dKA) k
// and the chunk end's G_C collects sum_j dKdec_j k_j D_j + d_decay_end exp(G_C);
// dg is the reverse cumulative sum of dG.
// ---------------------------------------------------------------------------

template <int KP>
struct TokensLayout {
  static constexpr int kH = KP + kPad;  // bf16 rows of a chunk's channels
  static constexpr int kF = KP + 1;     // f32 rows (odd: no bank conflicts)
  static constexpr int kD = kC + kPad;  // rows of dM and dA
  static constexpr std::size_t kBytes =
      sizeof(bf16) * (3 * kC * kH + 2 * kC * kD) + sizeof(float) * (3 * kC * kF + kBlocks * KP);
};

static_assert(two_blocks_fit(TokensLayout<64>::kBytes + kWideFlagBytes),
              "tc_bwd_tokens at 64 channels a block must fit two blocks an SM");

// KW: the channels a block takes, KP (one block a chunk) or KP / 2 (two, the
// grid's z, the block's channels from k0; every sum of the kernel is one
// channel's, so each element is the same sum in either). The split blocks
// take the diagonal blocks' path (wide) from all KP channels, as one block
// does: g's cumulative sums over all of them go through dKs and dGs first.
template <class In, int KP, int KW>
__global__ void __launch_bounds__(TcConfig::kIntraThreads, KW == KP ? 0 : 2)
    tc_bwd_tokens(DeviceProblem p, TcScratch s, int num_chunks) {
  static_assert(KW == KP || 2 * KW == KP, "one block a chunk or two");
  using L = TokensLayout<KW>;
  constexpr int kTiles = KW / 2 / mma::kN;
  extern __shared__ __align__(16) unsigned char shared[];
  float* G = reinterpret_cast<float*>(shared);  // [r][k]
  float* dKs = G + kC * L::kF;                  // the row part of dk, [r][k]
  float* dGs = dKs + kC * L::kF;                // dG, [r][k]
  bf16* Q = reinterpret_cast<bf16*>(dGs + kC * L::kF);
  bf16* Kk = Q + kC * L::kH;
  bf16* Bg = Kk + kC * L::kH;
  bf16* dM = Bg + kC * L::kH;  // [r][i]
  bf16* dA = dM + kC * L::kD;  // [r][i]
  // sum_r dKdec_rk k_rk exp(G_C - G_rk) over the rows of block R, [R][k]
  float* ends = reinterpret_cast<float*>(dA + kC * L::kD);

  const int c = blockIdx.x, bh = blockIdx.y, b = bh / p.H, h = bh % p.H, t0 = c * kC;
  const int length = seq_length(p, b);
  if (t0 >= length) return;                       // past a shorter packed sequence's end
  const int k0 = KW == KP ? 0 : blockIdx.z * KW;  // the block's first channel
  const std::size_t n = slab(bh, num_chunks, c), nKP = n * kC * KP + k0;
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();
  auto f = [](const bf16* x, int at) { return __bfloat162float(x[at]); };

  __shared__ unsigned wide;  // the 16-row blocks whose decays are wide (cumulative_decay)
  if (tid == 0) wide = 0;
  copy_tile_async<TcConfig::kIntraThreads, kC, kC>(dM, L::kD, s.dM + n * kC * kC, kC);
  copy_tile_async<TcConfig::kIntraThreads, kC, kC>(dA, L::kD, s.dA + n * kC * kC, kC);
  mma::copy_async_commit();
  const auto mine = [&](int i) { return i >= k0 && i < k0 + KW; };  // channel i is the block's
  load_row_pairs<In, KP>(p, p.q, p.k, p.K, b, h, t0, [&](int r, int i, float q, float k) {
    if (mine(i)) Q[r * L::kH + i - k0] = to_bf16(q), Kk[r * L::kH + i - k0] = to_bf16(k);
  });
  if constexpr (KW == KP) {
    load_row_pairs<In, KP>(
        p, p.g, gate(p, p.b), p.K, b, h, t0,
        [&](int r, int i, float g, float bb) {
          G[r * L::kF + i] = g, Bg[r * L::kH + i] = to_bf16(bb);
        },
        per_row(p, 1));
    mma::copy_async_wait_all();
    __syncthreads();
    cumulative_decay(p, G, L::kF, KP, &wide);
    __syncthreads();
  } else {
    // all KP channels' G where dKs and dGs will be (2 (KW + 1) >= KP + 1 rows
    // of floats a token), the block's KW of it into G after
    constexpr int kAll = KP + 1;
    static_assert(kC * kAll <= 2 * kC * L::kF, "G of every channel fits dKs and dGs");
    float* all = dKs;
    load_row_pairs<In, KP>(
        p, p.g, gate(p, p.b), p.K, b, h, t0,
        [&](int r, int i, float g, float bb) {
          all[r * kAll + i] = g;
          if (mine(i)) Bg[r * L::kH + i - k0] = to_bf16(bb);
        },
        per_row(p, 1));
    mma::copy_async_wait_all();
    __syncthreads();
    cumulative_decay(p, all, kAll, KP, &wide);
    __syncthreads();
    for (int idx = tid; idx < kC * KW; idx += blockDim.x) {
      const int r = idx / KW, i = idx % KW;
      G[r * L::kF + i] = all[r * kAll + k0 + i];
    }
    __syncthreads();
  }

  const int blk = warp % kBlocks, col0 = warp / kBlocks * KW / 2;
  // The diagonal block's pairs through the reference row on the tensor cores
  // too (its decays narrow: dM and dA are zeros above the diagonal), or pair by
  // pair after.
  const bool diagonal_tc = diagonal_on_tensor_cores(wide, blk);
  // The block row and channel of element e of the warp's tile j.
  auto row_of = [&](int e) { return kBlock * blk + mma::acc_row(l, e); };
  auto channel_of = [&](int j, int e) { return col0 + j * mma::kN + mma::acc_col(l, e); };

  // The rows of block R = blk: dQM and dBK, then every term of the row.
  {
    const int ref = kBlock * blk;
    Acc dQM[kTiles], dBK[kTiles];
    float end[kTiles][2] = {};  // the chunk end's terms of the lane's rows, its two channels
    for (int I = 0; I < blk + diagonal_tc; ++I) {
      const FragA fm = mma::load_a(dM, L::kD, ref, kBlock * I);
      const FragA fa = mma::load_a(dA, L::kD, ref, kBlock * I);
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
        const int k = col0 + j * mma::kN + l.g;
        FragB fk, fk_rest{};
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const int i = kBlock * I + 2 * l.t + 8 * jj;
          const float k0 = f(Kk, i * L::kH + k) * __expf(G[ref * L::kF + k] - G[i * L::kF + k]);
          const float k1 =
              f(Kk, (i + 1) * L::kH + k) * __expf(G[ref * L::kF + k] - G[(i + 1) * L::kF + k]);
          fk.r[jj] = mma::pack(k0, k1);
          if (I == blk) fk_rest.r[jj] = mma::pack_rest(k0, k1, fk.r[jj]);
        }
        mma::mma(dQM[j], fm, fk);
        mma::mma(dBK[j], fa, fk);
        if (I == blk) {  // the diagonal block: k e in two parts (dM, dA are bf16 already)
          mma::mma(dQM[j], fm, fk_rest);
          mma::mma(dBK[j], fa, fk_rest);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = row_of(e), k = channel_of(j, e);
        const float Gr = G[r * L::kF + k], to_ref = __expf(Gr - G[ref * L::kF + k]);
        float qm = dQM[j].c[e] * to_ref, bk = dBK[j].c[e] * to_ref;
        for (int i = ref; i <= r && !diagonal_tc; ++i) {  // the diagonal block
          const float ek = __expf(Gr - G[i * L::kF + k]) * f(Kk, i * L::kH + k);
          qm += f(dM, r * L::kD + i) * ek;
          bk += f(dA, r * L::kD + i) * ek;  // dA_rr = 0
        }
        const float q = f(Q, r * L::kH + k), key = f(Kk, r * L::kH + k),
                    beta = f(Bg, r * L::kH + k);
        const float E = __expf(Gr), D = __expf(G[(kC - 1) * L::kF + k] - Gr);
        const float dqg = s.dQg[nKP + r * KP + k], dy = s.dY[nKP + r * KP + k];
        const float dkdec = s.dKdec[nKP + r * KP + k];
        dKs[r * L::kF + k] = dy * beta * E + bk * beta + dkdec * D;
        dGs[r * L::kF + k] = (dqg * E + qm) * q + (dy * E + bk) * beta * key - dkdec * key * D;
        end[j][e & 1] += dkdec * key * D;
        if (t0 + r < length && k0 + k < p.K) {
          const std::size_t at = token_at(p, p.K, b, t0 + r, h, k0 + k);
          p.dq[at] = dqg * E + qm;
          p.db[at] = (bk + dy * E) * key;
        }
      }
      // the block's rows summed per channel: across the lanes of a column (g)
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        float sum = end[j][x];
        for (int mask = 4; mask < 32; mask *= 2) sum += __shfl_xor_sync(0xffffffffu, sum, mask);
        if (l.g == 0) ends[blk * KW + channel_of(j, x)] = sum;
      }
  }
  __syncthreads();

  // The columns of block I = blk: dKM and dKA, then dk and the rest of dG.
  {
    const int ref = kBlock * blk + kBlock - 1;
    Acc dKM[kTiles], dKA[kTiles];
    for (int R = blk + !diagonal_tc; R < kBlocks; ++R) {
      const FragA fm = mma::load_a_t(dM, L::kD, kBlock * blk, kBlock * R);
      const FragA fa = mma::load_a_t(dA, L::kD, kBlock * blk, kBlock * R);
#pragma unroll
      for (int j = 0; j < kTiles; ++j) {
        const int k = col0 + j * mma::kN + l.g;
        FragB fq, fbk, fq_rest{}, fbk_rest{};
#pragma unroll
        for (int jj = 0; jj < 2; ++jj) {
          const int r = kBlock * R + 2 * l.t + 8 * jj;
          const float e0 = __expf(G[r * L::kF + k] - G[ref * L::kF + k]);
          const float e1 = __expf(G[(r + 1) * L::kF + k] - G[ref * L::kF + k]);
          const float q0 = f(Q, r * L::kH + k) * e0, q1 = f(Q, (r + 1) * L::kH + k) * e1;
          const float bk0 = f(Bg, r * L::kH + k) * f(Kk, r * L::kH + k) * e0;
          const float bk1 = f(Bg, (r + 1) * L::kH + k) * f(Kk, (r + 1) * L::kH + k) * e1;
          fq.r[jj] = mma::pack(q0, q1);
          fbk.r[jj] = mma::pack(bk0, bk1);
          if (R == blk) {
            fq_rest.r[jj] = mma::pack_rest(q0, q1, fq.r[jj]);
            fbk_rest.r[jj] = mma::pack_rest(bk0, bk1, fbk.r[jj]);
          }
        }
        mma::mma(dKM[j], fm, fq);
        mma::mma(dKA[j], fa, fbk);
        if (R == blk) {  // the diagonal block: q e and b k e in two parts
          mma::mma(dKM[j], fm, fq_rest);
          mma::mma(dKA[j], fa, fbk_rest);
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = row_of(e), k = channel_of(j, e);
        const float Gi = G[i * L::kF + k], from_ref = __expf(G[ref * L::kF + k] - Gi);
        float km = dKM[j].c[e] * from_ref, ka = dKA[j].c[e] * from_ref;
        for (int r = i; r <= ref && !diagonal_tc; ++r) {  // the diagonal block
          const float e_ri = __expf(G[r * L::kF + k] - Gi);
          km += f(dM, r * L::kD + i) * e_ri * f(Q, r * L::kH + k);
          ka += f(dA, r * L::kD + i) * e_ri * f(Bg, r * L::kH + k) * f(Kk, r * L::kH + k);
        }
        dGs[i * L::kF + k] -= (km + ka) * f(Kk, i * L::kH + k);
        if (t0 + i < length && k0 + k < p.K)
          p.dk[token_at(p, p.K, b, t0 + i, h, k0 + k)] = dKs[i * L::kF + k] + km + ka;
      }
  }
  __syncthreads();

  // dg: the reverse cumulative sum of dG, a channel per thread, the chunk
  // end's terms (d_decay_end's and the blocks' sums of dKdec's) at the last row.
  for (int k = tid; k < KW; k += blockDim.x) {
    float running = s.d_decay_end[n * KP + k0 + k] * s.decay_end[n * KP + k0 + k];
    for (int R = 0; R < kBlocks; ++R) running += ends[R * KW + k];
    for (int r = kC - 1; r >= 0; --r) {
      running += dGs[r * L::kF + k];
      if (t0 + r < length && k0 + k < p.K)
        p.dg[token_at(p, p.K, b, t0 + r, h, k0 + k)] =
            DP_FAULT(p.faults, dg_sign_flipped) ? -running : running;
    }
  }
}

// ---------------------------------------------------------------------------
// Host side
// ---------------------------------------------------------------------------

int padded(int n) { return n <= 64 ? 64 : 128; }

// Each kernel's dynamic shared memory is raised once per instantiation.
template <class Kernel>
void allow_shared(Kernel kernel, std::size_t bytes, const char* what, const DeviceProblem& p) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)),
             what, p);
}

// The value an environment variable forces, one of `allowed`, or 0 where it
// is unset or empty; throws naming the variable where it is anything else.
int forced_choice(const char* variable, std::initializer_list<int> allowed) {
  const char* text = std::getenv(variable);
  if (!text || !*text) return 0;
  const std::string value = text;
  std::string names;
  for (int a : allowed) {
    if (value == std::to_string(a)) return a;
    names += (names.empty() ? "" : " or ") + std::to_string(a);
  }
  throw std::runtime_error(std::string(variable) + " is '" + value + "': it takes " + names);
}

// The current device's streaming multiprocessors (0 where it cannot be asked).
int sm_count() {
  static const int sms = [] {
    int device = 0, count = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
      return 0;
    return count;
  }();
  return sms;
}

// The blocks of a state kernel's grid (fwd.inter, bwd.bk2) at VT columns a
// block: one a (sequence, head, column tile), each walking its chunks in turn.
int state_blocks(const DeviceProblem& p, int VP, int VT) { return p.B * p.H * (VP / VT); }

// The state kernels' tile width (fwd.inter, bwd.bk2): kVTile columns a block,
// or kNarrowVTile where B H VP / kVTile tiles would leave streaming
// multiprocessors idle (B1 H16 V128: 64 tiles for 132 SMs), since each block
// walks its sequence's chunks one after another. The same bits either way
// (each column's sums run in the same order). DELTAPROOF_TC_STATE_TILE=16 or
// 32 forces one, read at each launch (CudaTcStateVariants sets it).
int state_tile(const DeviceProblem& p, int VP) {
  const int forced =
      forced_choice("DELTAPROOF_TC_STATE_TILE", {TcConfig::kNarrowVTile, TcConfig::kVTile});
  if (forced) return forced;
  return state_blocks(p, VP, TcConfig::kVTile) < sm_count() ? TcConfig::kNarrowVTile
                                                            : TcConfig::kVTile;
}

// bwd.bk2's operand buffers (Bk2Layout): two, chunk c - 1's loaded while c is
// worked on, where the grid is at most one wave at one block an SM (B1 H16:
// 128 blocks of 16 columns); else one, two blocks an SM hiding each other's
// loads. The same bits either way. DELTAPROOF_TC_BK2_BUFFERS=1 or 2 forces
// one, read at each launch.
int bk2_buffers(const DeviceProblem& p, int VP, int VT) {
  const int forced = forced_choice("DELTAPROOF_TC_BK2_BUFFERS", {1, 2});
  if (forced) return forced;
  return state_blocks(p, VP, VT) <= sm_count() ? 2 : 1;
}

// bwd.bk1's products in two launches (kXYA then kMKQ, two blocks an SM each)
// or one (kAllProducts, one block an SM, the products' kernel latency bound at
// 12% occupancy and IPC 0.44: reports/gpu/055c93a). Two, measured faster at
// each shape timed (tc_bwd_products 1.60 -> 1.46 ms at B4 T4096, 3.13 -> 2.83
// at B1 T32768, 4.10 -> 3.62 for 16 packed sequences: reports/gpu/416cd90).
// The same bits either way. DELTAPROOF_TC_PRODUCTS=1 (or 2) forces one, read
// at each launch.
int products_launches() {
  const int forced = forced_choice("DELTAPROOF_TC_PRODUCTS", {1, 2});
  return forced ? forced : 2;
}

// tc_bwd_tokens' blocks a chunk: two (KP / 2 channels each, 95 KB of shared
// memory and 128 registers: two blocks an SM) or one (all KP channels, 168 KB
// and 179 registers: one block an SM). Two, measured faster at each shape
// timed (2.46 -> 1.12 ms at B4 T4096, 4.88 -> 2.14 at B1 T32768, 6.05 -> 2.83
// for 16 packed sequences: reports/gpu/416cd90). The same bits either way.
// DELTAPROOF_TC_TOKENS=1 (or 2) forces one, read at each launch.
int tokens_blocks() {
  const int forced = forced_choice("DELTAPROOF_TC_TOKENS", {1, 2});
  return forced ? forced : 2;
}

// fwd.inter's operand buffers (StateLayout): three, chunks c + 1 and c + 2 in
// flight while c is worked on, where the grid is at most one wave at one block
// an SM (B1 H16: 128 blocks of 16 columns, each waiting on its chunk's copies
// for 31% of its stall samples with one chunk in flight, reports/gpu/8a3bda6);
// else two, so that two blocks fit an SM. The same bits either way.
// DELTAPROOF_TC_INTER_STAGES=2 or 3 forces one, read at each launch.
int inter_stages(const DeviceProblem& p, int VP, int VT) {
  const int forced = forced_choice("DELTAPROOF_TC_INTER_STAGES", {2, 3});
  if (forced) return forced;
  return state_blocks(p, VP, VT) <= sm_count() ? 3 : 2;
}

// Whether the state kernels walk packed sequences longest first (state_row):
// yes; DELTAPROOF_TC_STATE_ORDER=1 forces index order (2: longest first), read
// at each launch. The same bits either way.
bool state_order() { return forced_choice("DELTAPROOF_TC_STATE_ORDER", {1, 2}) != 1; }

// fwd.intra's variant (tc_fwd_intra's Variant), read at each launch. Whether
// it hands the work before and after A's and M's barrier to the warps with the
// fewest tasks (kIntraShares): yes; DELTAPROOF_TC_INTRA_SHARES=2 makes every
// thread alike (1: the warps), the same bits either way. Whether Tinv's blocks
// below the diagonal go on the tensor cores (kIntraTinvTc): yes;
// DELTAPROOF_TC_INTRA_TINV=2 takes f32 dot products (1: the tensor cores), not
// the same bits (reports/gpu/8c5e3b9-intra: the gates and the production-shape
// gates pass either way).
unsigned intra_variant() {
  return (forced_choice("DELTAPROOF_TC_INTRA_SHARES", {1, 2}) != 2 ? kIntraShares : 0) |
         (forced_choice("DELTAPROOF_TC_INTRA_TINV", {1, 2}) != 2 ? kIntraTinvTc : 0);
}

// fwd.intra's kernel of variant v (intra_variant), f(kernel, v) for each.
template <class In, int KP, int VP, class F>
void with_intra_variants(F f) {
  f(tc_fwd_intra<In, KP, VP, 0>, 0u);
  f(tc_fwd_intra<In, KP, VP, 1>, 1u);
  f(tc_fwd_intra<In, KP, VP, 2>, 2u);
  f(tc_fwd_intra<In, KP, VP, 3>, 3u);
  static_assert(kIntraVariants == 4, "every variant above");
}

// run(VT) with the state tile's width as an integral constant.
template <class Run>
void with_state_tile(const DeviceProblem& p, int VP, Run run) {
  if (state_tile(p, VP) == TcConfig::kNarrowVTile)
    return run(std::integral_constant<int, TcConfig::kNarrowVTile>{});
  return run(std::integral_constant<int, TcConfig::kVTile>{});
}

// body(VT, Stages) for each fwd.inter kernel, as integral constants.
template <class Body>
void for_state_kernels(Body body) {
  using Narrow = std::integral_constant<int, TcConfig::kNarrowVTile>;
  using Wide = std::integral_constant<int, TcConfig::kVTile>;
  using Two = std::integral_constant<int, 2>;
  using Three = std::integral_constant<int, 3>;
  body(Narrow{}, Two{}), body(Narrow{}, Three{}), body(Wide{}, Two{}), body(Wide{}, Three{});
}

template <class In, int KP, int VP>
void launch_forward(const DeviceProblem& p, const TcScratch& s, cudaStream_t stream, LaunchLog* log,
                    bool synchronous, unsigned stages) {
  const int num_chunks = (p.T + kC - 1) / kC;
  const dim3 chunk_grid(num_chunks, p.B * p.H);
  auto check = [&](const char* what) {
    CUDA_CHECK(cudaGetLastError(), what, p);
    if (synchronous) CUDA_CHECK(cudaStreamSynchronize(stream), what, p);
  };
  // one instantiation per (In, KP, VP): its attributes set once, by whichever
  // thread comes first (a static's initialisation; retried if it threw)
  static const bool ready = [&] {
    with_intra_variants<In, KP, VP>([&](auto kernel, unsigned) {
      allow_shared(kernel, IntraLayout<KP, VP>::kBytes, "tc_fwd_intra", p);
    });
    for_state_kernels([&](auto tile, auto buffers) {
      constexpr int VT = decltype(tile)::value, Stages = decltype(buffers)::value;
      allow_shared(tc_fwd_state<KP, VP, VT, Stages>, StateLayout<KP, VT, Stages>::kBytes,
                   "tc_fwd_state", p);
    });
    allow_shared(tc_fwd_output<KP, VP>, OutputLayout<KP, VP>::kBytes, "tc_fwd_output", p);
    return true;
  }();
  (void)ready;
  if (stages & kTcIntra) {
    const unsigned variant = intra_variant();
    with_intra_variants<In, KP, VP>([&](auto kernel, unsigned v) {
      if (v == variant)
        kernel<<<chunk_grid, TcConfig::kIntraThreads, IntraLayout<KP, VP>::kBytes, stream>>>(
            p, s, num_chunks);
    });
    check("tc_fwd_intra");
    // the launch log's name, by variant bits (kIntraShares 1, kIntraTinvTc 2)
    static constexpr const char* kNames[] = {"tc_fwd_intra", "tc_fwd_intra shares",
                                             "tc_fwd_intra tinv-tc", "tc_fwd_intra shares tinv-tc"};
    static_assert(kIntraShares == 1 && kIntraTinvTc == 2);
    if (log) log->note("fwd.intra", kNames[variant]);
  }
  if (stages & kTcState) {
    with_state_tile(p, VP, [&](auto tile) {
      constexpr int VT = decltype(tile)::value;
      auto launch = [&](auto buffers) {
        constexpr int Stages = decltype(buffers)::value;
        tc_fwd_state<KP, VP, VT, Stages>
            <<<dim3(VP / VT, p.B * p.H), TcConfig::kStateThreads,
               StateLayout<KP, VT, Stages>::kBytes, stream>>>(p, s, num_chunks, state_order());
      };
      if (inter_stages(p, VP, VT) == 3) return launch(std::integral_constant<int, 3>{});
      launch(std::integral_constant<int, 2>{});
    });
    check("tc_fwd_state");
    if (log) log->note("fwd.inter", "tc_fwd_state");
  }
  if (stages & kTcOutput) {
    tc_fwd_output<KP, VP>
        <<<chunk_grid, TcConfig::kOutputThreads, OutputLayout<KP, VP>::kBytes, stream>>>(
            p, s, num_chunks);
    check("tc_fwd_output");
    if (log) log->note("fwd.output", "tc_fwd_output");
  }
}

template <class In, int KP, int VP>
void launch_backward(const DeviceProblem& p, const TcScratch& s, cudaStream_t stream,
                     LaunchLog* log, bool synchronous, unsigned stages) {
  const int num_chunks = (p.T + kC - 1) / kC;
  const dim3 chunk_grid(num_chunks, p.B * p.H);
  auto check = [&](const char* what) {
    CUDA_CHECK(cudaGetLastError(), what, p);
    if (synchronous) CUDA_CHECK(cudaStreamSynchronize(stream), what, p);
  };
  static const bool ready = [&] {
    allow_shared(tc_bwd_state<KP, VP, TcConfig::kVTile, 1>,
                 Bk2Layout<KP, TcConfig::kVTile, 1>::kBytes, "tc_bwd_state", p);
    allow_shared(tc_bwd_state<KP, VP, TcConfig::kNarrowVTile, 1>,
                 Bk2Layout<KP, TcConfig::kNarrowVTile, 1>::kBytes, "tc_bwd_state", p);
    allow_shared(tc_bwd_state<KP, VP, TcConfig::kVTile, 2>,
                 Bk2Layout<KP, TcConfig::kVTile, 2>::kBytes, "tc_bwd_state", p);
    allow_shared(tc_bwd_state<KP, VP, TcConfig::kNarrowVTile, 2>,
                 Bk2Layout<KP, TcConfig::kNarrowVTile, 2>::kBytes, "tc_bwd_state", p);
    allow_shared(tc_bwd_products<In, KP, VP, kAllProducts>,
                 ProductsLayout<KP, VP, kAllProducts>::kBytes, "tc_bwd_products", p);
    allow_shared(tc_bwd_products<In, KP, VP, kXYA>, ProductsLayout<KP, VP, kXYA>::kBytes,
                 "tc_bwd_products", p);
    allow_shared(tc_bwd_products<In, KP, VP, kMKQ>, ProductsLayout<KP, VP, kMKQ>::kBytes,
                 "tc_bwd_products", p);
    allow_shared(tc_bwd_tokens<In, KP, KP>, TokensLayout<KP>::kBytes, "tc_bwd_tokens", p);
    allow_shared(tc_bwd_tokens<In, KP, KP / 2>, TokensLayout<KP / 2>::kBytes, "tc_bwd_tokens", p);
    return true;
  }();
  (void)ready;
  if (stages & kTcBk2) {
    with_state_tile(p, VP, [&](auto tile) {
      constexpr int VT = decltype(tile)::value;
      const dim3 grid(VP / VT, p.B * p.H);
      const bool longest_first = state_order();
      if (bk2_buffers(p, VP, VT) == 2)
        tc_bwd_state<KP, VP, VT, 2>
            <<<grid, TcConfig::kStateThreads, Bk2Layout<KP, VT, 2>::kBytes, stream>>>(
                p, s, num_chunks, longest_first);
      else
        tc_bwd_state<KP, VP, VT, 1>
            <<<grid, TcConfig::kStateThreads, Bk2Layout<KP, VT, 1>::kBytes, stream>>>(
                p, s, num_chunks, longest_first);
    });
    check("tc_bwd_state");
    if (log) log->note("bwd.bk2", "tc_bwd_state"), log->note("bwd.glue", "tc_bwd_state");
  }
  if (stages & kTcBk1Products) {
    auto launch = [&](auto part) {
      constexpr int kPart = decltype(part)::value;
      tc_bwd_products<In, KP, VP, kPart>
          <<<chunk_grid, TcConfig::kIntraThreads, ProductsLayout<KP, VP, kPart>::kBytes, stream>>>(
              p, s, num_chunks);
    };
    if (products_launches() == 2) {
      launch(std::integral_constant<int, kXYA>{});
      check("tc_bwd_products");
      launch(std::integral_constant<int, kMKQ>{});
    } else {
      launch(std::integral_constant<int, kAllProducts>{});
    }
    check("tc_bwd_products");
    if (log) log->note("bwd.bk1", "tc_bwd_products");
  }
  if (stages & kTcBk1Tokens) {
    if (tokens_blocks() == 2)
      tc_bwd_tokens<In, KP, KP / 2><<<dim3(num_chunks, p.B * p.H, 2), TcConfig::kIntraThreads,
                                      TokensLayout<KP / 2>::kBytes, stream>>>(p, s, num_chunks);
    else
      tc_bwd_tokens<In, KP, KP>
          <<<chunk_grid, TcConfig::kIntraThreads, TokensLayout<KP>::kBytes, stream>>>(p, s,
                                                                                      num_chunks);
    check("tc_bwd_tokens");
    if (log) log->note("bwd.bk1", "tc_bwd_tokens");
  }
}

// run(KP, VP) with K and V's padded widths as integral constants (64 or 128):
// the one instantiation of a stage's kernels for the shape.
template <class Run>
void with_padded_widths(const DeviceProblem& p, Run run) {
  using W64 = std::integral_constant<int, 64>;
  using W128 = std::integral_constant<int, 128>;
  const bool k64 = padded(p.K) == 64, v64 = padded(p.V) == 64;
  if (k64 && v64) return run(W64{}, W64{});
  if (k64) return run(W64{}, W128{});
  if (v64) return run(W128{}, W64{});
  return run(W128{}, W128{});
}

// The scratch buffers' sizes in elements, each rounded up to 256 bytes (the
// backward's zero unless asked for).
struct ScratchSizes {
  std::size_t Wt, Ut, KdecT, Qg, M, UT, S0T, Tinv, decay_end;
  std::size_t dS_endT, dU, dM, dA, dQg, dY, dKdec, d_decay_end;
};
ScratchSizes scratch_sizes(const DeviceProblem& p, bool backward) {
  const std::size_t chunks = static_cast<std::size_t>(p.B) * p.H * ((p.T + kC - 1) / kC);
  const std::size_t KP = padded(p.K), VP = padded(p.V);
  auto round = [](std::size_t elements) { return (elements + 127) / 128 * 128; };
  const std::size_t bwd = backward ? 1 : 0;
  return {
      round(chunks * kC * KP),       round(chunks * kC * VP),       round(chunks * KP * kC),
      round(chunks * kC * KP),       round(chunks * kC * kC),       round(chunks * VP * kC),
      round(chunks * VP * KP),       round(chunks * kC * kC),       round(chunks * KP),
      bwd * round(chunks * VP * KP), bwd * round(chunks * kC * VP), bwd * round(chunks * kC * kC),
      bwd * round(chunks * kC * kC), bwd * round(chunks * kC * KP), bwd * round(chunks * kC * KP),
      bwd * round(chunks * kC * KP), bwd * round(chunks * KP)};
}

}  // namespace

std::string TcConfig::supports(int B, int H, int K, int V, int chunk) {
  if (K < 1 || K > kMaxDim || V < 1 || V > kMaxDim)
    return "K and V must be from 1 to " + std::to_string(kMaxDim);
  if (chunk != kChunk) return "the chunk size must be " + std::to_string(kChunk);
  if (static_cast<long long>(B) * H > kMaxHeads)
    return "B*H must be at most " + std::to_string(kMaxHeads) + " (a grid's y)";
  return "";
}

std::size_t tc_scratch_bytes(const DeviceProblem& p, bool backward) {
  const ScratchSizes z = scratch_sizes(p, backward);
  return sizeof(bf16) * (z.Wt + z.Ut + z.KdecT + z.Qg + z.M + z.UT + z.S0T + z.Tinv + z.dS_endT +
                         z.dU + z.dM + z.dA) +
         sizeof(float) * (z.decay_end + z.dQg + z.dY + z.dKdec + z.d_decay_end);
}

TcScratch carve_tc_scratch(const DeviceProblem& p, void* base, bool backward) {
  const ScratchSizes z = scratch_sizes(p, backward);
  TcScratch s;
  auto* at = static_cast<bf16*>(base);
  auto take = [&](bf16*& buffer, std::size_t elements) {
    buffer = elements ? at : nullptr;
    at += elements;
  };
  take(s.Wt, z.Wt), take(s.Ut, z.Ut), take(s.KdecT, z.KdecT), take(s.Qg, z.Qg), take(s.M, z.M);
  take(s.UT, z.UT), take(s.S0T, z.S0T), take(s.Tinv, z.Tinv), take(s.dS_endT, z.dS_endT);
  take(s.dU, z.dU), take(s.dM, z.dM), take(s.dA, z.dA);
  auto* f = reinterpret_cast<float*>(at);  // every bf16 buffer is a multiple of 128 elements
  auto take_f = [&](float*& buffer, std::size_t elements) {
    buffer = elements ? f : nullptr;
    f += elements;
  };
  take_f(s.decay_end, z.decay_end), take_f(s.dQg, z.dQg), take_f(s.dY, z.dY);
  take_f(s.dKdec, z.dKdec), take_f(s.d_decay_end, z.d_decay_end);
  return s;
}

void launch_tc_forward(const DeviceProblem& p, const TcScratch& scratch, cudaStream_t stream,
                       LaunchLog* log, bool synchronous, unsigned stages) {
  with_padded_widths(p, [&](auto KP, auto VP) {
    if (p.input == InputType::bf16)
      launch_forward<__nv_bfloat16, KP, VP>(p, scratch, stream, log, synchronous, stages);
    else
      launch_forward<float, KP, VP>(p, scratch, stream, log, synchronous, stages);
  });
}

void launch_tc_backward(const DeviceProblem& p, const TcScratch& scratch, cudaStream_t stream,
                        LaunchLog* log, bool synchronous, unsigned stages) {
  if (!scratch.dU)
    throw std::runtime_error("cuda-tc: the scratch was not carved for a backward (" + describe(p) +
                             ")");
  with_padded_widths(p, [&](auto KP, auto VP) {
    if (p.input == InputType::bf16)
      launch_backward<__nv_bfloat16, KP, VP>(p, scratch, stream, log, synchronous, stages);
    else
      launch_backward<float, KP, VP>(p, scratch, stream, log, synchronous, stages);
  });
}

void run_tc(const DeviceProblem& p, bool backward, LaunchLog& log) {
  DeviceBuffer storage((tc_scratch_bytes(p, backward) + sizeof(float) - 1) / sizeof(float),
                       "cuda-tc scratch", p);
  const TcScratch scratch = carve_tc_scratch(p, storage.get(), backward);
  launch_tc_forward(p, scratch, nullptr, &log, true);
  if (backward) launch_tc_backward(p, scratch, nullptr, &log, true);
}

// ---------------------------------------------------------------------------
// The stages one at a time (kernels/cuda/tc_stages.hpp): one chunk of one
// (b, h), B = H = 1 and T = L, so a token tensor is an L x width matrix and a
// state a K x V one, and each scratch buffer is one slab (n = 0).
// ---------------------------------------------------------------------------
namespace {

// Where a quantity lies in a scratch buffer: its rows x cols at the top left
// of a slab_rows x slab_cols slab (transposed: element (r, c) at (c, r)), zeros
// elsewhere, multiplied by `factor` (the scale, for Qg and M).
struct TcSlab {
  int rows, cols, slab_rows, slab_cols;
  bool transposed = false;
  float factor = 1.0f;
  std::size_t at(int r, int c) const {
    return transposed ? static_cast<std::size_t>(c) * slab_cols + r
                      : static_cast<std::size_t>(r) * slab_cols + c;
  }
};

// A scratch buffer's element (bf16 or f32) from an f32 and back.
template <class T>
T scratch_element(float x) {
  if constexpr (std::is_same_v<T, bf16>)
    return __float2bfloat16_rn(x);
  else
    return x;
}
template <class T>
float scratch_value(T x) {
  if constexpr (std::is_same_v<T, bf16>)
    return __bfloat162float(x);
  else
    return x;
}

// The device side of one stage: every token, state and gradient buffer of the
// problem and one slab of each scratch buffer (the backward's included), all
// zeroed, so that a stage reads only what the caller put there.
class TcStageDevice {
 public:
  TcStageDevice(const StageShape& s, CudaFaults faults) : s_(s) {
    p_.B = 1, p_.T = s.L, p_.H = 1, p_.K = s.K, p_.V = s.V, p_.chunk = s.chunk, p_.scale = s.scale;
    p_.input = InputType::f32;
    p_.faults = faults;
    if (const std::string why = TcConfig::supports(1, 1, s.K, s.V, s.chunk); !why.empty())
      throw std::runtime_error("cuda-tc stage: " + why + " (" + describe(p_) + ")");
    if (s.L < 1 || s.L > s.chunk)
      throw std::runtime_error("cuda-tc stage: L must be from 1 to the chunk size (" +
                               describe(p_) + ")");
    const std::size_t LK = static_cast<std::size_t>(s.L) * s.K,
                      LV = static_cast<std::size_t>(s.L) * s.V,
                      KV = static_cast<std::size_t>(s.K) * s.V;
    p_.q = q_ = allocate(LK), p_.k = k_ = allocate(LK), p_.g = g_ = allocate(LK);
    p_.b = b_ = allocate(LK), p_.v = v_ = allocate(LV), p_.w = w_ = allocate(LV);
    p_.h0 = h0_ = allocate(KV), p_.d_o = d_o_ = allocate(LV), p_.dht = dht_ = allocate(KV);
    p_.o = allocate(LV), p_.ht = allocate(KV), p_.dh0 = allocate(KV);
    p_.dq = allocate(LK), p_.dk = allocate(LK), p_.dg = allocate(LK), p_.db = allocate(LK);
    p_.dv = allocate(LV), p_.dw = allocate(LV);
    scratch_ = carve_tc_scratch(p_, allocate((tc_scratch_bytes(p_, true) + 3) / 4), true);
  }
  const DeviceProblem& p() const { return p_; }
  const TcScratch& scratch() const { return scratch_; }

  // The tokens, as fwd.intra and bwd.bk1 read them; S0, dO and dS_end where a
  // run's h0, do and dht are.
  void put_tokens(const StageTokens& x) {
    put(q_, x.q, s_.L, s_.K, "q"), put(k_, x.k, s_.L, s_.K, "k"), put(g_, x.g, s_.L, s_.K, "g");
    put(b_, x.b, s_.L, s_.K, "b"), put(v_, x.v, s_.L, s_.V, "v"), put(w_, x.w, s_.L, s_.V, "w");
  }
  void put_S0(const HostMatrix& S0) { put(h0_, S0, s_.K, s_.V, "S0"); }
  void put_dO(const HostMatrix& dO) { put(d_o_, dO, s_.L, s_.V, "dO"); }
  void put_dS_end(const HostMatrix& dS_end) { put(dht_, dS_end, s_.K, s_.V, "dS_end"); }

  // Where each quantity lies in the scratch (TcScratch's layouts, tc.hpp).
  template <class T>
  struct Place {
    T* buffer;
    TcSlab slab;
    const char* name;
  };
  Place<bf16> Wt() const { return {scratch_.Wt, {L(), K(), kC, KP()}, "Wt"}; }
  Place<bf16> Ut() const { return {scratch_.Ut, {L(), V(), kC, VP()}, "Ut"}; }
  Place<bf16> Kdec() const { return {scratch_.KdecT, {L(), K(), KP(), kC, true}, "Kdec"}; }
  Place<bf16> Qg() const { return {scratch_.Qg, {L(), K(), kC, KP(), false, s_.scale}, "Qg"}; }
  Place<bf16> M() const { return {scratch_.M, {L(), L(), kC, kC, false, s_.scale}, "M"}; }
  Place<bf16> Tinv() const { return {scratch_.Tinv, {L(), L(), kC, kC}, "Tinv"}; }
  Place<float> decay_end() const { return {scratch_.decay_end, {1, K(), 1, KP()}, "decay_end"}; }
  Place<bf16> U() const { return {scratch_.UT, {L(), V(), VP(), kC, true}, "U"}; }
  Place<bf16> S0() const { return {scratch_.S0T, {K(), V(), VP(), KP(), true}, "S0"}; }
  Place<bf16> dS_end() const { return {scratch_.dS_endT, {K(), V(), VP(), KP(), true}, "dS_end"}; }
  Place<bf16> dU() const { return {scratch_.dU, {L(), V(), kC, VP()}, "dU"}; }

  template <class T>
  void put(const Place<T>& place, const HostMatrix& m) {
    const TcSlab& at = place.slab;
    check_size(m, at.rows, at.cols, place.name);
    std::vector<T> slab(static_cast<std::size_t>(at.slab_rows) * at.slab_cols,
                        scratch_element<T>(0.0f));
    for (int r = 0; r < at.rows; ++r)
      for (int c = 0; c < at.cols; ++c)
        slab[at.at(r, c)] = scratch_element<T>(at.factor * m[r * at.cols + c]);
    copy(place.buffer, slab.data(), slab.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  template <class T>
  HostMatrix get(const Place<T>& place) const {
    const TcSlab& at = place.slab;
    std::vector<T> slab(static_cast<std::size_t>(at.slab_rows) * at.slab_cols);
    copy(slab.data(), place.buffer, slab.size() * sizeof(T), cudaMemcpyDeviceToHost);
    HostMatrix m(static_cast<std::size_t>(at.rows) * at.cols);
    for (int r = 0; r < at.rows; ++r)
      for (int c = 0; c < at.cols; ++c)
        m[r * at.cols + c] = scratch_value(slab[at.at(r, c)]) / at.factor;
    return m;
  }
  // An output buffer (a token tensor or a state) as a rows x cols matrix.
  HostMatrix get(const float* buffer, int rows, int cols) const {
    HostMatrix m(static_cast<std::size_t>(rows) * cols);
    copy(m.data(), buffer, m.size() * sizeof(float), cudaMemcpyDeviceToHost);
    return m;
  }
  // o from here on `shift` elements into a buffer of its own (an odd shift:
  // not aligned to a pair), in bf16 (DeviceProblem::o_bf16) or f32; the
  // default place is the f32 o the constructor allocated.
  void place_o(const OutputPlace& at) {
    if (!at.bf16 && at.shift == 0) return;
    const std::size_t LV = static_cast<std::size_t>(L()) * V(), shift = at.shift;
    if (at.bf16)
      p_.o_bf16 = reinterpret_cast<std::uint16_t*>(allocate((LV + shift + 1) / 2)) + shift;
    else
      p_.o = allocate(LV + shift) + shift;
  }
  // o as an L x V matrix (a bf16 o widened exactly).
  HostMatrix get_o() const {
    if (!p_.o_bf16) return get(p_.o, L(), V());
    std::vector<bf16> o(static_cast<std::size_t>(L()) * V());
    copy(o.data(), p_.o_bf16, o.size() * sizeof(bf16), cudaMemcpyDeviceToHost);
    HostMatrix m(o.size());
    for (std::size_t i = 0; i < o.size(); ++i) m[i] = __bfloat162float(o[i]);
    return m;
  }

 private:
  int L() const { return s_.L; }
  int K() const { return s_.K; }
  int V() const { return s_.V; }
  int KP() const { return padded(s_.K); }
  int VP() const { return padded(s_.V); }
  float* allocate(std::size_t floats) {
    buffers_.push_back(std::make_unique<DeviceBuffer>(floats, "cudaMalloc (tc stage)", p_));
    float* at = buffers_.back()->get();
    CUDA_CHECK(cudaMemset(at, 0, floats * sizeof(float)), "cudaMemset (tc stage)", p_);
    return at;
  }
  void check_size(const HostMatrix& m, int rows, int cols, const char* name) const {
    if (m.size() != static_cast<std::size_t>(rows) * cols)
      throw std::runtime_error(std::string("cuda-tc stage: ") + name + " holds " +
                               std::to_string(m.size()) + " floats, not " + std::to_string(rows) +
                               " x " + std::to_string(cols) + " (" + describe(p_) + ")");
  }
  void put(float* buffer, const HostMatrix& m, int rows, int cols, const char* name) {
    check_size(m, rows, cols, name);
    copy(buffer, m.data(), m.size() * sizeof(float), cudaMemcpyHostToDevice);
  }
  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) const {
    CUDA_CHECK(cudaMemcpy(to, from, bytes, kind),
               kind == cudaMemcpyHostToDevice ? "cudaMemcpy (tc stage input)"
                                              : "cudaMemcpy (tc stage output)",
               p_);
  }

  StageShape s_;
  DeviceProblem p_;
  TcScratch scratch_{};
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
  float *q_, *k_, *g_, *b_, *v_, *w_, *h0_, *d_o_, *dht_;
};

}  // namespace

StageIntra run_tc_fwd_intra(const StageShape& s, const StageTokens& x, CudaFaults faults) {
  TcStageDevice d(s, faults);
  d.put_tokens(x);
  launch_tc_forward(d.p(), d.scratch(), nullptr, nullptr, true, kTcIntra);
  StageIntra out;  // G stays in fwd.intra's shared memory
  out.Tinv = d.get(d.Tinv());
  out.Ut = d.get(d.Ut());
  out.Wt = d.get(d.Wt());
  out.M = d.get(d.M());
  out.Qg = d.get(d.Qg());
  out.Kdec = d.get(d.Kdec());
  out.decay_end = d.get(d.decay_end());
  return out;
}

StageForward run_tc_fwd_inter(const StageShape& s, const StageIntra& intra, const HostMatrix& S0,
                              CudaFaults faults) {
  TcStageDevice d(s, faults);
  d.put_S0(S0);
  d.put(d.Wt(), intra.Wt);
  d.put(d.Kdec(), intra.Kdec);
  d.put(d.Ut(), intra.Ut);
  d.put(d.decay_end(), intra.decay_end);
  launch_tc_forward(d.p(), d.scratch(), nullptr, nullptr, true, kTcState);
  StageForward out;  // O is fwd.output's
  out.U = d.get(d.U());
  out.S_end = d.get(d.p().ht, s.K, s.V);
  return out;
}

HostMatrix run_tc_fwd_output(const StageShape& s, const StageIntra& intra, const HostMatrix& S0,
                             const HostMatrix& U, CudaFaults faults) {
  return run_tc_fwd_output(s, intra, S0, U, OutputPlace{}, faults);
}

HostMatrix run_tc_fwd_output(const StageShape& s, const StageIntra& intra, const HostMatrix& S0,
                             const HostMatrix& U, const OutputPlace& o, CudaFaults faults) {
  TcStageDevice d(s, faults);
  d.place_o(o);
  d.put(d.Qg(), intra.Qg);
  d.put(d.M(), intra.M);
  d.put(d.S0(), S0);
  d.put(d.U(), U);
  launch_tc_forward(d.p(), d.scratch(), nullptr, nullptr, true, kTcOutput);
  return d.get_o();
}

StageBk2 run_tc_bwd_bk2(const StageShape& s, const StageIntra& intra, const HostMatrix& dO,
                        const HostMatrix& dS_end, CudaFaults faults) {
  TcStageDevice d(s, faults);
  d.put_dO(dO);
  d.put_dS_end(dS_end);
  d.put(d.M(), intra.M);
  d.put(d.Kdec(), intra.Kdec);
  d.put(d.Qg(), intra.Qg);
  d.put(d.Wt(), intra.Wt);
  d.put(d.decay_end(), intra.decay_end);
  launch_tc_backward(d.p(), d.scratch(), nullptr, nullptr, true, kTcBk2);
  StageBk2 out;
  out.dU = d.get(d.dU());
  out.dS0 = d.get(d.p().dh0, s.K, s.V);
  return out;
}

StageGradients run_tc_bwd_bk1(const StageShape& s, const StageTokens& x, const StageIntra& intra,
                              const HostMatrix& S0, const HostMatrix& U, const HostMatrix& dO,
                              const HostMatrix& dS_end, const HostMatrix& dU, CudaFaults faults) {
  TcStageDevice d(s, faults);
  d.put_tokens(x);
  d.put_dO(dO);
  d.put(d.Tinv(), intra.Tinv);
  d.put(d.Ut(), intra.Ut);
  d.put(d.Wt(), intra.Wt);
  d.put(d.decay_end(), intra.decay_end);
  // the glue: fwd.inter's S0 and U, bwd.bk2's dS_end and dU
  d.put(d.S0(), S0);
  d.put(d.U(), U);
  d.put(d.dS_end(), dS_end);
  d.put(d.dU(), dU);
  launch_tc_backward(d.p(), d.scratch(), nullptr, nullptr, true, kTcBk1);
  const int L = s.L, K = s.K, V = s.V;
  StageGradients out;
  out.dq = d.get(d.p().dq, L, K);
  out.dk = d.get(d.p().dk, L, K);
  out.dg = d.get(d.p().dg, L, K);
  out.db = d.get(d.p().db, L, K);
  out.dv = d.get(d.p().dv, L, V);
  out.dw = d.get(d.p().dw, L, V);
  return out;
}

}  // namespace deltaproof::kernels::cuda

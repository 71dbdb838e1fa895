// kernels/cuda/tc.cu — cuda-tc: the chunked (WY) algorithm of DESIGN.md
// section 2 on the tensor cores (mma.sync m16n8k16: bf16 operands, f32
// accumulation), chunk 64, K and V up to 128, the bf16 precision class of
// docs/PRECISION.md. The same quantities by the same names as cuda-chunk
// (kernels/cuda/chunk.cu) and cpu-chunk (kernels/cpu/chunk.cpp): G, A, M,
// Tinv, Ut, Wt, Qg, Kdec, decay_end, S0, U.
//
// Forward, three kernels (each launch logged and checked):
//   fwd.intra   tc_fwd_intra   grid (chunks, B*H)    G; A and M (the pairs of 16-row blocks
//                                                    below the diagonal on the tensor cores, each
//                                                    through a reference row, the diagonal blocks
//                                                    pairwise in f32); Tinv (f32); Ut = Tinv (W*V)
//                                                    and Wt = Tinv (B*K*exp G) on the tensor cores;
//                                                    Qg, Kdec^T, decay_end
//   fwd.inter   tc_fwd_state   grid (V tiles, B*H)   in chunk order: S0 (stored), U = Ut - Wt S0
//                                                    (stored), S_end = decay_end S0 + Kdec^T U; ht
//   fwd.output  tc_fwd_output  grid (chunks, B*H)    O = Qg S0 + M U
// The state recurrence is the only sequential part; it is separable over the
// columns of the state (V), so fwd.inter gives each block a tile of them.
//
// Rounding (the bf16 class): every product reads bf16 operands and sums in f32;
// what a stage stores for the next (Ut, Wt, Qg, Kdec, M, S0, U) is bf16; the
// carried state S stays f32 in registers; the outputs are f32 here and rounded
// to bf16 by the backend (kernels::round_outputs). The decays are pairwise,
// never exp(G_r) exp(-G_i): a product between 16-row blocks R > I reads row r
// of block R scaled by exp(G_r - G_n) and row i of block I by exp(G_n - G_i),
// n the first row of block R, both <= 1 for a log-decay g <= 0; the diagonal
// blocks take exp(G_r - G_i) per pair and channel. Rows past T (a partial
// last chunk) are read as zeros: their g = 0 keeps G at the last real row.
//
// Determinism: no atomics; each output element is written by one thread after
// sums in a fixed order.
//
// Compile check: nvcc -std=c++17 -arch=sm_90 -I. -c kernels/cuda/tc.cu
#include "kernels/cuda/tc.hpp"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/mma.cuh"
#include "kernels/cuda/tile.cuh"

namespace deltaproof::kernels::cuda {
namespace {

using mma::Acc;
using mma::bf16;
using mma::FragA;
using mma::FragB;
using mma::kPad;

constexpr int kC = TcConfig::kChunk;
constexpr int kBlock = 16;                             // the sub-blocks of A, M and Tinv
constexpr int kBlocks = kC / kBlock;                   // 4
constexpr int kBlockPairs = 6;                         // (R, I) with R > I
constexpr int kDiagPairs = kBlock * (kBlock + 1) / 2;  // (r, i) with i <= r in one block

// One (b, h, chunk)'s slab of a scratch buffer: chunks of a head are consecutive.
__device__ inline std::size_t slab(int bh, int num_chunks, int c) {
  return static_cast<std::size_t>(bh) * num_chunks + c;
}

// The token a chunk's row t of sequence b reads, as its flat index b T + t,
// or -1 past T (the row is zeros). Under the partial-chunk fault every row of
// the chunk is read: past T into the next sequence's first tokens (the last
// sequence wraps to the first), nonzero data a kernel must not see.
__device__ inline long long source_row(const DeviceProblem& p, int b, int t) {
  const long long row = static_cast<long long>(b) * p.T + t;
  if (DP_FAULT(p.faults, partial_chunk_reads_past_t))
    return row % (static_cast<long long>(p.B) * p.T);
  return t < p.T ? row : -1;
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
};

// Rows t0 .. t0 + 63 of two token tensors x and y of `width` channels (up to
// Width), for (b, h): store(r, i, x, y) for every row r and channel i < Width,
// zeros past T and past width. Where a row is whole 16-byte pieces, each
// thread issues all its loads of both tensors before it uses one (the block
// waits on device memory once, not once per element); else element by element.
template <class In, int Width, class Store>
__device__ void load_row_pairs(const DeviceProblem& p, const void* x, const void* y, int width,
                               int b, int h, int t0, Store store) {
  constexpr int kVec = Piece<In>::kVec, kPieces = kC * Width / kVec;
  constexpr int kPerThread = kPieces / TcConfig::kIntraThreads;
  static_assert(kPieces % TcConfig::kIntraThreads == 0, "every thread loads as many pieces");
  const int tid = threadIdx.x;
  if (width % kVec != 0) {
    for (int idx = tid; idx < kC * Width; idx += blockDim.x) {
      const int r = idx / Width, i = idx % Width, t = t0 + r;
      float xv = 0.0f, yv = 0.0f;
      if (const long long row = source_row(p, b, t); i < width && row >= 0) {
        const std::size_t at = token_offset(p.T, p.H, width, 0, static_cast<int>(row), h, i);
        xv = read_input<In>(x, at), yv = read_input<In>(y, at);
      }
      store(r, i, xv, yv);
    }
    return;
  }
  uint4 xs[kPerThread], ys[kPerThread];
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int idx = tid + j * TcConfig::kIntraThreads;
    const int r = idx / (Width / kVec), i = idx % (Width / kVec) * kVec, t = t0 + r;
    xs[j] = ys[j] = make_uint4(0, 0, 0, 0);
    if (const long long row = source_row(p, b, t); i < width && row >= 0) {
      const std::size_t at = token_offset(p.T, p.H, width, 0, static_cast<int>(row), h, i);
      xs[j] = __ldg(reinterpret_cast<const uint4*>(static_cast<const In*>(x) + at));
      ys[j] = __ldg(reinterpret_cast<const uint4*>(static_cast<const In*>(y) + at));
    }
  }
#pragma unroll
  for (int j = 0; j < kPerThread; ++j) {
    const int idx = tid + j * TcConfig::kIntraThreads;
    const int r = idx / (Width / kVec), i = idx % (Width / kVec) * kVec;
    float xv[kVec], yv[kVec];
    Piece<In>::widen(xs[j], xv);
    Piece<In>::widen(ys[j], yv);
#pragma unroll
    for (int e = 0; e < kVec; ++e) store(r, i + e, xv[e], yv[e]);
  }
}

// ---------------------------------------------------------------------------
// fwd.intra
// ---------------------------------------------------------------------------

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
      round16(max(4 * kC * kF, 4 * (kC * kT + (kBlocks - 1) * kBlock * kY)));
  static constexpr std::size_t kR4 = round16(max(4 * kC * kT, 2 * kC * kB));
  static constexpr std::size_t kBytes = kR1 + kR2 + kR3 + kR4;
};
static_assert(IntraLayout<128, 128>::kBytes <= 113 * 1024, "two fwd.intra blocks fit an SM");

template <class In, int KP, int VP>
__global__ void __launch_bounds__(TcConfig::kIntraThreads, 2)
    tc_fwd_intra(DeviceProblem p, TcScratch s, int num_chunks) {
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
  float* Y = Tinv + kC * L::kT;                // [block][16][17]
  float* A = reinterpret_cast<float*>(R4);     // [r][i]
  bf16* Tb = reinterpret_cast<bf16*>(R4);      // Tinv in bf16, [r][i], after A

  const int c = blockIdx.x, bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  const int t0 = c * kC, K = p.K, V = p.V;
  const std::size_t n = slab(bh, num_chunks, c);
  const int tid = threadIdx.x, warp = tid / 32, lane_id = tid % 32;
  const mma::Lane l = mma::lane();
  auto f = [](const bf16* x, int at) { return __bfloat162float(x[at]); };

  // The chunk's rows, zeros past T and past K (q, k, b in bf16: the class's
  // operands), two tensors at a time with every load of both in flight.
  load_row_pairs<In, KP>(p, p.q, p.k, K, b, h, t0, [&](int r, int i, float q, float k) {
    Q[r * L::kH + i] = to_bf16(q), Kk[r * L::kH + i] = to_bf16(k);
  });
  load_row_pairs<In, KP>(p, p.g, p.b, K, b, h, t0, [&](int r, int i, float g, float bb) {
    G[r * L::kF + i] = g, Bg[r * L::kH + i] = to_bf16(bb);
  });
  __syncthreads();

  // G_r = sum_{i<=r} g_i per channel, in row order (exclusive under the
  // cumulative_decay_off_by_one fault).
  for (int i = tid; i < KP; i += blockDim.x) {
    float running = 0.0f;
    for (int r = 0; r < kC; ++r) {
      const float g = G[r * L::kF + i];
      if (DP_FAULT(p.faults, cumulative_decay_off_by_one)) {
        G[r * L::kF + i] = running;
        running += g;
      } else {
        running += g;
        G[r * L::kF + i] = running;
      }
    }
  }
  __syncthreads();

  // The chunk-end log-decay G_C (rows past T hold g = 0, so the last row's G is
  // the last real row's); exp(G_C) in its place under double_exp_chunk_decay.
  auto chunk_end = [&](int i) {
    const float end = G[(kC - 1) * L::kF + i];
    return DP_FAULT(p.faults, double_exp_chunk_decay) ? expf(end) : end;
  };
  for (int i = tid; i < KP; i += blockDim.x) s.decay_end[n * KP + i] = expf(chunk_end(i));

  // A (strictly lower) and M (lower), the blocks below the diagonal: warp w
  // takes the pair (R, I), A_RI = (B*K*e^(G - G_n))_R (K*e^(G_n - G))_I^T and
  // M_RI = (scale Q*e^(G - G_n))_R (K*e^(G_n - G))_I^T with n = 16 R.
  const float scale = p.scale;
  bf16* M = s.M + n * kC * kC;
  if (warp < kBlockPairs) {
    // the pairs (1,0), (2,0), (2,1), (3,0), (3,1), (3,2) in warp order
    const int R = warp < 1 ? 1 : warp < 3 ? 2 : 3, I = warp - R * (R - 1) / 2, ref = kBlock * R;
    Acc a[2], m[2];
    for (int ks = 0; ks < KP / mma::kK; ++ks) {
      FragA fa, fq;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const int r = ref + l.g + (j & 1) * 8, col = ks * mma::kK + 2 * l.t + (j >> 1) * 8;
        const float e0 = __expf(G[r * L::kF + col] - G[ref * L::kF + col]);
        const float e1 = __expf(G[r * L::kF + col + 1] - G[ref * L::kF + col + 1]);
        const float k0 = f(Kk, r * L::kH + col), k1 = f(Kk, r * L::kH + col + 1);
        fa.r[j] = mma::pack(f(Bg, r * L::kH + col) * k0 * e0, f(Bg, r * L::kH + col + 1) * k1 * e1);
        fq.r[j] =
            mma::pack(scale * f(Q, r * L::kH + col) * e0, scale * f(Q, r * L::kH + col + 1) * e1);
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        FragB fk;
#pragma unroll
        for (int j = 0; j < 2; ++j) {
          const int i = kBlock * I + 8 * nt + l.g, col = ks * mma::kK + 2 * l.t + 8 * j;
          fk.r[j] =
              mma::pack(f(Kk, i * L::kH + col) * __expf(G[ref * L::kF + col] - G[i * L::kF + col]),
                        f(Kk, i * L::kH + col + 1) *
                            __expf(G[ref * L::kF + col + 1] - G[i * L::kF + col + 1]));
        }
        mma::mma(a[nt], fa, fk);
        mma::mma(m[nt], fq, fk);
      }
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = ref + mma::acc_row(l, e), i = kBlock * I + 8 * nt + mma::acc_col(l, e);
        A[r * L::kT + i] = a[nt].c[e];
        M[r * kC + i] = to_bf16(m[nt].c[e]);
      }
  }
  // The diagonal blocks, pair by pair in f32: A_ri = sum_k b_r k_r k_i e^(G_r - G_i)
  // (i < r) and M_ri = scale sum_k q_r k_i e^(G_r - G_i) (i <= r).
  for (int idx = tid; idx < kBlocks * kDiagPairs; idx += blockDim.x) {
    const int blk = idx / kDiagPairs, q = idx % kDiagPairs;
    int rl = static_cast<int>((sqrtf(8.0f * q + 1.0f) - 1.0f) * 0.5f);
    while (rl * (rl + 1) / 2 > q) --rl;
    while ((rl + 1) * (rl + 2) / 2 <= q) ++rl;
    const int r = kBlock * blk + rl, i = kBlock * blk + (q - rl * (rl + 1) / 2);
    float a = 0.0f, m = 0.0f;
#pragma unroll 4
    for (int k = 0; k < KP; k += 2) {  // channels past K are zeros
      const float2 kr =
          __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(Kk + r * L::kH + k));
      const float2 br =
          __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(Bg + r * L::kH + k));
      const float2 qr =
          __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(Q + r * L::kH + k));
      const float2 ki =
          __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(Kk + i * L::kH + k));
      const float e0 = ki.x * __expf(G[r * L::kF + k] - G[i * L::kF + k]);
      const float e1 = ki.y * __expf(G[r * L::kF + k + 1] - G[i * L::kF + k + 1]);
      a += br.x * kr.x * e0 + br.y * kr.y * e1;
      m += qr.x * e0 + qr.y * e1;
    }
    A[r * L::kT + i] = i < r ? a : 0.0f;
    M[r * kC + i] = to_bf16(scale * m);
  }
  for (int idx = tid; idx < kC * kC; idx += blockDim.x)
    if (idx % kC > idx / kC) M[idx] = to_bf16(0.0f);  // above the diagonal

  // What the later stages read: Qg = scale Q*exp G, Kdec^T = (K*exp(G_C - G))^T.
  bf16* Qg = s.Qg + n * kC * KP;
  bf16* KdecT = s.KdecT + n * KP * kC;
  for (int idx = tid; idx < kC * KP; idx += blockDim.x) {
    const int r = idx / KP, i = idx % KP;  // consecutive threads, consecutive channels
    Qg[idx] = to_bf16(scale * f(Q, r * L::kH + i) * __expf(G[r * L::kF + i]));
  }
  for (int idx = tid; idx < KP * kC; idx += blockDim.x) {
    const int i = idx / kC, r = idx % kC;  // consecutive threads, consecutive rows
    KdecT[idx] = to_bf16(f(Kk, r * L::kH + i) * __expf(chunk_end(i) - G[r * L::kF + i]));
  }
  __syncthreads();  // Q is read for the last time

  // (B*K*exp G)^T, the operand of Wt, where Q was.
  for (int idx = tid; idx < KP * kC; idx += blockDim.x) {
    const int i = idx / kC, r = idx % kC;
    BKET[i * L::kB + r] =
        to_bf16(f(Bg, r * L::kH + i) * f(Kk, r * L::kH + i) * __expf(G[r * L::kF + i]));
  }
  __syncthreads();  // K, B and G are read for the last time

  // (W*V)^T where K and B were; Tinv = (I + A)^-1, unit lower triangular, where
  // G was: the diagonal blocks by forward substitution, a column per lane
  // (warps 0-3); the blocks above the diagonal are zeros (warps 4-7).
  load_row_pairs<In, VP>(p, p.w, p.v, V, b, h, t0, [&](int r, int j, float w, float v) {
    WVT[j * L::kB + r] = to_bf16(w * v);
  });
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
    for (int idx = tid - kBlocks * 32; idx < kC * kC; idx += blockDim.x - kBlocks * 32) {
      const int r = idx / kC, i = idx % kC;
      if (i / kBlock > r / kBlock) Tinv[r * L::kT + i] = 0.0f;
    }
  }
  __syncthreads();
  // The blocks below the diagonal, one diagonal of blocks at a time:
  // Tinv_RI = -Tinv_RR sum_{J=I}^{R-1} A_RJ Tinv_JI.
  for (int d = 1; d < kBlocks; ++d) {
    const int count = (kBlocks - d) * kBlock * kBlock;
    for (int idx = tid; idx < count; idx += blockDim.x) {
      const int blk = idx / (kBlock * kBlock), R = d + blk, I = R - d;
      const int rl = idx / kBlock % kBlock, il = idx % kBlock;
      float y = 0.0f;
      for (int j = kBlock * I; j < kBlock * R; ++j)
        y += A[(kBlock * R + rl) * L::kT + j] * Tinv[j * L::kT + kBlock * I + il];
      Y[(blk * kBlock + rl) * L::kY + il] = y;
    }
    __syncthreads();
    for (int idx = tid; idx < count; idx += blockDim.x) {
      const int blk = idx / (kBlock * kBlock), R = d + blk, I = R - d;
      const int rl = idx / kBlock % kBlock, il = idx % kBlock;
      float x = 0.0f;
      for (int m = 0; m < kBlock; ++m)
        x -= Tinv[(kBlock * R + rl) * L::kT + kBlock * R + m] * Y[(blk * kBlock + m) * L::kY + il];
      Tinv[(kBlock * R + rl) * L::kT + kBlock * I + il] = x;
    }
    __syncthreads();
  }

  // Tinv in bf16, the operand of the next products, where A was.
  for (int idx = tid; idx < kC * kC; idx += blockDim.x)
    Tb[idx / kC * L::kB + idx % kC] = to_bf16(Tinv[idx / kC * L::kT + idx % kC]);
  __syncthreads();

  // Ut = Tinv (W*V), Wt = Tinv (B*K*exp G): warp w takes the 16 rows of block
  // w % 4 and half the columns; Tinv's row block R reads its column blocks <= R.
  const int mt = warp % kBlocks, half = warp / kBlocks;
  auto product = [&](auto columns, const bf16* operand_t, bf16* out) {
    constexpr int kCols = decltype(columns)::value, kTiles = kCols / 2 / mma::kN;
    Acc acc[kTiles];
    for (int ks = 0; ks <= mt; ++ks) {
      const FragA fa = mma::load_a(Tb, L::kB, kBlock * mt, ks * mma::kK);
#pragma unroll
      for (int j = 0; j < kTiles; ++j)
        mma::mma(acc[j], fa,
                 mma::load_b(operand_t, L::kB, half * kCols / 2 + j * mma::kN, ks * mma::kK));
    }
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
// fwd.inter: the state recurrence over chunks, a tile of kVTile state columns
// per block. Warp w holds rows [w KP/4, (w+1) KP/4) of S in registers (f32).
// ---------------------------------------------------------------------------

template <int KP>
struct StateLayout {
  static constexpr int kVT = TcConfig::kVTile;
  static constexpr int kW = KP + kPad;   // rows of Wt and S^T
  static constexpr int kD = kC + kPad;   // rows of Kdec^T and U^T
  static constexpr int kU = kVT + kPad;  // rows of the Ut tile
  static constexpr std::size_t kBufferBytes =
      sizeof(bf16) * (kC * kW + KP * kD + kC * kU) + sizeof(float) * KP;
  static constexpr std::size_t kBytes = 2 * kBufferBytes + sizeof(bf16) * kVT * (kW + kD);
};

template <int KP, int VP>
__global__ void __launch_bounds__(TcConfig::kStateThreads)
    tc_fwd_state(DeviceProblem p, TcScratch s, int num_chunks) {
  using L = StateLayout<KP>;
  constexpr int kVT = L::kVT, kRows = KP / 4, kMT = kRows / mma::kM, kNT = kVT / mma::kN;
  extern __shared__ __align__(16) unsigned char shared[];
  // Two buffers of a chunk's operands: chunk c + 1's arrive while c is used.
  struct Buffer {
    bf16 *Wt, *KdecT, *Ut;
    float* decay_end;
  };
  auto buffer = [&](int parity) {
    Buffer at;
    at.Wt = reinterpret_cast<bf16*>(shared + parity * L::kBufferBytes);
    at.KdecT = at.Wt + kC * L::kW;
    at.Ut = at.KdecT + KP * L::kD;
    at.decay_end = reinterpret_cast<float*>(at.Ut + kC * L::kU);
    return at;
  };
  bf16* ST = reinterpret_cast<bf16*>(shared + 2 * L::kBufferBytes);  // S0^T, [v][k]
  bf16* UT = ST + kVT * L::kW;                                       // U^T, [v][i]

  const int v0 = blockIdx.x * kVT, bh = blockIdx.y, b = bh / p.H, h = bh % p.H;
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();

  auto fetch = [&](int c, const Buffer& to) {
    const std::size_t n = slab(bh, num_chunks, c);
    for (int idx = tid; idx < kC * KP / 8; idx += blockDim.x) {
      const int r = idx / (KP / 8), x = idx % (KP / 8) * 8;
      mma::copy_async_16(to.Wt + r * L::kW + x, s.Wt + n * kC * KP + r * KP + x);
    }
    for (int idx = tid; idx < KP * kC / 8; idx += blockDim.x) {
      const int r = idx / (kC / 8), x = idx % (kC / 8) * 8;
      mma::copy_async_16(to.KdecT + r * L::kD + x, s.KdecT + n * KP * kC + r * kC + x);
    }
    for (int idx = tid; idx < kC * kVT / 8; idx += blockDim.x) {
      const int r = idx / (kVT / 8), x = idx % (kVT / 8) * 8;
      mma::copy_async_16(to.Ut + r * L::kU + x, s.Ut + n * kC * VP + r * VP + v0 + x);
    }
    for (int idx = tid; idx < KP / 4; idx += blockDim.x)
      mma::copy_async_16(to.decay_end + 4 * idx, s.decay_end + n * KP + 4 * idx);
    mma::copy_async_commit();
  };

  // The warp's part of S, and body(element, k, j) for each of its elements:
  // row k of the state, column j of the block's tile.
  Acc S[kMT][kNT];
  auto for_state = [&](auto body) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          body(S[mt][nt].c[e], warp * kRows + mt * mma::kM + mma::acc_row(l, e),
               nt * mma::kN + mma::acc_col(l, e));
  };
  auto load_h0 = [&] {
    const bool ignored = DP_FAULT(p.faults, h0_ignored);
    for_state([&](float& x, int k, int j) {
      const int v = v0 + j;
      x = !ignored && k < p.K && v < p.V ? p.h0[state_offset(p.H, p.K, p.V, b, h, k, v)] : 0.0f;
    });
  };
  load_h0();
  fetch(0, buffer(0));

  for (int c = 0; c < num_chunks; ++c) {
    const Buffer in = buffer(c & 1);
    const std::size_t n = slab(bh, num_chunks, c);
    mma::copy_async_wait_all();
    __syncthreads();
    if (c + 1 < num_chunks) fetch(c + 1, buffer((c + 1) & 1));
    if (c > 0 && DP_FAULT(p.faults, state_not_carried)) load_h0();

    // S0 as the products read it (bf16), transposed; stored for fwd.output.
    for_state([&](float& x, int k, int j) { ST[j * L::kW + k] = to_bf16(x); });
    __syncthreads();
    for (int idx = tid; idx < kVT * KP / 8; idx += blockDim.x) {
      const int v = idx / (KP / 8), x = idx % (KP / 8) * 8;
      *reinterpret_cast<uint4*>(s.S0T + n * VP * KP + (v0 + v) * KP + x) =
          *reinterpret_cast<const uint4*>(ST + v * L::kW + x);
    }

    // U = Ut - Wt S0: warp w takes rows [16 w, 16 w + 16).
    Acc WtS[kNT];
    for (int ks = 0; ks < KP / mma::kK; ++ks) {
      const FragA fa = mma::load_a(in.Wt, L::kW, warp * mma::kM, ks * mma::kK);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
        mma::mma(WtS[nt], fa, mma::load_b(ST, L::kW, nt * mma::kN, ks * mma::kK));
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = warp * mma::kM + mma::acc_row(l, e), v = nt * mma::kN + mma::acc_col(l, e);
        const float u = __bfloat162float(in.Ut[r * L::kU + v]) - WtS[nt].c[e];
        UT[v * L::kD + r] = to_bf16(u);
      }
    __syncthreads();
    for (int idx = tid; idx < kVT * kC / 8; idx += blockDim.x) {
      const int v = idx / (kC / 8), x = idx % (kC / 8) * 8;
      *reinterpret_cast<uint4*>(s.UT + n * VP * kC + (v0 + v) * kC + x) =
          *reinterpret_cast<const uint4*>(UT + v * L::kD + x);
    }

    // S_end = Diag(exp G_C) S0 + Kdec^T U.
    for_state([&](float& x, int k, int) { x *= in.decay_end[k]; });
#pragma unroll
    for (int ks = 0; ks < kC / mma::kK; ++ks)
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        const FragA fa = mma::load_a(in.KdecT, L::kD, warp * kRows + mt * mma::kM, ks * mma::kK);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
          mma::mma(S[mt][nt], fa, mma::load_b(UT, L::kD, nt * mma::kN, ks * mma::kK));
      }
  }

  for_state([&](float& x, int k, int j) {
    const int v = v0 + j;
    if (k < p.K && v < p.V) p.ht[state_offset(p.H, p.K, p.V, b, h, k, v)] = x;
  });
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
  const std::size_t n = slab(bh, num_chunks, c);
  const int tid = threadIdx.x, warp = tid / 32;
  const mma::Lane l = mma::lane();

  auto fetch = [&](bf16* to, int ld, const bf16* from, int rows, int cols) {
    for (int idx = tid; idx < rows * cols / 8; idx += blockDim.x) {
      const int r = idx / (cols / 8), x = idx % (cols / 8) * 8;
      mma::copy_async_16(to + r * ld + x, from + r * cols + x);
    }
  };
  fetch(Qg, L::kW, s.Qg + n * kC * KP, kC, KP);
  fetch(S0T, L::kW, s.S0T + n * VP * KP, VP, KP);
  fetch(M, L::kD, s.M + n * kC * kC, kC, kC);
  fetch(UT, L::kD, s.UT + n * VP * kC, VP, kC);
  mma::copy_async_commit();
  mma::copy_async_wait_all();
  __syncthreads();

  const int mt = warp % kBlocks, col0 = warp / kBlocks * VP / 2;
  Acc O[kTiles];
  for (int ks = 0; ks < KP / mma::kK; ++ks) {
    const FragA fa = mma::load_a(Qg, L::kW, kBlock * mt, ks * mma::kK);
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      mma::mma(O[j], fa, mma::load_b(S0T, L::kW, col0 + j * mma::kN, ks * mma::kK));
  }
  for (int ks = 0; ks <= mt; ++ks) {  // M is lower triangular
    const FragA fa = mma::load_a(M, L::kD, kBlock * mt, ks * mma::kK);
#pragma unroll
    for (int j = 0; j < kTiles; ++j)
      mma::mma(O[j], fa, mma::load_b(UT, L::kD, col0 + j * mma::kN, ks * mma::kK));
  }
#pragma unroll
  for (int j = 0; j < kTiles; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int t = t0 + kBlock * mt + mma::acc_row(l, e);
      const int v = col0 + j * mma::kN + mma::acc_col(l, e);
      if (t < p.T && v < p.V) p.o[token_offset(p.T, p.H, p.V, b, t, h, v)] = O[j].c[e];
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

template <class In, int KP, int VP>
void launch_forward(const DeviceProblem& p, const TcScratch& s, cudaStream_t stream, LaunchLog* log,
                    bool synchronous, unsigned stages) {
  const int num_chunks = (p.T + kC - 1) / kC;
  const dim3 chunk_grid(num_chunks, p.B * p.H);
  const dim3 state_grid(VP / TcConfig::kVTile, p.B * p.H);
  auto check = [&](const char* what) {
    CUDA_CHECK(cudaGetLastError(), what, p);
    if (synchronous) CUDA_CHECK(cudaStreamSynchronize(stream), what, p);
  };
  // one instantiation per (In, KP, VP): its attributes set once, by whichever
  // thread comes first (a static's initialisation; retried if it threw)
  static const bool ready = [&] {
    allow_shared(tc_fwd_intra<In, KP, VP>, IntraLayout<KP, VP>::kBytes, "tc_fwd_intra", p);
    allow_shared(tc_fwd_state<KP, VP>, StateLayout<KP>::kBytes, "tc_fwd_state", p);
    allow_shared(tc_fwd_output<KP, VP>, OutputLayout<KP, VP>::kBytes, "tc_fwd_output", p);
    return true;
  }();
  (void)ready;
  if (stages & kTcIntra) {
    tc_fwd_intra<In, KP, VP>
        <<<chunk_grid, TcConfig::kIntraThreads, IntraLayout<KP, VP>::kBytes, stream>>>(p, s,
                                                                                       num_chunks);
    check("tc_fwd_intra");
    if (log) log->note("fwd.intra", "tc_fwd_intra");
  }
  if (stages & kTcState) {
    tc_fwd_state<KP, VP><<<state_grid, TcConfig::kStateThreads, StateLayout<KP>::kBytes, stream>>>(
        p, s, num_chunks);
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

template <class In>
void dispatch_forward(const DeviceProblem& p, const TcScratch& s, cudaStream_t stream,
                      LaunchLog* log, bool synchronous, unsigned stages) {
  const int KP = padded(p.K), VP = padded(p.V);
  if (KP == 64 && VP == 64)
    return launch_forward<In, 64, 64>(p, s, stream, log, synchronous, stages);
  if (KP == 64 && VP == 128)
    return launch_forward<In, 64, 128>(p, s, stream, log, synchronous, stages);
  if (KP == 128 && VP == 64)
    return launch_forward<In, 128, 64>(p, s, stream, log, synchronous, stages);
  return launch_forward<In, 128, 128>(p, s, stream, log, synchronous, stages);
}

// The scratch buffers' sizes in elements, each rounded up to 256 bytes.
struct ScratchSizes {
  std::size_t Wt, Ut, KdecT, Qg, M, UT, S0T, decay_end;
};
ScratchSizes scratch_sizes(const DeviceProblem& p) {
  const std::size_t chunks = static_cast<std::size_t>(p.B) * p.H * ((p.T + kC - 1) / kC);
  const std::size_t KP = padded(p.K), VP = padded(p.V);
  auto round = [](std::size_t elements) { return (elements + 127) / 128 * 128; };
  return {round(chunks * kC * KP), round(chunks * kC * VP), round(chunks * KP * kC),
          round(chunks * kC * KP), round(chunks * kC * kC), round(chunks * VP * kC),
          round(chunks * VP * KP), round(chunks * KP)};
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

std::size_t tc_scratch_bytes(const DeviceProblem& p) {
  const ScratchSizes z = scratch_sizes(p);
  return sizeof(bf16) * (z.Wt + z.Ut + z.KdecT + z.Qg + z.M + z.UT + z.S0T) +
         sizeof(float) * z.decay_end;
}

TcScratch carve_tc_scratch(const DeviceProblem& p, void* base) {
  const ScratchSizes z = scratch_sizes(p);
  TcScratch s;
  auto* at = static_cast<bf16*>(base);
  s.Wt = at, at += z.Wt;
  s.Ut = at, at += z.Ut;
  s.KdecT = at, at += z.KdecT;
  s.Qg = at, at += z.Qg;
  s.M = at, at += z.M;
  s.UT = at, at += z.UT;
  s.S0T = at, at += z.S0T;
  s.decay_end = reinterpret_cast<float*>(at);
  return s;
}

void launch_tc_forward(const DeviceProblem& p, const TcScratch& scratch, cudaStream_t stream,
                       LaunchLog* log, bool synchronous, unsigned stages) {
  if (p.input == InputType::bf16)
    dispatch_forward<__nv_bfloat16>(p, scratch, stream, log, synchronous, stages);
  else
    dispatch_forward<float>(p, scratch, stream, log, synchronous, stages);
}

void run_tc(const DeviceProblem& p, bool backward, LaunchLog& log) {
  if (backward) throw std::runtime_error("cuda-tc has no backward yet (" + describe(p) + ")");
  DeviceBuffer scratch((tc_scratch_bytes(p) + sizeof(float) - 1) / sizeof(float), "cuda-tc scratch",
                       p);
  launch_tc_forward(p, carve_tc_scratch(p, scratch.get()), nullptr, &log, true);
}

}  // namespace deltaproof::kernels::cuda

// kernels/cuda/chunk.cu — cuda-chunk: the chunked (WY) algorithm of DESIGN.md
// section 2 on the device, in f32. The twin of kernels/cpu/chunk.cpp: the same
// stages, the same names (G, A, Tinv, Ut, Wt, U, M, Qg, Kdec, decay_end, dS),
// the same equations and the same fault points. Read the two side by side.
//
// Stages, one kernel each (launched in this order, each checked and logged):
//   fwd.intra  chunk_intra_kernel  grid (chunks, B*H)   G, A, M, Tinv, Ut, Wt, Qg, Kdec, decay_end
//   fwd.inter  chunk_inter_kernel  grid (V tiles, B*H)  in chunk order: S0, U, O, S_end; ht
//   bwd.bk2    bk2_kernel          grid (V tiles, B*H)  in reverse chunk order: dU, dS0; and the
//                                                       glue (dS_end handed back, dh0)
//   bwd.bk1    bk1_kernel          grid (chunks, B*H)   intra-chunk adjoint: dq dk dv dg db dw
// The recurrences over chunks are separable over the columns of the state (V),
// so fwd.inter and bwd.bk2 give each block a tile of columns (a warp's width).
//
// Inputs: q k v g b w are f32 or bf16 (DeviceProblem::input). fwd.intra and
// bwd.bk1, the kernels that read them, are templates on that element type and
// widen each element as they read it (read_input); the dispatch is in
// run_chunk. All arithmetic and every sum is f32.
//
// Precision contracts (kernels/precision.hpp, docs/PRECISION.md): under a
// tf32 or bf16 contract (DeviceProblem::rounding) every matrix product rounds
// its two operands as it reads them (operand()) and, at bf16, each stage
// rounds what it stores for a later one (intermediate(): Ut, Wt, U, dU, and
// the states S0 and dS_end as a product reads them; the carried state stays
// f32), at the points cpu-chunk rounds. bwd.bk1 forms dY as -dX S0^T where
// cpu-chunk forms -Tinv^T (dU S0^T): an association a kernel of the class may
// choose, so the two round different intermediates there.
//
// Work sharing. Each matrix product sums a(m, d) b(d, n) over d. A thread takes
// an item (for_quads): one n (consecutive threads take consecutive n, so b is
// read coalesced from global memory or without bank conflicts from shared
// memory) and a quad of four consecutive m (the same for a warp's threads, so
// the four a's are one broadcast 16-byte load), and keeps the four sums in
// registers: two loads per four multiply-adds. So a is stored with m
// contiguous, which makes several buffers below transposes (suffix T), and
// their rows start at multiples of 4. In the sequential kernels and bwd.bk1
// (few warps per SM) the loops over d are unrolled by 8, so that a thread has
// more loads in flight. The products through the pairwise decays
// exp(G_r - G_i) (A, M and their adjoints) take items the same way, reading
// their four rows' operands one by one. Shared buffers whose columns are read
// one row per thread have odd row strides (no bank conflicts).
// Each thread sums its elements' reduction index in a fixed order: no atomics,
// every output element written by exactly one thread, so results are bitwise the
// same run to run. Within a chunk, rows r = 0..L-1 (L = T - c*C for a partial
// last chunk); every exponential is of G_r - G_i <= 0 or of G <= 0, never
// exp(G_r) * exp(-G_i).
//
// Scratch lives in global memory, one slab per (b, h, chunk) of each buffer,
// all carved from one allocation freed on return. Nothing is filled on
// allocation: each stage writes every element that a later stage reads (rows
// past L as zeros, the padding of rows rounded up to 4 as zeros), except the
// dU that bwd.bk2 accumulates into, which is zeroed first. The sequential
// kernels ask L2 for the next chunk's operands while they work on one
// (prefetch_l2), so that their loads do not wait on device memory.
//
// Layers: the launch configuration, the largest shape and each kernel's shared
// memory are kernels/cuda/traits.cuh (ChunkConfig); the quads, loads, rounding
// points and prefetches kernels/cuda/tile.cuh; the kernels below are written in
// them, bwd.bk1 as one member function of Bk1Chunk per sub-stage.
//
// Compile check: nvcc -std=c++17 -arch=sm_90 -I. -c kernels/cuda/chunk.cu
// (add -DDELTAPROOF_FALSIFY for the fault points, -Xptxas -v for registers).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/stages.hpp"
#include "kernels/cuda/tile.cuh"
#include "kernels/cuda/traits.cuh"

namespace deltaproof::kernels::cuda {
namespace {

// A scratch buffer: one slab per (b, h, chunk) of `rows x cols` floats, its
// matrix stored transposed or by rows. lay_out_scratch sets each buffer's shape
// (the one statement of the layout); a kernel finds its chunk's slab by it, and
// the stage launcher reads and writes a slab by it.
struct ScratchBuffer {
  float* base = nullptr;  // null for a buffer not allocated
  int rows = 0, cols = 0;
  bool transposed = false;
  __host__ __device__ int slab_floats() const { return rows * cols; }
  __host__ __device__ float* slab(std::size_t s) const {
    return base ? base + s * static_cast<std::size_t>(rows) * cols : nullptr;
  }
};

// The global scratch, one slab per (b, h, chunk) in each buffer; slab s of a
// buffer of rows x cols slabs starts at s * rows * cols. Every rows x cols is
// a multiple of 4 (C is), so every slab is 16-byte aligned. K4, V4: K and V
// rounded up to 4. A buffer suffixed T holds the transpose of its matrix.
struct ChunkScratch {
  bool backward;  // the backward's buffers are allocated (and the forward fills its share)
  // fwd.intra -> fwd.inter (and bwd.bk1)
  ScratchBuffer MT;         // C x C   M^T, M lower (diagonal included): MT[i][r] = 0 for i > r
  ScratchBuffer QgT;        // K x C   (Q * exp(G))^T
  ScratchBuffer WtT;        // K x C   Wt^T
  ScratchBuffer UtT;        // V x C   Ut^T
  ScratchBuffer Kdec;       // C x K4  K * exp(G_C - G)
  ScratchBuffer decay_end;  // 1 x K4  exp(G_C)
  // fwd.intra -> bwd.bk2 / bwd.bk1 (backward only)
  ScratchBuffer M;      // C x C
  ScratchBuffer Qg;     // C x K4
  ScratchBuffer Wt;     // C x K4
  ScratchBuffer KdecT;  // K x C
  ScratchBuffer Tinv;   // C x C   (I + A)^-1, lower
  ScratchBuffer G;      // C x K   cumulative log-decay from the chunk start
  // the glue, fwd.inter -> bwd.bk1: the chunk-start state and U (backward only)
  ScratchBuffer S0T;  // V x K4
  ScratchBuffer UT;   // V x C
  // the glue, bwd.bk2 -> bwd.bk1: the dS_end handed back and dU
  ScratchBuffer dS_endT;  // V x K4
  ScratchBuffer dU;       // C x V4  zeroed, then accumulated into by bwd.bk2
};

// One block of fwd.inter or bwd.bk2: the state columns [v0, v0 + cols) of one
// (b, h); blockIdx is (column tile, b * H + h).
struct ColumnTile {
  int bh, b, h, v0, cols;
};
__device__ inline ColumnTile column_tile(const DeviceProblem& p, int v_tile) {
  const int bh = blockIdx.y, v0 = blockIdx.x * v_tile;
  return {bh, bh / p.H, bh % p.H, v0, min(v_tile, p.V - v0)};
}

// The tile's columns of a [B,H,K,V] state (h0, dht) into the shared K x cols
// `tile` at row stride Ss; zeros where `zero` (a fault that drops the state).
__device__ inline void load_state_tile(const DeviceProblem& p, const ColumnTile& t,
                                       const float* state, bool zero, float* tile, int Ss) {
  for (int idx = threadIdx.x; idx < p.K * t.cols; idx += blockDim.x) {
    const int k = idx / t.cols, j = idx % t.cols;
    tile[k * Ss + j] = zero ? 0.0f : state[state_offset(p.H, p.K, p.V, t.b, t.h, k, t.v0 + j)];
  }
}

// Where a block's chunk lies: its (b, h), first token t0, length L, scratch slab.
struct ChunkSite {
  int b, h, t0, L;
  std::size_t slab;
};

// The length of chunk c: T - c*C for a partial last chunk, unless the
// partial-chunk fault reads a whole chunk of rows, past T (as the cpu twin).
__device__ inline int chunk_length(const DeviceProblem& p, int c) {
  if (DP_FAULT(p.faults, partial_chunk_reads_past_t)) return p.chunk;
  return min(p.chunk, p.T - c * p.chunk);
}

__device__ inline ChunkSite chunk_site(const DeviceProblem& p, int num_chunks, int bh, int c) {
  ChunkSite at;
  at.b = bh / p.H;
  at.h = bh % p.H;
  at.t0 = c * p.chunk;
  at.L = chunk_length(p, c);
  at.slab = static_cast<std::size_t>(bh) * num_chunks + c;
  return at;
}

// Where token t's vector of a token tensor [B,T,H,width] starts, for (b, h):
// its element i is at token_row(...) + i. t >= T only under
// partial_chunk_reads_past_t: the address then wraps around the buffer, as the
// cpu twin's `at % buffer.size()` (kernels/cpu/backends.cpp); the buffer is
// whole vectors, so a vector wraps whole.
__device__ inline std::size_t token_row(const DeviceProblem& p, int width, int b, int h, int t) {
  std::size_t at = token_offset(p.T, p.H, width, b, t, h, 0);
  if (t >= p.T) at %= static_cast<std::size_t>(p.B) * p.T * p.H * width;
  return at;
}

// ---------------------------------------------------------------------------
// fwd.intra: the chunk's WY representation, everything that does not depend on
// S0. Block: one chunk of one (b, h). Shared: G, keys (C x K at an odd stride);
// A (C x C), TinvT (C x C at quad_stride). Writes whole slabs: rows past L and
// the padding past K as zeros.
template <class In, class R>
__global__ void __launch_bounds__(ChunkConfig::kThreads, ChunkConfig::kBlocksPerSM)
    chunk_intra_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks) {
  const int C = p.chunk, K = p.K, V = p.V, K4 = round_up4(K);
  const int Ks = odd_stride(K), Cs = quad_stride(C);
  const ChunkSite at = chunk_site(p, num_chunks, blockIdx.y, blockIdx.x);
  const int L = at.L;
  const bool backward = scratch.backward;
  extern __shared__ __align__(16) float shared[];
  float* G = shared;         // C x Ks
  float* keys = G + C * Ks;  // C x Ks; Y = B*K*exp(G) in their place once Kdec is formed
  float* A = keys + C * Ks;  // C x C
  float* TinvT = A + C * C;  // C x Cs  TinvT[i][r] = Tinv_ri
  float* MT = scratch.MT.slab(at.slab);
  float* QgT = scratch.QgT.slab(at.slab);
  float* WtT = scratch.WtT.slab(at.slab);
  float* UtT = scratch.UtT.slab(at.slab);
  float* Kdec = scratch.Kdec.slab(at.slab);
  float* decay_end = scratch.decay_end.slab(at.slab);
  // the backward's (null in a forward run; written only when backward)
  float* M = scratch.M.slab(at.slab);
  float* Qg = scratch.Qg.slab(at.slab);
  float* Wt = scratch.Wt.slab(at.slab);
  float* KdecT = scratch.KdecT.slab(at.slab);
  float* Tinv = scratch.Tinv.slab(at.slab);
  float* G_slab = scratch.G.slab(at.slab);
  // where row r's token vector starts (rows r < L)
  auto row = [&](int width, int r) { return token_row(p, width, at.b, at.h, at.t0 + r); };

  // q and b (read by A and M) and w and v (by Ut), asked for ahead
  prefetch_tokens_l2<In>(p, p.q, K, at.b, at.h, at.t0, L);
  prefetch_tokens_l2<In>(p, p.b, K, at.b, at.h, at.t0, L);
  prefetch_tokens_l2<In>(p, p.w, V, at.b, at.h, at.t0, L);
  prefetch_tokens_l2<In>(p, p.v, V, at.b, at.h, at.t0, L);
  // g and k of the chunk's rows, zero past L
  for (int idx = threadIdx.x; idx < C * K; idx += blockDim.x) {
    const int r = idx / K, k = idx % K;
    G[r * Ks + k] = r < L ? read_input<In>(p.g, row(K, r) + k) : 0.0f;
    keys[r * Ks + k] = r < L ? read_input<In>(p.k, row(K, r) + k) : 0.0f;
  }
  __syncthreads();
  // G_r = sum_{i<=r} g_i per channel k, in place, summed in row order by one
  // thread per channel (sum_{i<r}: exclusive, under cumulative_decay_off_by_one)
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    float running = 0.0f;
    for (int r = 0; r < L; ++r) {
      const float g = G[r * Ks + k];
      if (DP_FAULT(p.faults, cumulative_decay_off_by_one)) {
        G[r * Ks + k] = running;
        running += g;
      } else {
        running += g;
        G[r * Ks + k] = running;
      }
    }
  }
  __syncthreads();

  // A_ri = sum_k b_rk k_rk exp(G_rk - G_ik) k_ik  (i < r; without b under b_dropped_from_a)
  // M_ri = sum_k q_rk exp(G_rk - G_ik) k_ik       (i <= r)
  // Item: partner i (the threads read the columns of G and keys, at an odd
  // stride), rows r0..r0+3 (broadcast; q and b from the tokens).
  for_quads(C / 4, C, [&](int r0, int i) {
    float a[4] = {}, m[4] = {};
    if (r0 < L && i <= r0 + 3) {
      // Each row's offset is taken where it is read (r < L there), not kept in
      // a local array: a loop filling one could write past it, which neither
      // the numbers nor memcheck see reliably (docs/MUTATION.md, m140/m141).
      for (int k = 0; k < K; ++k) {
        const float G_i = G[i * Ks + k], key_i = keys[i * Ks + k];
#pragma unroll
        for (int s = 0; s < kQuad; ++s) {
          const int r = r0 + s;
          if (i > r || r >= L) continue;
          const float decayed_key = operand<R>(p, key_i * expf(G[r * Ks + k] - G_i));
          const std::size_t at_r = row(K, r);
          m[s] += operand<R>(p, read_input<In>(p.q, at_r + k)) * decayed_key;
          const float erase =
              DP_FAULT(p.faults, b_dropped_from_a) ? 1.0f : read_input<In>(p.b, at_r + k);
          a[s] += operand<R>(p, erase * keys[r * Ks + k]) * decayed_key;
        }
      }
    }
#pragma unroll
    for (int s = 0; s < kQuad; ++s) {
      const int r = r0 + s;
      A[r * C + i] = i < r ? a[s] : 0.0f;
      if (backward) M[r * C + i] = m[s];
    }
    store_quad(MT + i * C + r0, m);
  });
  __syncthreads();

  // Tinv = (I + A)^-1 by forward substitution, one thread per column j:
  //   Tinv_jj = 1,  Tinv_rj = -sum_{j<=i<r} A_ri Tinv_ij  (r > j),  0 above the diagonal.
  // Kept transposed: column j of Tinv is row j of TinvT, this thread's alone,
  // so it needs no barrier.
  for (int j = threadIdx.x; j < C; j += blockDim.x) {
    for (int r = 0; r < C; ++r) {
      float x = 0.0f;
      if (j < L && r < L) {
        if (r == j) x = 1.0f;
        for (int i = j; i < r; ++i) x -= A[r * C + i] * TinvT[j * Cs + i];
      }
      TinvT[j * Cs + r] = x;
      if (backward) Tinv[r * C + j] = x;
    }
  }
  // Meanwhile, elementwise with one exp(G) per element: Qg = Q*exp(G),
  // Kdec = K*exp(G_C - G) with G_C the last row's G (exp(G_C) in place of G_C
  // under double_exp_chunk_decay, the bug of background/000), and Y = B*K*exp(G)
  // in place of the keys. Item: channel k (K4 of them: the padding is zeros),
  // rows r0..r0+3 (zeros past L).
  for_quads(C / 4, K4, [&](int r0, int k) {
    float qg[4] = {}, kdec[4] = {};
    if (k < K) {
      const float G_end = G[(L - 1) * Ks + k];
      const float end = DP_FAULT(p.faults, double_exp_chunk_decay) ? expf(G_end) : G_end;
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int r = r0 + s;
        if (r >= L) continue;
        const std::size_t rk = row(K, r) + k;
        const float G_rk = G[r * Ks + k], E = expf(G_rk), key = keys[r * Ks + k];
        qg[s] = read_input<In>(p.q, rk) * E;
        kdec[s] = key * expf(end - G_rk);
        keys[r * Ks + k] = read_input<In>(p.b, rk) * key * E;  // Y
      }
    }
#pragma unroll
    for (int s = 0; s < kQuad; ++s) {
      const int r = r0 + s;
      Kdec[r * K4 + k] = kdec[s];
      if (backward) Qg[r * K4 + k] = qg[s];
      if (backward && k < K) G_slab[r * K + k] = G[r * Ks + k];
    }
    if (k < K) {
      store_quad(QgT + k * C + r0, qg);
      if (backward) store_quad(KdecT + k * C + r0, kdec);
    }
  });
  // decay_end = exp(G_C)
  for (int k = threadIdx.x; k < K4; k += blockDim.x)
    decay_end[k] = k < K ? expf(G[(L - 1) * Ks + k]) : 0.0f;
  __syncthreads();

  // Ut = Tinv (W*V). Item: value column j (threads), rows r0..r0+3 (TinvT
  // quads). Tinv is lower: the zeros above its diagonal (and past L) add nothing
  // to the rows of the quad below i.
  for_quads(C / 4, V, [&](int r0, int j) {
    float ut[4] = {};
    const int last = min(r0 + 3, L - 1);
    for (int i = 0; i <= last; ++i) {
      const std::size_t ij = row(V, i) + j;
      const float x = operand<R>(p, read_input<In>(p.w, ij) * read_input<In>(p.v, ij));
      const Quad tinv = load_quad(TinvT + i * Cs + r0);
      accumulate_quad<R>(p, ut, tinv, x);
    }
    round_intermediate<R>(p, ut);
    store_quad(UtT + j * C + r0, ut);
  });
  // Wt = Tinv Y. Item: channel k (threads), rows r0..r0+3 (TinvT quads).
  for_quads(C / 4, K4, [&](int r0, int k) {
    float wt[4] = {};
    const int last = min(r0 + 3, L - 1);
    if (k < K)
      for (int i = 0; i <= last; ++i) {
        const float y = operand<R>(p, keys[i * Ks + k]);
        const Quad tinv = load_quad(TinvT + i * Cs + r0);
        accumulate_quad<R>(p, wt, tinv, y);
      }
    round_intermediate<R>(p, wt);
    if (backward)
#pragma unroll
      for (int s = 0; s < kQuad; ++s) Wt[(r0 + s) * K4 + k] = wt[s];
    if (k < K) store_quad(WtT + k * C + r0, wt);
  });
}

// ---------------------------------------------------------------------------
// fwd.inter: the sequential carry over chunks, for the state columns
// [v0, v0 + cols) of one (b, h). Shared: S (K x v_tile at an odd stride),
// U and Qg S0 (C x v_tile). v_tile is V (one tile) under state_transposed
// with K == V: a transposed state mixes columns.
template <class R>
__global__ void __launch_bounds__(ChunkConfig::kThreads, ChunkConfig::kBlocksPerSM)
    chunk_inter_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks,
                       int v_tile) {
  const int C = p.chunk, K = p.K, V = p.V, K4 = round_up4(K), Ss = odd_stride(v_tile);
  const ColumnTile tile = column_tile(p, v_tile);
  const int bh = tile.bh, b = tile.b, h = tile.h, v0 = tile.v0, cols = tile.cols;
  const bool transposed = DP_FAULT(p.faults, state_transposed) && K == V;
  extern __shared__ __align__(16) float shared[];
  float* S = shared;              // K x Ss
  float* U = S + K * Ss;          // C x v_tile
  float* Qg_S0 = U + C * v_tile;  // C x v_tile  the first term of O, before the scale

  auto load_h0 = [&] { load_state_tile(p, tile, p.h0, DP_FAULT(p.faults, h0_ignored), S, Ss); };
  // chunk c's operands, asked for a chunk ahead
  auto prefetch_chunk = [&](int chunk) {
    const std::size_t slab = static_cast<std::size_t>(bh) * num_chunks + chunk;
    for (const ScratchBuffer* buffer : {&scratch.WtT, &scratch.QgT})
      prefetch_l2(buffer->slab(slab), buffer->slab_floats());
    prefetch_l2(scratch.UtT.slab(slab) + v0 * C, cols * C);  // this tile's columns of Ut
    for (const ScratchBuffer* buffer : {&scratch.MT, &scratch.Kdec, &scratch.decay_end})
      prefetch_l2(buffer->slab(slab), buffer->slab_floats());
  };
  prefetch_chunk(0);
  load_h0();  // S = h0
  __syncthreads();

  for (int c = 0; c < num_chunks; ++c) {
    const ChunkSite at = chunk_site(p, num_chunks, bh, c);
    const int L = at.L;
    const float* MT = scratch.MT.slab(at.slab);
    const float* QgT = scratch.QgT.slab(at.slab);
    const float* WtT = scratch.WtT.slab(at.slab);
    const float* UtT = scratch.UtT.slab(at.slab);
    const float* Kdec = scratch.Kdec.slab(at.slab);
    const float* decay_end = scratch.decay_end.slab(at.slab);
    float* S0T = scratch.S0T.slab(at.slab);
    float* UT = scratch.UT.slab(at.slab);
    if (c + 1 < num_chunks) prefetch_chunk(c + 1);

    // S0: the carried state (h0 again under state_not_carried; read as S0^T
    // under state_transposed, where the tile is the whole square state)
    if (c > 0 && DP_FAULT(p.faults, state_not_carried)) {
      load_h0();
      __syncthreads();
    }
    if (transposed) {
      for (int idx = threadIdx.x; idx < K * K; idx += blockDim.x) {
        const int k = idx / K, j = idx % K;
        if (k < j) {  // each pair swapped by one thread
          const float upper = S[k * Ss + j];
          S[k * Ss + j] = S[j * Ss + k];
          S[j * Ss + k] = upper;
        }
      }
      __syncthreads();
    }
    // the glue: every chunk's start state saved for BK1, transposed (threads
    // along k: coalesced, and S's odd stride reads its column conflict-free)
    if (scratch.backward)
      for (int idx = threadIdx.x; idx < cols * K4; idx += blockDim.x) {
        const int j = idx / K4, k = idx % K4;
        S0T[(v0 + j) * K4 + k] = k < K ? S[k * Ss + j] : 0.0f;
      }

    // U = Ut - Wt S0, and Qg S0. Item: state column j (threads), rows r0..r0+3
    // (WtT, QgT quads). Rows past L come out zero (Ut, Wt are zero there).
    for_quads(C / 4, cols, [&](int r0, int j) {
      float wt_s0[4] = {}, qg_s0[4] = {};
      if (r0 < L)
#pragma unroll 8
        for (int k = 0; k < K; ++k) {
          // the state a product reads is the stored one; the carried S stays f32
          const float s0 = operand<R>(p, intermediate<R>(p, S[k * Ss + j]));
          const Quad wt = load_quad(WtT + k * C + r0), qg = load_quad(QgT + k * C + r0);
          accumulate_quads<R>(p, wt_s0, wt, qg_s0, qg, s0);
        }
      const Quad ut = load_quad(UtT + (v0 + j) * C + r0);
      float u[4];
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        u[s] = intermediate<R>(p, ut.v[s] - wt_s0[s]);
        U[(r0 + s) * v_tile + j] = u[s];
        Qg_S0[(r0 + s) * v_tile + j] = qg_s0[s];
      }
      if (scratch.backward) store_quad(UT + (v0 + j) * C + r0, u);  // U for BK1
    });
    __syncthreads();

    // O = scale [Qg S0 + M U]. Item: column j, rows r0..r0+3 (MT quads; M is
    // lower: its zeros add nothing to the rows of the quad below i). Rows past
    // T, read only under the partial-chunk fault, are not written.
    for_quads(C / 4, cols, [&](int r0, int j) {
      if (r0 >= L) return;
      const int last = min(r0 + 3, L - 1);
      float m_u[4] = {};
#pragma unroll 8
      for (int i = 0; i <= last; ++i) {
        const float u = operand<R>(p, U[i * v_tile + j]);
        const Quad m = load_quad(MT + i * C + r0);
        accumulate_quad<R>(p, m_u, m, u);
      }
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int r = r0 + s;
        if (r <= last && at.t0 + r < p.T)
          p.o[token_offset(p.T, p.H, V, b, at.t0 + r, h, v0 + j)] =
              p.scale * (Qg_S0[r * v_tile + j] + m_u[s]);
      }
    });
    // S_end = Diag(exp G_C) S0 + Kdec^T U, in place of S0 (the item's own
    // elements; O above no longer reads S). Item: column j, state rows
    // k0..k0+3 (Kdec quads).
    for_quads(K4 / 4, cols, [&](int k0, int j) {
      float kdec_u[4] = {};
#pragma unroll 8
      for (int i = 0; i < L; ++i) {
        const float u = operand<R>(p, U[i * v_tile + j]);
        const Quad kdec = load_quad(Kdec + i * K4 + k0);
        accumulate_quad<R>(p, kdec_u, kdec, u);
      }
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int k = k0 + s;
        if (k < K) S[k * Ss + j] = decay_end[k] * S[k * Ss + j] + kdec_u[s];
      }
    });
    __syncthreads();
  }

  // ht: the last chunk's S_end
  for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
    const int k = idx / cols, j = idx % cols;
    p.ht[state_offset(p.H, K, V, b, h, k, v0 + j)] = S[k * Ss + j];
  }
}

// ---------------------------------------------------------------------------
// bwd.bk2 and the glue: the reverse recurrence for dS over chunks, for the
// state columns [v0, v0 + cols) of one (b, h). Shared: dS (K x v_tile at an odd
// stride), holding dS_end of the chunk and then its dS0; dU (C x v_tile).
template <class R>
__global__ void __launch_bounds__(ChunkConfig::kThreads, ChunkConfig::kBlocksPerSM)
    bk2_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks, int v_tile) {
  const int C = p.chunk, K = p.K, V = p.V, K4 = round_up4(K), V4 = round_up4(V);
  const int Ss = odd_stride(v_tile);
  const ColumnTile tile = column_tile(p, v_tile);
  const int bh = tile.bh, b = tile.b, h = tile.h, v0 = tile.v0, cols = tile.cols;
  extern __shared__ __align__(16) float shared[];
  float* dS = shared;       // K x Ss
  float* dU = dS + K * Ss;  // C x v_tile

  // chunk c's operands, asked for a chunk ahead
  auto prefetch_chunk = [&](int chunk) {
    const std::size_t slab = static_cast<std::size_t>(bh) * num_chunks + chunk;
    for (const ScratchBuffer* buffer :
         {&scratch.M, &scratch.KdecT, &scratch.Qg, &scratch.Wt, &scratch.decay_end})
      prefetch_l2(buffer->slab(slab), buffer->slab_floats());
    prefetch_tokens_l2<float>(p, p.d_o, V, b, h, chunk * C, C);
  };
  prefetch_chunk(num_chunks - 1);
  // the last chunk's dS_end = dht (zero under dht_ignored)
  load_state_tile(p, tile, p.dht, DP_FAULT(p.faults, dht_ignored), dS, Ss);
  __syncthreads();

  for (int c = num_chunks - 1; c >= 0; --c) {
    const ChunkSite at = chunk_site(p, num_chunks, bh, c);
    const int L = at.L;
    const float* M = scratch.M.slab(at.slab);
    const float* KdecT = scratch.KdecT.slab(at.slab);
    const float* Qg = scratch.Qg.slab(at.slab);
    const float* Wt = scratch.Wt.slab(at.slab);
    const float* decay_end = scratch.decay_end.slab(at.slab);
    float* dS_endT = scratch.dS_endT.slab(at.slab);
    float* du_scratch = scratch.dU.slab(at.slab);
    if (c > 0) prefetch_chunk(c - 1);
    // dO_rj of this tile's column j
    auto dO = [&](int r, int j) { return p.d_o[token_row(p, V, b, h, at.t0 + r) + v0 + j]; };

    // the glue: dS_end of every chunk saved for BK1, transposed
    for (int idx = threadIdx.x; idx < cols * K4; idx += blockDim.x) {
      const int j = idx / K4, k = idx % K4;
      dS_endT[(v0 + j) * K4 + k] = k < K ? dS[k * Ss + j] : 0.0f;
    }

    // dU_ij = scale sum_{r>=i} M_ri dO_rj + sum_k Kdec_ik dS_end_kj. Item:
    // column j, rows i0..i0+3 (M row and KdecT quads; M is lower: for the rows
    // of the quad above r its zeros add nothing). Rows past L are not needed.
    for_quads(C / 4, cols, [&](int i0, int j) {
      if (i0 >= L) return;
      float through_output[4] = {}, through_state[4] = {};
#pragma unroll 8
      for (int r = i0; r < L; ++r) {
        const float d_o = operand<R>(p, dO(r, j));
        const Quad m = load_quad(M + r * C + i0);
        accumulate_quad<R>(p, through_output, m, d_o);
      }
#pragma unroll 8
      for (int k = 0; k < K; ++k) {
        const float ds = operand<R>(p, intermediate<R>(p, dS[k * Ss + j]));
        const Quad kdec = load_quad(KdecT + k * C + i0);
        accumulate_quad<R>(p, through_state, kdec, ds);
      }
#pragma unroll
      for (int s = 0; s < kQuad; ++s)
        if (i0 + s < L)
          dU[(i0 + s) * v_tile + j] =
              intermediate<R>(p, p.scale * through_output[s] + through_state[s]);
    });
    // every thread reads all of dU's column below (and overwrites dS, which dU
    // read): the barrier the missing-barrier-bk2 build leaves out (a sync fault
    // is built separately, never switched at run time: kernels/faults.hpp)
#ifndef DELTAPROOF_SYNC_FAULT_MISSING_BARRIER_BK2
    __syncthreads();
#endif

    // dS0 = scale Qg^T dO + Diag(exp G_C) dS_end - Wt^T dU. The Wt^T dU term is
    // summed first and from the last row up: the rows of dU written last are
    // read first, so a missing barrier shows in the numbers. Item: column j,
    // state rows k0..k0+3 (Wt, Qg quads).
    for_quads(K4 / 4, cols, [&](int k0, int j) {
      float wt_du[4] = {}, qg_do[4] = {};
#pragma unroll 8
      for (int i = L - 1; i >= 0; --i) {
        const float du = operand<R>(p, dU[i * v_tile + j]);
        const Quad wt = load_quad(Wt + i * K4 + k0);
        accumulate_quad<R>(p, wt_du, wt, du);
      }
#pragma unroll 8
      for (int r = 0; r < L; ++r) {
        const float d_o = operand<R>(p, dO(r, j));
        const Quad qg = load_quad(Qg + r * K4 + k0);
        accumulate_quad<R>(p, qg_do, qg, d_o);
      }
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int k = k0 + s;
        if (k >= K) continue;
        const float dS0 = p.scale * qg_do[s] + decay_end[k] * dS[k * Ss + j] - wt_du[s];
        // the glue: dS0 is the previous chunk's dS_end (zero under
        // ds_not_handed_back); the first chunk's is dh0 (unwritten under dh0_not_written)
        dS[k * Ss + j] = DP_FAULT(p.faults, ds_not_handed_back) ? 0.0f : dS0;
        if (c == 0 && !DP_FAULT(p.faults, dh0_not_written))
          p.dh0[state_offset(p.H, K, V, b, h, k, v0 + j)] = dS0;
      }
    });
    // the glue: dU handed to BK1, this tile's columns added into the scratch
    // (zeroed before this kernel; never under global_scratch_read_before_write)
    for (int idx = threadIdx.x; idx < L * cols; idx += blockDim.x) {
      const int i = idx / cols, j = idx % cols;
      du_scratch[i * V4 + v0 + j] += dU[i * v_tile + j];
    }
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------
// bwd.bk1: the intra-chunk adjoint of one chunk of one (b, h), given its S0,
// U and dS_end (from fwd.inter and bwd.bk2) and dU (bwd.bk2), as
// bk1_chunk_adjoint in kernels/cpu/chunk.cpp. Shared: dO^T, dX^T, dY^T
// (C columns at quad_stride); dM, dA (C x C); dQg, then dG, and dKdec (C x K);
// d_decay_end (K). Writes dq dk dv dg db dw.
//
// Bk1Chunk: where the block's chunk, its operands and its shared buffers lie,
// and one member function per sub-stage, each the adjoint of one equation of
// the forward; bk1_kernel calls them in order, with the barriers between them.
template <class In, class R>
struct Bk1Chunk {
  const DeviceProblem& p;
  const ChunkScratch& scratch;
  const int num_chunks;
  const int C, K, V, K4, V4, Cs;
  const int c, bh;
  const ChunkSite at;
  const int L, b, h, t0;
  float* const dOT;          // V x Cs
  float* const dXT;          // V x Cs
  float* const dYT;          // K x Cs
  float* const dM;           // C x C
  float* const dA;           // C x C
  float* const dQg;          // C x K
  float* const dG;           // C x K  wrt the cumulative G, in dQg's place
  float* const dKdec;        // C x K
  float* const d_decay_end;  // K
  const float* const Tinv;
  const float* const G;
  const float* const UtT;
  const float* const WtT;
  const float* const decay_end;
  const float* const S0T;
  const float* const UT;
  const float* const dS_endT;
  // the first chunk whose dU slab dU() sums (see there)
  const int first;

  __device__ __forceinline__ Bk1Chunk(const DeviceProblem& problem,
                                      const ChunkScratch& chunk_scratch, int chunks, float* shared)
      : p(problem),
        scratch(chunk_scratch),
        num_chunks(chunks),
        C(p.chunk),
        K(p.K),
        V(p.V),
        K4(round_up4(K)),
        V4(round_up4(V)),
        Cs(quad_stride(C)),
        c(blockIdx.x),
        bh(blockIdx.y),
        at(chunk_site(p, num_chunks, bh, c)),
        L(at.L),
        b(at.b),
        h(at.h),
        t0(at.t0),
        dOT(shared),
        dXT(dOT + V * Cs),
        dYT(dXT + V * Cs),
        dM(dYT + K * Cs),
        dA(dM + C * C),
        dQg(dA + C * C),
        dG(dQg),
        dKdec(dQg + C * K),
        d_decay_end(dKdec + C * K),
        Tinv(scratch.Tinv.slab(at.slab)),
        G(scratch.G.slab(at.slab)),
        UtT(scratch.UtT.slab(at.slab)),
        WtT(scratch.WtT.slab(at.slab)),
        decay_end(scratch.decay_end.slab(at.slab)),
        S0T(scratch.S0T.slab(at.slab)),
        UT(scratch.UT.slab(at.slab)),
        dS_endT(scratch.dS_endT.slab(at.slab)),
        first(DP_FAULT(p.faults, scratch_read_before_write) && L == C ? 0 : c) {}

  // where row r's token vector starts
  __device__ __forceinline__ std::size_t row(int width, int r) const {
    return token_row(p, width, b, h, t0 + r);
  }
  // dU_rj as BK2 added it into the zeroed scratch (under
  // global_scratch_read_before_write it was never zeroed). Under
  // scratch_read_before_write the scratch is not cleared between chunks, as the
  // cpu twin's sequential loop over chunks: chunk c holds the sum of dU over
  // chunks 0..c (a partial last chunk, of another size, starts afresh).
  __device__ __forceinline__ float dU(int r, int j) const {
    float du = 0.0f;
    for (int cc = first; cc <= c; ++cc)
      du += scratch.dU.slab(static_cast<std::size_t>(bh) * num_chunks + cc)[r * V4 + j];
    return du;
  }

  // everything the chunk reads from global memory, asked for ahead
  __device__ __forceinline__ void prefetch_operands() const {
    prefetch_l2(Tinv, C * C);
    prefetch_l2(scratch.dU.slab(at.slab), C * V4);
    prefetch_l2(UT, V * C);
    prefetch_l2(S0T, V * K4);
    prefetch_l2(dS_endT, V * K4);
    prefetch_l2(UtT, V * C);
    prefetch_l2(WtT, K * C);
    prefetch_l2(G, C * K);
    prefetch_l2(decay_end, K4);
    prefetch_tokens_l2<In>(p, p.q, K, b, h, t0, L);
    prefetch_tokens_l2<In>(p, p.k, K, b, h, t0, L);
    prefetch_tokens_l2<In>(p, p.b, K, b, h, t0, L);
    prefetch_tokens_l2<In>(p, p.v, V, b, h, t0, L);
    prefetch_tokens_l2<In>(p, p.w, V, b, h, t0, L);
  }

  // dO of the chunk, transposed (zero past L), read along its rows
  __device__ __forceinline__ void transpose_dO() const {
    for (int idx = threadIdx.x; idx < C * V; idx += blockDim.x) {
      const int r = idx / V, j = idx % V;
      dOT[j * Cs + r] = r < L ? p.d_o[row(V, r) + j] : 0.0f;
    }
  }

  // U = Ut - Wt S0, Ut = Tinv X:  dX = Tinv^T dU, dX_ij = sum_{r>=i} Tinv_ri dU_rj.
  // Item: column j (threads), rows i0..i0+3 (Tinv row quads; Tinv is lower: for
  // the rows of the quad above r its zeros add nothing). Kept transposed.
  // X = W*V:  dW = dX*V,  dV = dX*W
  __device__ __forceinline__ void form_dX_dW_dV() const {
    for_quads(C / 4, V, [&](int i0, int j) {
      float dx[4] = {};
#pragma unroll 8
      for (int r = i0; r < L; ++r) {
        const float du = operand<R>(p, dU(r, j));
        const Quad tinv = load_quad(Tinv + r * C + i0);
        accumulate_quad<R>(p, dx, tinv, du);
      }
      store_quad(dXT + j * Cs + i0, dx);
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int i = i0 + s;
        if (i >= L || t0 + i >= p.T) continue;
        const std::size_t out = token_offset(p.T, p.H, V, b, t0 + i, h, j);
        p.dw[out] = dx[s] * read_input<In>(p.v, out);
        p.dv[out] = dx[s] * read_input<In>(p.w, out);
      }
    });
  }

  // S_end = Diag(exp G_C) S0 + Kdec^T U:  dKdec = U dS_end^T. Item: channel k
  // (threads), rows i0..i0+3 (U^T quads).
  __device__ __forceinline__ void form_dKdec() const {
    for_quads(C / 4, K, [&](int i0, int k) {
      float dkdec[4] = {};
      if (i0 < L)
#pragma unroll 8
        for (int j = 0; j < V; ++j) {
          const float ds = operand<R>(p, intermediate<R>(p, dS_endT[j * K4 + k]));
          const Quad u = load_quad(UT + j * C + i0);
          accumulate_quad<R>(p, dkdec, u, ds);
        }
#pragma unroll
      for (int s = 0; s < kQuad; ++s) dKdec[(i0 + s) * K + k] = dkdec[s];
    });
  }

  // decay_end = exp(G_C):  d_decay_end = rowsum(dS_end * S0)
  __device__ __forceinline__ void form_d_decay_end() const {
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      float sum = 0.0f;
      for (int j = 0; j < V; ++j) sum += dS_endT[j * K4 + k] * S0T[j * K4 + k];
      d_decay_end[k] = sum;
    }
  }

  // O = scale [Qg S0 + M U]:  dM = scale dO U^T (lower, diagonal included).
  // Item: partner i (threads, U^T), rows r0..r0+3 (dO^T quads).
  __device__ __forceinline__ void form_dM() const {
    for_quads(C / 4, C, [&](int r0, int i) {
      float dm[4] = {};
      if (r0 < L && i <= r0 + 3)
#pragma unroll 8
        for (int j = 0; j < V; ++j) {
          const float u = operand<R>(p, UT[j * C + i]);
          const Quad d_o = load_quad(dOT + j * Cs + r0);
          accumulate_quad<R>(p, dm, d_o, u);
        }
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        // the pairwise adjoints below read dM (and dA) as product operands
        const int r = r0 + s;
        dM[r * C + i] = i <= r && r < L ? operand<R>(p, dm[s] * p.scale) : 0.0f;
      }
    });
  }

  // Qg = Q*E, O = scale [Qg S0 + ...]:  dQg = scale dO S0^T.
  // Wt = Tinv Y:  dY = -Tinv^T dU S0^T, formed as -dX S0^T (dX = Tinv^T dU), kept transposed.
  // Item: channel k (threads, S0^T), rows r0..r0+3 (dO^T and dX^T quads).
  __device__ __forceinline__ void form_dQg_dY() const {
    for_quads(C / 4, K, [&](int r0, int k) {
      float dqg[4] = {}, dx_s0[4] = {};
      if (r0 < L)
#pragma unroll 8
        for (int j = 0; j < V; ++j) {
          const float s0 = operand<R>(p, intermediate<R>(p, S0T[j * K4 + k]));
          const Quad d_o = load_quad(dOT + j * Cs + r0), dx = load_quad(dXT + j * Cs + r0);
          accumulate_quads<R>(p, dqg, d_o, dx_s0, dx, s0);
        }
      float dy[4];
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        dQg[(r0 + s) * K + k] = dqg[s] * p.scale;
        dy[s] = -dx_s0[s];
      }
      store_quad(dYT + k * Cs + r0, dy);
    });
  }

  // Tinv = (I + A)^-1:  dA = -(dX Ut^T + dY Wt^T), strictly lower.
  // Item: partner i (threads, Ut^T and Wt^T), rows r0..r0+3 (dX^T and dY^T quads).
  __device__ __forceinline__ void form_dA() const {
    for_quads(C / 4, C, [&](int r0, int i) {
      float dx_ut[4] = {}, dy_wt[4] = {};
      if (r0 < L && i < r0 + 3) {
#pragma unroll 8
        for (int j = 0; j < V; ++j) {
          const float ut = operand<R>(p, UtT[j * C + i]);
          const Quad dx = load_quad(dXT + j * Cs + r0);
          accumulate_quad<R>(p, dx_ut, dx, ut);
        }
#pragma unroll 8
        for (int k = 0; k < K; ++k) {
          const float wt = operand<R>(p, WtT[k * C + i]);
          const Quad dy = load_quad(dYT + k * Cs + r0);
          accumulate_quad<R>(p, dy_wt, dy, wt);
        }
      }
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int r = r0 + s;
        dA[r * C + i] = i < r && r < L ? operand<R>(p, -(dx_ut[s] + dy_wt[s])) : 0.0f;
      }
    });
  }

  // One item per channel k (threads) and rows j0..j0+3: dQ, dK, dB and dG
  // (wrt the cumulative G) of the elements (j, k).
  __device__ __forceinline__ void form_token_gradients() const {
    for_quads(C / 4, K, [&](int j0, int k) {
      if (j0 >= L) return;
      const int last = min(j0 + 3, L - 1);
      const Quad dY = load_quad(dYT + k * Cs + j0);
      float q_j[4] = {}, key_j[4] = {}, beta_j[4] = {}, G_j[4] = {};
      float dQ[4] = {}, dK[4] = {}, dB[4] = {}, dG_j[4] = {};
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int j = j0 + s;
        if (j > last) continue;
        const std::size_t jk = row(K, j) + k;
        q_j[s] = read_input<In>(p.q, jk);
        key_j[s] = read_input<In>(p.k, jk);
        beta_j[s] = read_input<In>(p.b, jk);
        G_j[s] = G[j * K + k];
        const float E_j = expf(G_j[s]), dqg = dQg[j * K + k];
        // Y = B*K*E
        dB[s] = dY.v[s] * key_j[s] * E_j;
        dK[s] = dY.v[s] * beta_j[s] * E_j;
        float dE = dY.v[s] * beta_j[s] * key_j[s];
        // Qg = Q*E
        dQ[s] = dqg * E_j;
        dE += dqg * q_j[s];
        dG_j[s] = dE * E_j;
      }

      // M_ri and A_ri through their pairwise decays exp(G_r - G_i). As the row
      // (r = j), partners i <= j; the diagonal's decay is 1 and adds nothing to dG.
      for (int i = 0; i <= last; ++i) {
        const std::size_t ik = row(K, i) + k;
        const float G_i = G[i * K + k], key_i = read_input<In>(p.k, ik);
#pragma unroll
        for (int s = 0; s < kQuad; ++s) {
          const int j = j0 + s;
          if (j > last || i > j) continue;
          const float decay = expf(G_j[s] - G_i);
          const float m = dM[j * C + i] * decay;
          dQ[s] += m * key_i;
          if (i < j) {
            const float a = dA[j * C + i] * decay;
            dB[s] += a * key_j[s] * key_i;
            dK[s] += a * beta_j[s] * key_i;
            dG_j[s] += m * q_j[s] * key_i + a * beta_j[s] * key_j[s] * key_i;  // + through_g
          }
        }
      }
      // As the column (i = j), partners r >= j.
      for (int r = j0; r < L; ++r) {
        const std::size_t rk = row(K, r) + k;
        const float G_r = G[r * K + k], q_r = read_input<In>(p.q, rk);
        const float beta_r = read_input<In>(p.b, rk), key_r = read_input<In>(p.k, rk);
        const Quad dM_r = load_quad(dM + r * C + j0), dA_r = load_quad(dA + r * C + j0);
#pragma unroll
        for (int s = 0; s < kQuad; ++s) {
          const int j = j0 + s;
          if (j > last || r < j) continue;
          const float decay = expf(G_r - G_j[s]);
          const float m = dM_r.v[s] * decay;
          dK[s] += m * q_r;
          if (r > j) {
            const float a = dA_r.v[s] * decay;
            dK[s] += a * beta_r * key_r;
            dG_j[s] -= m * q_r * key_j[s] + a * beta_r * key_r * key_j[s];  // - through_g
          }
        }
      }
      // Kdec = K * exp(G_C - G): through K, and through G (- at row j, + at the
      // last row, which collects every other row's term; its own cancels)
      const float G_end = G[(L - 1) * K + k];
#pragma unroll
      for (int s = 0; s < kQuad; ++s) {
        const int j = j0 + s;
        if (j > last) continue;
        {
          const float decay = expf(G_end - G_j[s]);
          dK[s] += dKdec[j * K + k] * decay;
          if (j < L - 1) dG_j[s] -= dKdec[j * K + k] * key_j[s] * decay;
        }
        if (j == L - 1) {
          for (int i = 0; i < L - 1; ++i)
            dG_j[s] +=
                dKdec[i * K + k] * read_input<In>(p.k, row(K, i) + k) * expf(G_end - G[i * K + k]);
          // decay_end = exp(G_C)
          dG_j[s] += d_decay_end[k] * decay_end[k];
        }
        dG[j * K + k] = dG_j[s];  // over dQg_jk, read above by this thread alone
        if (t0 + j < p.T) {
          const std::size_t out = token_offset(p.T, p.H, K, b, t0 + j, h, k);
          p.dq[out] = dQ[s];
          p.dk[out] = dK[s];
          p.db[out] = dB[s];
        }
      }
    });
  }

  // G_r = sum_{i<=r} g_i: dg is the reverse cumulative sum of dG, one thread
  // per channel (sign flipped under dg_sign_flipped)
  __device__ __forceinline__ void form_dg() const {
    for (int k = threadIdx.x; k < K; k += blockDim.x) {
      float running = 0.0f;
      for (int r = L - 1; r >= 0; --r) {
        running += dG[r * K + k];
        if (t0 + r < p.T)
          p.dg[token_offset(p.T, p.H, K, b, t0 + r, h, k)] =
              DP_FAULT(p.faults, dg_sign_flipped) ? -running : running;
      }
    }
  }
};

template <class In, class R>
__global__ void __launch_bounds__(ChunkConfig::kBk1Threads, 1)
    bk1_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks) {
  extern __shared__ __align__(16) float shared[];
  const Bk1Chunk<In, R> chunk(p, scratch, num_chunks, shared);
  chunk.prefetch_operands();
  chunk.transpose_dO();
  chunk.form_dX_dW_dV();
  chunk.form_dKdec();
  chunk.form_d_decay_end();
  __syncthreads();
  chunk.form_dM();
  chunk.form_dQg_dY();
  __syncthreads();
  chunk.form_dA();
  __syncthreads();
  chunk.form_token_gradients();
  __syncthreads();
  chunk.form_dg();
}

// ---------------------------------------------------------------------------
// Host side.

void check_supported(const DeviceProblem& p, bool backward) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("cuda-chunk: " + what + " (" + describe(p) + ")");
  };
  if (p.B < 1 || p.T < 1 || p.H < 1) fail("B, T and H must be at least 1");
  if (const std::string why = ChunkConfig::supports(p.K, p.V, p.chunk); !why.empty()) fail(why);
  if (static_cast<long long>(p.B) * p.H > ChunkConfig::kMaxGridY)
    fail("B*H must be at most " + std::to_string(ChunkConfig::kMaxGridY) + " (grid y)");
  if (!p.q || !p.k || !p.v || !p.g || !p.b || !p.w || !p.h0 || !p.o || !p.ht)
    fail("an input or output pointer is null");
  if (backward &&
      (!p.d_o || !p.dht || !p.dq || !p.dk || !p.dv || !p.dg || !p.db || !p.dw || !p.dh0))
    fail("a cotangent or gradient pointer is null");
}

// The scratch buffers (ChunkScratch), one slab per (b, h, chunk) each, carved
// in order from `base`; the backward's only for a backward run (null
// otherwise). With a null base only counts. Returns the floats taken.
std::size_t lay_out_scratch(const DeviceProblem& p, std::size_t slabs, bool backward, float* base,
                            ChunkScratch& s) {
  const int C = p.chunk, K = p.K, V = p.V, K4 = round_up4(K), V4 = round_up4(V);
  std::size_t taken = 0;
  auto take = [&](ScratchBuffer& buffer, int rows, int cols, bool transposed, bool needed) {
    buffer = {nullptr, rows, cols, transposed};
    if (!needed) return;
    if (base) buffer.base = base + taken;
    taken += slabs * static_cast<std::size_t>(rows) * cols;  // a multiple of 4
  };
  constexpr bool T = true, R = false;  // the matrix transposed (suffix T), or by rows
  s.backward = backward;
  take(s.MT, C, C, T, true);
  take(s.QgT, K, C, T, true);
  take(s.WtT, K, C, T, true);
  take(s.UtT, V, C, T, true);
  take(s.Kdec, C, K4, R, true);
  take(s.decay_end, 1, K4, R, true);
  take(s.M, C, C, R, backward);
  take(s.Qg, C, K4, R, backward);
  take(s.Wt, C, K4, R, backward);
  take(s.KdecT, K, C, T, backward);
  take(s.Tinv, C, C, R, backward);
  take(s.G, C, K, R, backward);
  take(s.S0T, V, K4, T, backward);
  take(s.UT, V, C, T, backward);
  take(s.dS_endT, V, K4, T, backward);
  take(s.dU, C, V4, R, backward);
  return taken;
}

// Lets a kernel use up to `floats` of dynamic shared memory (beyond the 48 KB
// default). Each kernel is given its most for any supported shape, so callers
// on several host threads all set the same value.
template <class Kernel>
void allow_shared(Kernel kernel, int floats, const char* name, const DeviceProblem& p) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  floats * static_cast<int>(sizeof(float))),
             name, p);
}

// One launch of each stage's kernel (checked): run_chunk_as launches them in
// order, and the stage launchers of kernels/cuda/stages.hpp one at a time.
template <class In, class R>
void launch_intra(const DeviceProblem& p, const ChunkScratch& scratch, int num_chunks) {
  allow_shared(chunk_intra_kernel<In, R>, ChunkConfig::kIntraSharedFloats, "chunk_intra_kernel", p);
  const dim3 chunk_grid(num_chunks, p.B * p.H);
  chunk_intra_kernel<In, R>
      <<<chunk_grid, ChunkConfig::kThreads, shared_bytes(intra_shared_floats(p.chunk, p.K))>>>(
          p, scratch, num_chunks);
  CUDA_CHECK_LAUNCH("chunk_intra_kernel", p);
}

template <class R>
void launch_inter(const DeviceProblem& p, const ChunkScratch& scratch, int num_chunks) {
  const int V = p.V;
  // a transposed state (the fault) mixes columns, so one tile of all of V
  const bool whole_state = DP_FAULT(p.faults, state_transposed) && p.K == V;
  const int inter_tile = whole_state ? V : std::min(ChunkConfig::kVTile, V);
  allow_shared(chunk_inter_kernel<R>, ChunkConfig::kInterSharedFloats, "chunk_inter_kernel", p);
  const dim3 inter_grid((V + inter_tile - 1) / inter_tile, p.B * p.H);
  chunk_inter_kernel<R><<<inter_grid, ChunkConfig::kThreads,
                          shared_bytes(inter_shared_floats(p.chunk, p.K, inter_tile))>>>(
      p, scratch, num_chunks, inter_tile);
  CUDA_CHECK_LAUNCH("chunk_inter_kernel", p);
}

// bwd.bk2 accumulates dU into its scratch for bwd.bk1: zeroed first. Under
// global_scratch_read_before_write it holds stale garbage instead (0xFF
// bytes: NaN, so the numbers show it in every run); under
// global_scratch_unwritten nothing writes it at all (initcheck's to catch:
// fresh device memory is often zero, and then the numbers cannot see it).
void clear_du_scratch(const DeviceProblem& p, const ChunkScratch& scratch, std::size_t slabs) {
  if (!DP_FAULT(p.faults, global_scratch_unwritten))
    CUDA_CHECK(
        cudaMemset(scratch.dU.base, DP_FAULT(p.faults, global_scratch_read_before_write) ? 0xFF : 0,
                   slabs * p.chunk * round_up4(p.V) * sizeof(float)),
        "cudaMemset (dU scratch)", p);
}

// bwd.bk2 and the glue (dS_end handed back, dh0), in one kernel
template <class R>
void launch_bk2(const DeviceProblem& p, const ChunkScratch& scratch, int num_chunks) {
  const int bk2_tile = std::min(ChunkConfig::kVTile, p.V);
  allow_shared(bk2_kernel<R>, ChunkConfig::kBk2SharedFloats, "bk2_kernel", p);
  const dim3 bk2_grid((p.V + bk2_tile - 1) / bk2_tile, p.B * p.H);
  bk2_kernel<R><<<bk2_grid, ChunkConfig::kThreads,
                  shared_bytes(bk2_shared_floats(p.chunk, p.K, bk2_tile))>>>(p, scratch, num_chunks,
                                                                             bk2_tile);
  CUDA_CHECK_LAUNCH("bk2_kernel", p);
}

template <class In, class R>
void launch_bk1(const DeviceProblem& p, const ChunkScratch& scratch, int num_chunks) {
  allow_shared(bk1_kernel<In, R>, ChunkConfig::kBk1SharedFloats, "bk1_kernel", p);
  const dim3 chunk_grid(num_chunks, p.B * p.H);
  bk1_kernel<In, R><<<chunk_grid, ChunkConfig::kBk1Threads,
                      shared_bytes(bk1_shared_floats(p.chunk, p.K, p.V))>>>(p, scratch, num_chunks);
  CUDA_CHECK_LAUNCH("bk1_kernel", p);
}

std::size_t num_chunks_of(const DeviceProblem& p) { return (p.T + p.chunk - 1) / p.chunk; }

template <class In, class R>
void run_chunk_as(const DeviceProblem& p, bool backward, LaunchLog& log) {
  const int num_chunks = static_cast<int>(num_chunks_of(p));
  const std::size_t slabs = static_cast<std::size_t>(p.B) * p.H * num_chunks;
  ChunkScratch scratch{};
  DeviceBuffer storage(lay_out_scratch(p, slabs, backward, nullptr, scratch),
                       "cudaMalloc (scratch)", p);
  lay_out_scratch(p, slabs, backward, storage.get(), scratch);

  launch_intra<In, R>(p, scratch, num_chunks);
  log.note("fwd.intra", "chunk_intra_kernel");
  launch_inter<R>(p, scratch, num_chunks);
  log.note("fwd.inter", "chunk_inter_kernel");
  if (!backward) return;

  clear_du_scratch(p, scratch, slabs);
  launch_bk2<R>(p, scratch, num_chunks);
  log.note("bwd.bk2", "bk2_kernel");
  log.note("bwd.glue", "bk2_kernel");

  launch_bk1<In, R>(p, scratch, num_chunks);
  log.note("bwd.bk1", "bk1_kernel");
}

template <class In>
void run_chunk_rounding(const DeviceProblem& p, bool backward, LaunchLog& log) {
  const bool rounds = p.rounding.operand_bits != 0 || p.rounding.intermediate_bits != 0;
  if (rounds) return run_chunk_as<In, Contract>(p, backward, log);
  return run_chunk_as<In, Exact>(p, backward, log);
}

}  // namespace

void run_chunk(const DeviceProblem& p, bool backward, LaunchLog& log) {
  check_supported(p, backward);
  switch (p.input) {
    case InputType::f32:
      return run_chunk_rounding<float>(p, backward, log);
    case InputType::bf16:
      return run_chunk_rounding<__nv_bfloat16>(p, backward, log);
  }
  throw std::runtime_error("cuda-chunk: unknown input type (" + describe(p) + ")");
}

// ---------------------------------------------------------------------------
// The stages one at a time (kernels/cuda/stages.hpp): one chunk of one (b, h),
// B = H = 1 and T = L, so a token tensor is an L x width matrix and a state a
// K x V one, and the scratch is one slab per buffer.
namespace {

// A rows x cols host matrix in a slab_rows x slab_cols slab, zeros elsewhere
// (rows past L, channels past K); transposed: element (r, c) at (c, r).
std::vector<float> to_slab(const HostMatrix& m, int rows, int cols, int slab_rows, int slab_cols,
                           bool transposed) {
  std::vector<float> slab(static_cast<std::size_t>(slab_rows) * slab_cols, 0.0f);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      slab[transposed ? c * slab_cols + r : r * slab_cols + c] = m[r * cols + c];
  return slab;
}
// The rows x cols matrix held in a slab of slab_cols columns (transposed: at (c, r)).
HostMatrix from_slab(const std::vector<float>& slab, int rows, int cols, int slab_cols,
                     bool transposed) {
  HostMatrix m(static_cast<std::size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      m[r * cols + c] = slab[transposed ? c * slab_cols + r : r * slab_cols + c];
  return m;
}

// The device side of one stage: every token, state and gradient buffer of the
// problem and one slab of each scratch buffer, all zeroed, so that a stage
// reads only what the caller put there.
class StageDevice {
 public:
  explicit StageDevice(const StageShape& s) : s_(s) {
    p_.B = 1, p_.T = s.L, p_.H = 1, p_.K = s.K, p_.V = s.V, p_.chunk = s.chunk, p_.scale = s.scale;
    p_.faults = active_faults();
    if (s.L < 1 || s.L > s.chunk)
      throw std::runtime_error("cuda-chunk stage: L must be from 1 to the chunk size (" +
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
    check_supported(p_, true);
    float* scratch_base = allocate(lay_out_scratch(p_, 1, true, nullptr, scratch_));
    lay_out_scratch(p_, 1, true, scratch_base, scratch_);
  }
  const DeviceProblem& p() const { return p_; }
  const ChunkScratch& scratch() const { return scratch_; }

  // The tokens, as fwd.intra and bwd.bk1 read them.
  void put_tokens(const StageTokens& x) {
    put(q_, x.q, s_.L, s_.K, "q"), put(k_, x.k, s_.L, s_.K, "k"), put(g_, x.g, s_.L, s_.K, "g");
    put(b_, x.b, s_.L, s_.K, "b"), put(v_, x.v, s_.L, s_.V, "v"), put(w_, x.w, s_.L, s_.V, "w");
  }
  void put_S0(const HostMatrix& S0) { put(h0_, S0, s_.K, s_.V, "S0"); }
  void put_dO(const HostMatrix& dO) { put(d_o_, dO, s_.L, s_.V, "dO"); }
  void put_dS_end(const HostMatrix& dS_end) { put(dht_, dS_end, s_.K, s_.V, "dS_end"); }
  // Where a quantity lies in the scratch: rows x cols of it in its buffer's
  // slab (the slab's shape and layout as lay_out_scratch set them).
  struct Slab {
    const ScratchBuffer& buffer;
    int rows, cols;
    const char* name;
  };
  Slab slab(ScratchBuffer ChunkScratch::*buffer, const char* name) const {
    const int L = s_.L, K = s_.K, V = s_.V;
    auto of = [&](int rows, int cols) { return Slab{scratch_.*buffer, rows, cols, name}; };
    if (buffer == &ChunkScratch::MT || buffer == &ChunkScratch::M || buffer == &ChunkScratch::Tinv)
      return of(L, L);
    if (buffer == &ChunkScratch::UtT || buffer == &ChunkScratch::UT || buffer == &ChunkScratch::dU)
      return of(L, V);
    if (buffer == &ChunkScratch::decay_end) return of(1, K);
    if (buffer == &ChunkScratch::S0T || buffer == &ChunkScratch::dS_endT) return of(K, V);
    return of(L, K);  // QgT, WtT, KdecT, Kdec, Qg, Wt, G
  }
  void put(const Slab& slab, const HostMatrix& m) {
    const ScratchBuffer& b = slab.buffer;
    check_size(m, slab.rows, slab.cols, slab.name);
    upload(b.slab(0), to_slab(m, slab.rows, slab.cols, b.rows, b.cols, b.transposed));
  }
  HostMatrix get(const Slab& slab) const {
    const ScratchBuffer& b = slab.buffer;
    return from_slab(download(b.slab(0), static_cast<std::size_t>(b.rows) * b.cols), slab.rows,
                     slab.cols, b.cols, b.transposed);
  }
  // What fwd.intra leaves in the scratch for the later stages, every buffer.
  void put_intra(const StageIntra& intra) {
    put(slab(&ChunkScratch::MT, "M"), intra.M);
    put(slab(&ChunkScratch::M, "M"), intra.M);
    put(slab(&ChunkScratch::QgT, "Qg"), intra.Qg);
    put(slab(&ChunkScratch::Qg, "Qg"), intra.Qg);
    put(slab(&ChunkScratch::WtT, "Wt"), intra.Wt);
    put(slab(&ChunkScratch::Wt, "Wt"), intra.Wt);
    put(slab(&ChunkScratch::Kdec, "Kdec"), intra.Kdec);
    put(slab(&ChunkScratch::KdecT, "Kdec"), intra.Kdec);
    put(slab(&ChunkScratch::UtT, "Ut"), intra.Ut);
    put(slab(&ChunkScratch::Tinv, "Tinv"), intra.Tinv);
    put(slab(&ChunkScratch::G, "G"), intra.G);
    put(slab(&ChunkScratch::decay_end, "decay_end"), intra.decay_end);
  }
  // An output buffer (a token tensor or a state) as a rows x cols matrix.
  HostMatrix get(const float* buffer, int rows, int cols) const {
    return download(buffer, static_cast<std::size_t>(rows) * cols);
  }

 private:
  float* allocate(std::size_t floats) {
    buffers_.push_back(std::make_unique<DeviceBuffer>(floats, "cudaMalloc (stage)", p_));
    float* at = buffers_.back()->get();
    CUDA_CHECK(cudaMemset(at, 0, floats * sizeof(float)), "cudaMemset (stage)", p_);
    return at;
  }
  void check_size(const HostMatrix& m, int rows, int cols, const char* name) const {
    if (m.size() != static_cast<std::size_t>(rows) * cols)
      throw std::runtime_error(std::string("cuda-chunk stage: ") + name + " holds " +
                               std::to_string(m.size()) + " floats, not " + std::to_string(rows) +
                               " x " + std::to_string(cols) + " (" + describe(p_) + ")");
  }
  void put(float* buffer, const HostMatrix& m, int rows, int cols, const char* name) {
    check_size(m, rows, cols, name);
    upload(buffer, m);
  }
  void upload(float* device, const std::vector<float>& host) {
    CUDA_CHECK(cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
               "cudaMemcpy (stage input)", p_);
  }
  std::vector<float> download(const float* device, std::size_t floats) const {
    std::vector<float> host(floats);
    CUDA_CHECK(cudaMemcpy(host.data(), device, floats * sizeof(float), cudaMemcpyDeviceToHost),
               "cudaMemcpy (stage output)", p_);
    return host;
  }

  StageShape s_;
  DeviceProblem p_;
  ChunkScratch scratch_{};
  std::vector<std::unique_ptr<DeviceBuffer>> buffers_;
  float *q_, *k_, *g_, *b_, *v_, *w_, *h0_, *d_o_, *dht_;
};

}  // namespace

StageIntra run_fwd_intra(const StageShape& s, const StageTokens& x) {
  StageDevice d(s);
  d.put_tokens(x);
  launch_intra<float, Exact>(d.p(), d.scratch(), 1);
  StageIntra out;
  out.G = d.get(d.slab(&ChunkScratch::G, "G"));
  out.Tinv = d.get(d.slab(&ChunkScratch::Tinv, "Tinv"));
  out.Ut = d.get(d.slab(&ChunkScratch::UtT, "Ut"));
  out.Wt = d.get(d.slab(&ChunkScratch::Wt, "Wt"));
  out.M = d.get(d.slab(&ChunkScratch::M, "M"));
  out.Qg = d.get(d.slab(&ChunkScratch::Qg, "Qg"));
  out.Kdec = d.get(d.slab(&ChunkScratch::Kdec, "Kdec"));
  out.decay_end = d.get(d.slab(&ChunkScratch::decay_end, "decay_end"));
  return out;
}

StageForward run_fwd_inter(const StageShape& s, const StageIntra& intra, const HostMatrix& S0) {
  StageDevice d(s);
  d.put_S0(S0);
  d.put_intra(intra);
  launch_inter<Exact>(d.p(), d.scratch(), 1);
  StageForward out;
  out.U = d.get(d.slab(&ChunkScratch::UT, "U"));
  out.O = d.get(d.p().o, s.L, s.V);
  out.S_end = d.get(d.p().ht, s.K, s.V);
  return out;
}

StageBk2 run_bwd_bk2(const StageShape& s, const StageIntra& intra, const HostMatrix& dO,
                     const HostMatrix& dS_end) {
  StageDevice d(s);
  d.put_dO(dO);
  d.put_dS_end(dS_end);
  d.put_intra(intra);
  clear_du_scratch(d.p(), d.scratch(), 1);
  launch_bk2<Exact>(d.p(), d.scratch(), 1);
  StageBk2 out;
  out.dU = d.get(d.slab(&ChunkScratch::dU, "dU"));
  out.dS0 = d.get(d.p().dh0, s.K, s.V);
  return out;
}

StageGradients run_bwd_bk1(const StageShape& s, const StageTokens& x, const StageIntra& intra,
                           const HostMatrix& S0, const HostMatrix& U, const HostMatrix& dO,
                           const HostMatrix& dS_end, const HostMatrix& dU) {
  StageDevice d(s);
  d.put_tokens(x);
  d.put_dO(dO);
  d.put_intra(intra);
  // the glue: fwd.inter's S0 and U, bwd.bk2's dS_end and dU
  d.put(d.slab(&ChunkScratch::S0T, "S0"), S0);
  d.put(d.slab(&ChunkScratch::UT, "U"), U);
  d.put(d.slab(&ChunkScratch::dS_endT, "dS_end"), dS_end);
  d.put(d.slab(&ChunkScratch::dU, "dU"), dU);
  launch_bk1<float, Exact>(d.p(), d.scratch(), 1);
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

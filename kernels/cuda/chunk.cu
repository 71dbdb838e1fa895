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
// so fwd.inter and bwd.bk2 give each block a tile of columns.
//
// Every block runs ChunkConfig::kThreads threads; they share out the elements
// of each matrix (block-stride loops) and each thread sums its element's
// reduction index in a fixed order: no atomics, every output element written
// by exactly one thread, so results are bitwise the same run to run. Within a
// chunk, rows r = 0..L-1 (L = T - c*C for a partial last chunk); every
// exponential is of G_r - G_i <= 0 or of G <= 0, never exp(G_r) * exp(-G_i).
//
// Scratch lives in global memory, one slab per (b, h, chunk), freed on return.
// Every scratch buffer is filled with NaN (0xFF bytes) when allocated, so a read
// of scratch that nothing wrote shows as NaN in the outputs, deterministically,
// whatever cudaMalloc hands back.
//
// Compile check: nvcc -std=c++17 -arch=sm_90 -I. -c kernels/cuda/chunk.cu
// (add -DDELTAPROOF_FALSIFY for the fault points, -Xptxas -v for registers).
#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"

namespace deltaproof::kernels::cuda {
namespace {

// The launch configuration, apart from the algorithm.
struct ChunkConfig {
  static constexpr int kThreads = 256;  // threads per block, every kernel
  static constexpr int kVTile = 32;     // state columns per fwd.inter / bwd.bk2 block
  static constexpr int kMaxDim = 128;   // K and V at most
  static constexpr int kMaxChunk = 64;  // C at most
};

// Dynamic shared memory of each kernel, in floats.
__host__ __device__ constexpr int intra_shared_floats(int C, int K) {
  return 2 * C * K + 2 * C * C;  // G, keys; A, Tinv
}
__host__ __device__ constexpr int carry_shared_floats(int C, int K, int v_tile) {
  return (K + C) * v_tile;  // the state tile (S or dS) and U or dU
}
__host__ __device__ constexpr int bk1_shared_floats(int C, int K, int V) {
  return C * K + C * V + 3 * C * C;  // G, U; Tinv, dM, dA
}

// The global scratch, one slab per (b, h, chunk) in each buffer; slab s of a
// buffer of rows x cols slabs starts at s * rows * cols.
struct ChunkScratch {
  // fwd.intra (what the chunk's WY representation needs later)
  float* G;          // C x K  cumulative log-decay from the chunk start
  float* Tinv;       // C x C  (I + A)^-1
  float* M;          // C x C  lower, diagonal included
  float* Ut;         // C x V
  float* Wt;         // C x K
  float* Qg;         // C x K  Q * exp(G)
  float* Kdec;       // C x K  K * exp(G_C - G)
  float* decay_end;  // K      exp(G_C)
  // the glue: saved chunk-start states (fwd.inter) and the dS_end handed back (bwd.bk2)
  float* chunk_start;  // K x V
  float* dS_end;       // K x V
  // bwd.bk1
  float* dU;     // C x V  zeroed, then accumulated into
  float* dX;     // C x V  Tinv^T dU
  float* dY;     // C x K  -Tinv^T dU S0^T
  float* dKdec;  // C x K  U dS_end^T
  float* dG;     // C x K  wrt the cumulative G, before the reverse cumulative sum
};

__host__ __device__ inline float* slab_of(float* buffer, std::size_t slab, int rows, int cols) {
  return buffer + slab * static_cast<std::size_t>(rows) * cols;
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

// Element i of token t of a token tensor [B,T,H,width], for (b, h). t >= T
// only under partial_chunk_reads_past_t: the address then wraps around the
// buffer, as the cpu twin's `at % buffer.size()` (kernels/cpu/backends.cpp).
__device__ inline float token(const DeviceProblem& p, const float* x, int width, int b, int h,
                              int t, int i) {
  std::size_t at = tok(p.T, p.H, width, b, t, h, i);
  if (t >= p.T) at %= static_cast<std::size_t>(p.B) * p.T * p.H * width;
  return x[at];
}

// dU_ij = scale sum_{r>=i} M_ri dO_rj + sum_k Kdec_ik dS_end_kj for one element
// (M is lower, so r < i adds nothing); token column v of dO, column ds_col of
// dS_end (a row stride of ds_stride). BK2 and BK1 both call it.
__device__ inline float du_element(const DeviceProblem& p, const ChunkSite& at, const float* M,
                                   const float* Kdec, const float* dS_end, int ds_stride, int i,
                                   int v, int ds_col) {
  float through_output = 0.0f;
  for (int r = i; r < at.L; ++r)
    through_output += M[r * p.chunk + i] * token(p, p.d_o, p.V, at.b, at.h, at.t0 + r, v);
  float through_state = 0.0f;
  for (int k = 0; k < p.K; ++k) through_state += Kdec[i * p.K + k] * dS_end[k * ds_stride + ds_col];
  return p.scale * through_output + through_state;
}

// ---------------------------------------------------------------------------
// fwd.intra: the chunk's WY representation, everything that does not depend on
// S0. Block: one chunk of one (b, h). Shared: G, keys (C x K); A, Tinv (C x C).
// Writes whole C-row slabs, rows >= L as zeros.
__global__ void __launch_bounds__(ChunkConfig::kThreads)
    chunk_intra_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks) {
  const int C = p.chunk, K = p.K, V = p.V;
  const ChunkSite at = chunk_site(p, num_chunks, blockIdx.y, blockIdx.x);
  const int L = at.L;
  extern __shared__ float shared[];
  float* G = shared;        // C x K
  float* keys = G + C * K;  // C x K
  float* A = keys + C * K;  // C x C
  float* Tinv = A + C * C;  // C x C
  float* M = slab_of(scratch.M, at.slab, C, C);
  float* Ut = slab_of(scratch.Ut, at.slab, C, V);
  float* Wt = slab_of(scratch.Wt, at.slab, C, K);
  float* Qg = slab_of(scratch.Qg, at.slab, C, K);
  float* Kdec = slab_of(scratch.Kdec, at.slab, C, K);
  float* decay_end = slab_of(scratch.decay_end, at.slab, 1, K);
  float* G_slab = slab_of(scratch.G, at.slab, C, K);
  float* Tinv_slab = slab_of(scratch.Tinv, at.slab, C, C);

  // G_r = sum_{i<=r} g_i per channel k, summed in row order by one thread per
  // channel (sum_{i<r}: exclusive, under cumulative_decay_off_by_one)
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    float running = 0.0f;
    for (int r = 0; r < C; ++r) {
      if (r >= L) {
        G[r * K + k] = 0.0f;
        continue;
      }
      const float g = token(p, p.g, K, at.b, at.h, at.t0 + r, k);
      if (DP_FAULT(p.faults, cumulative_decay_off_by_one)) {
        G[r * K + k] = running;
        running += g;
      } else {
        running += g;
        G[r * K + k] = running;
      }
    }
  }
  for (int idx = threadIdx.x; idx < L * K; idx += blockDim.x)
    keys[idx] = token(p, p.k, K, at.b, at.h, at.t0 + idx / K, idx % K);
  __syncthreads();

  // A_ri = sum_k b_rk k_rk exp(G_rk - G_ik) k_ik  (i < r; without b under b_dropped_from_a)
  // M_ri = sum_k q_rk exp(G_rk - G_ik) k_ik       (i <= r)
  for (int idx = threadIdx.x; idx < C * C; idx += blockDim.x) {
    const int r = idx / C, i = idx % C;
    float a = 0.0f, m = 0.0f;
    if (i <= r && r < L) {
      for (int k = 0; k < K; ++k) {
        const float decayed_key = keys[i * K + k] * expf(G[r * K + k] - G[i * K + k]);
        m += token(p, p.q, K, at.b, at.h, at.t0 + r, k) * decayed_key;
        const float erase = DP_FAULT(p.faults, b_dropped_from_a)
                                ? 1.0f
                                : token(p, p.b, K, at.b, at.h, at.t0 + r, k);
        a += erase * keys[r * K + k] * decayed_key;
      }
    }
    A[idx] = i < r ? a : 0.0f;
    M[idx] = m;
  }
  __syncthreads();

  // Tinv = (I + A)^-1 by forward substitution, one thread per column j:
  //   Tinv_jj = 1,  Tinv_rj = -sum_{j<=i<r} A_ri Tinv_ij  (r > j),  0 above the diagonal.
  // A thread reads only its own column of Tinv, so the column needs no barrier.
  for (int j = threadIdx.x; j < C; j += blockDim.x) {
    for (int r = 0; r < C; ++r) {
      float x = 0.0f;
      if (j < L && r < L) {
        if (r == j) x = 1.0f;
        for (int i = j; i < r; ++i) x -= A[r * C + i] * Tinv[i * C + j];
      }
      Tinv[r * C + j] = x;
      Tinv_slab[r * C + j] = x;
    }
  }
  __syncthreads();

  // Ut = Tinv (W*V)
  for (int idx = threadIdx.x; idx < C * V; idx += blockDim.x) {
    const int r = idx / V, j = idx % V;
    float x = 0.0f;
    if (r < L)
      for (int i = 0; i <= r; ++i)
        x += Tinv[r * C + i] * (token(p, p.w, V, at.b, at.h, at.t0 + i, j) *
                                token(p, p.v, V, at.b, at.h, at.t0 + i, j));
    Ut[idx] = x;
  }
  // Wt = Tinv (B*K*exp G),  Qg = Q*exp(G),  Kdec = K*exp(G_C - G), G_C the last row's G
  // (exp(G_C) in place of G_C under double_exp_chunk_decay, the bug of background/000)
  for (int idx = threadIdx.x; idx < C * K; idx += blockDim.x) {
    const int r = idx / K, k = idx % K;
    float wt = 0.0f, qg = 0.0f, kdec = 0.0f;
    if (r < L) {
      for (int i = 0; i <= r; ++i)
        wt += Tinv[r * C + i] *
              (token(p, p.b, K, at.b, at.h, at.t0 + i, k) * keys[i * K + k] * expf(G[i * K + k]));
      qg = token(p, p.q, K, at.b, at.h, at.t0 + r, k) * expf(G[idx]);
      const float G_end = G[(L - 1) * K + k];
      const float end = DP_FAULT(p.faults, double_exp_chunk_decay) ? expf(G_end) : G_end;
      kdec = keys[idx] * expf(end - G[idx]);
    }
    Wt[idx] = wt;
    Qg[idx] = qg;
    Kdec[idx] = kdec;
    G_slab[idx] = G[idx];
  }
  // decay_end = exp(G_C)
  for (int k = threadIdx.x; k < K; k += blockDim.x) decay_end[k] = expf(G[(L - 1) * K + k]);
}

// ---------------------------------------------------------------------------
// fwd.inter: the sequential carry over chunks, for the state columns
// [v0, v0 + cols) of one (b, h). Shared: S (K x v_tile), U (C x v_tile).
// v_tile is V (one tile) under state_transposed with K == V: a transposed
// state mixes columns.
__global__ void __launch_bounds__(ChunkConfig::kThreads)
    chunk_inter_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks,
                       int v_tile) {
  const int C = p.chunk, K = p.K, V = p.V;
  const int bh = blockIdx.y, v0 = blockIdx.x * v_tile;
  const int cols = min(v_tile, V - v0);
  const int b = bh / p.H, h = bh % p.H;
  const bool transposed = DP_FAULT(p.faults, state_transposed) && K == V;
  extern __shared__ float shared[];
  float* S = shared;          // K x v_tile
  float* U = S + K * v_tile;  // C x v_tile

  // S = h0
  for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
    const int k = idx / cols, j = idx % cols;
    S[k * v_tile + j] = p.h0[st(p.H, K, V, b, h, k, v0 + j)];
  }
  __syncthreads();

  for (int c = 0; c < num_chunks; ++c) {
    const ChunkSite at = chunk_site(p, num_chunks, bh, c);
    const int L = at.L;
    const float* M = slab_of(scratch.M, at.slab, C, C);
    const float* Ut = slab_of(scratch.Ut, at.slab, C, V);
    const float* Wt = slab_of(scratch.Wt, at.slab, C, K);
    const float* Qg = slab_of(scratch.Qg, at.slab, C, K);
    const float* Kdec = slab_of(scratch.Kdec, at.slab, C, K);
    const float* decay_end = slab_of(scratch.decay_end, at.slab, 1, K);
    float* chunk_start = slab_of(scratch.chunk_start, at.slab, K, V);

    // S0: the carried state (h0 again under state_not_carried; read as S0^T
    // under state_transposed, where the tile is the whole square state)
    if (c > 0 && DP_FAULT(p.faults, state_not_carried))
      for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
        const int k = idx / cols, j = idx % cols;
        S[k * v_tile + j] = p.h0[st(p.H, K, V, b, h, k, v0 + j)];
      }
    __syncthreads();
    if (transposed)
      for (int idx = threadIdx.x; idx < K * K; idx += blockDim.x) {
        const int k = idx / K, j = idx % K;
        if (k < j) {  // each pair swapped by one thread
          const float upper = S[k * v_tile + j];
          S[k * v_tile + j] = S[j * v_tile + k];
          S[j * v_tile + k] = upper;
        }
      }
    __syncthreads();
    // the glue: every chunk's start state saved for BK1
    for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
      const int k = idx / cols, j = idx % cols;
      chunk_start[k * V + v0 + j] = S[k * v_tile + j];
    }

    // U = Ut - Wt S0
    for (int idx = threadIdx.x; idx < L * cols; idx += blockDim.x) {
      const int r = idx / cols, j = idx % cols;
      float wt_s0 = 0.0f;
      for (int k = 0; k < K; ++k) wt_s0 += Wt[r * K + k] * S[k * v_tile + j];
      U[r * v_tile + j] = Ut[r * V + v0 + j] - wt_s0;
    }
    __syncthreads();

    // O = scale [Qg S0 + M U]  (rows past T, read only under the partial-chunk fault, not written)
    for (int idx = threadIdx.x; idx < L * cols; idx += blockDim.x) {
      const int r = idx / cols, j = idx % cols;
      if (at.t0 + r >= p.T) continue;
      float from_state = 0.0f;
      for (int k = 0; k < K; ++k) from_state += Qg[r * K + k] * S[k * v_tile + j];
      float from_chunk = 0.0f;
      for (int i = 0; i <= r; ++i) from_chunk += M[r * C + i] * U[i * v_tile + j];
      p.o[tok(p.T, p.H, V, b, at.t0 + r, h, v0 + j)] = p.scale * (from_state + from_chunk);
    }
    __syncthreads();  // O read all of S; S_end overwrites it

    // S_end = Diag(exp G_C) S0 + Kdec^T U
    for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
      const int k = idx / cols, j = idx % cols;
      float kdec_u = 0.0f;
      for (int i = 0; i < L; ++i) kdec_u += Kdec[i * K + k] * U[i * v_tile + j];
      S[k * v_tile + j] = decay_end[k] * S[k * v_tile + j] + kdec_u;
    }
    __syncthreads();
  }

  // ht: the last chunk's S_end
  for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
    const int k = idx / cols, j = idx % cols;
    p.ht[st(p.H, K, V, b, h, k, v0 + j)] = S[k * v_tile + j];
  }
}

// ---------------------------------------------------------------------------
// bwd.bk2 and the glue: the reverse recurrence for dS over chunks, for the
// state columns [v0, v0 + cols) of one (b, h). Shared: dS (K x v_tile), holding
// dS_end of the chunk and then its dS0; dU (C x v_tile).
__global__ void __launch_bounds__(ChunkConfig::kThreads)
    bk2_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks, int v_tile) {
  const int C = p.chunk, K = p.K, V = p.V;
  const int bh = blockIdx.y, v0 = blockIdx.x * v_tile;
  const int cols = min(v_tile, V - v0);
  const int b = bh / p.H, h = bh % p.H;
  extern __shared__ float shared[];
  float* dS = shared;           // K x v_tile
  float* dU = dS + K * v_tile;  // C x v_tile

  // the last chunk's dS_end = dht (zero under dht_ignored)
  for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
    const int k = idx / cols, j = idx % cols;
    dS[k * v_tile + j] =
        DP_FAULT(p.faults, dht_ignored) ? 0.0f : p.dht[st(p.H, K, V, b, h, k, v0 + j)];
  }
  __syncthreads();

  for (int c = num_chunks - 1; c >= 0; --c) {
    const ChunkSite at = chunk_site(p, num_chunks, bh, c);
    const int L = at.L;
    const float* M = slab_of(scratch.M, at.slab, C, C);
    const float* Wt = slab_of(scratch.Wt, at.slab, C, K);
    const float* Qg = slab_of(scratch.Qg, at.slab, C, K);
    const float* Kdec = slab_of(scratch.Kdec, at.slab, C, K);
    const float* decay_end = slab_of(scratch.decay_end, at.slab, 1, K);
    float* dS_end = slab_of(scratch.dS_end, at.slab, K, V);

    // the glue: dS_end of every chunk saved for BK1
    for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
      const int k = idx / cols, j = idx % cols;
      dS_end[k * V + v0 + j] = dS[k * v_tile + j];
    }

    // dU = scale M^T dO + Kdec dS_end
    for (int idx = threadIdx.x; idx < L * cols; idx += blockDim.x) {
      const int i = idx / cols, j = idx % cols;
      dU[i * v_tile + j] = du_element(p, at, M, Kdec, dS, v_tile, i, v0 + j, j);
    }
    // every thread reads all of dU's column below (and overwrites dS, which dU
    // read): the barrier the missing_barrier_bk2 fault leaves out
    if (!DP_FAULT(p.faults, missing_barrier_bk2)) __syncthreads();

    // dS0 = scale Qg^T dO + Diag(exp G_C) dS_end - Wt^T dU. The Wt^T dU term is
    // summed first and from the last row up: the rows of dU written last are
    // read first, so a missing barrier shows in the numbers.
    for (int idx = threadIdx.x; idx < K * cols; idx += blockDim.x) {
      const int k = idx / cols, j = idx % cols;
      float wt_du = 0.0f;
      for (int i = L - 1; i >= 0; --i) wt_du += Wt[i * K + k] * dU[i * v_tile + j];
      float qg_do = 0.0f;
      for (int r = 0; r < L; ++r)
        qg_do += Qg[r * K + k] * token(p, p.d_o, V, b, h, at.t0 + r, v0 + j);
      const float dS0 = p.scale * qg_do + decay_end[k] * dS[k * v_tile + j] - wt_du;
      // the glue: dS0 is the previous chunk's dS_end (zero under
      // ds_not_handed_back); the first chunk's is dh0 (unwritten under dh0_not_written)
      dS[k * v_tile + j] = DP_FAULT(p.faults, ds_not_handed_back) ? 0.0f : dS0;
      if (c == 0 && !DP_FAULT(p.faults, dh0_not_written))
        p.dh0[st(p.H, K, V, b, h, k, v0 + j)] = dS0;
    }
    __syncthreads();
  }
}

// ---------------------------------------------------------------------------
// bwd.bk1: the intra-chunk adjoint of one chunk of one (b, h), given its S0
// (chunk_start) and dS_end, as bk1_chunk_adjoint in kernels/cpu/chunk.cpp.
// Shared: G, U (C x K, C x V); Tinv, dM, dA (C x C). Global scratch slabs: dU,
// dX, dY, dKdec, dG. Writes dq dk dv dg db dw.
__global__ void __launch_bounds__(ChunkConfig::kThreads)
    bk1_kernel(const DeviceProblem p, const ChunkScratch scratch, int num_chunks) {
  const int C = p.chunk, K = p.K, V = p.V;
  const int c = blockIdx.x, bh = blockIdx.y;
  const ChunkSite at = chunk_site(p, num_chunks, bh, c);
  const int L = at.L, b = at.b, h = at.h, t0 = at.t0;
  extern __shared__ float shared[];
  float* G = shared;         // C x K
  float* U = G + C * K;      // C x V
  float* Tinv = U + C * V;   // C x C
  float* dM = Tinv + C * C;  // C x C
  float* dA = dM + C * C;    // C x C
  const float* Ut = slab_of(scratch.Ut, at.slab, C, V);
  const float* Wt = slab_of(scratch.Wt, at.slab, C, K);
  const float* decay_end = slab_of(scratch.decay_end, at.slab, 1, K);
  const float* S0 = slab_of(scratch.chunk_start, at.slab, K, V);
  const float* dS_end = slab_of(scratch.dS_end, at.slab, K, V);
  float* du_scratch = slab_of(scratch.dU, at.slab, C, V);
  float* dX = slab_of(scratch.dX, at.slab, C, V);
  float* dY = slab_of(scratch.dY, at.slab, C, K);
  float* dKdec = slab_of(scratch.dKdec, at.slab, C, K);
  float* dG = slab_of(scratch.dG, at.slab, C, K);
  auto q = [&](int r, int k) { return token(p, p.q, K, b, h, t0 + r, k); };
  auto key = [&](int r, int k) { return token(p, p.k, K, b, h, t0 + r, k); };
  auto beta = [&](int r, int k) { return token(p, p.b, K, b, h, t0 + r, k); };
  auto dO = [&](int r, int j) { return token(p, p.d_o, V, b, h, t0 + r, j); };

  for (int idx = threadIdx.x; idx < L * K; idx += blockDim.x)
    G[idx] = slab_of(scratch.G, at.slab, C, K)[idx];
  for (int idx = threadIdx.x; idx < C * C; idx += blockDim.x)
    Tinv[idx] = slab_of(scratch.Tinv, at.slab, C, C)[idx];

  // U = Ut - Wt S0
  for (int idx = threadIdx.x; idx < L * V; idx += blockDim.x) {
    const int r = idx / V, j = idx % V;
    float wt_s0 = 0.0f;
    for (int k = 0; k < K; ++k) wt_s0 += Wt[r * K + k] * S0[k * V + j];
    U[idx] = Ut[idx] - wt_s0;
  }
  // dU = scale M^T dO + Kdec dS_end, accumulated into the zeroed scratch (under
  // global_scratch_read_before_write it was never zeroed: the NaN fill shows).
  // Under scratch_read_before_write the scratch is not cleared between chunks,
  // as the cpu twin's sequential loop over chunks: chunk c holds the sum of dU
  // over chunks 0..c (a partial last chunk, of another size, starts afresh).
  {
    const int first = DP_FAULT(p.faults, scratch_read_before_write) && L == C ? 0 : c;
    for (int idx = threadIdx.x; idx < L * V; idx += blockDim.x) {
      const int i = idx / V, j = idx % V;
      float du = 0.0f;
      for (int cc = first; cc <= c; ++cc) {
        const ChunkSite before = chunk_site(p, num_chunks, bh, cc);
        du += du_element(p, before, slab_of(scratch.M, before.slab, C, C),
                         slab_of(scratch.Kdec, before.slab, C, K),
                         slab_of(scratch.dS_end, before.slab, K, V), V, i, j, j);
      }
      du_scratch[idx] += du;
    }
  }
  __syncthreads();

  // O = scale [Qg S0 + M U]:  dM = scale dO U^T (lower, diagonal included)
  for (int idx = threadIdx.x; idx < C * C; idx += blockDim.x) {
    const int r = idx / C, i = idx % C;
    float dm = 0.0f;
    if (i <= r && r < L) {
      for (int j = 0; j < V; ++j) dm += dO(r, j) * U[i * V + j];
      dm *= p.scale;
    }
    dM[idx] = dm;
  }
  // U = Ut - Wt S0, Ut = Tinv X:  dX = Tinv^T dU
  for (int idx = threadIdx.x; idx < L * V; idx += blockDim.x) {
    const int i = idx / V, j = idx % V;
    float dx = 0.0f;
    for (int r = i; r < L; ++r) dx += Tinv[r * C + i] * du_scratch[r * V + j];
    dX[idx] = dx;
  }
  // S_end = Diag(exp G_C) S0 + Kdec^T U:  dKdec = U dS_end^T
  for (int idx = threadIdx.x; idx < L * K; idx += blockDim.x) {
    const int i = idx / K, k = idx % K;
    float dkdec = 0.0f;
    for (int j = 0; j < V; ++j) dkdec += U[i * V + j] * dS_end[k * V + j];
    dKdec[idx] = dkdec;
  }
  __syncthreads();

  // Wt = Tinv Y:  dY = -Tinv^T dU S0^T, formed as -dX S0^T (dX = Tinv^T dU)
  for (int idx = threadIdx.x; idx < L * K; idx += blockDim.x) {
    const int i = idx / K, k = idx % K;
    float dx_s0 = 0.0f;
    for (int j = 0; j < V; ++j) dx_s0 += dX[i * V + j] * S0[k * V + j];
    dY[idx] = -dx_s0;
  }
  // X = W*V:  dW = dX*V,  dV = dX*W
  for (int idx = threadIdx.x; idx < L * V; idx += blockDim.x) {
    const int r = idx / V, j = idx % V;
    if (t0 + r >= p.T) continue;
    const std::size_t out = tok(p.T, p.H, V, b, t0 + r, h, j);
    p.dw[out] = dX[idx] * token(p, p.v, V, b, h, t0 + r, j);
    p.dv[out] = dX[idx] * token(p, p.w, V, b, h, t0 + r, j);
  }
  __syncthreads();

  // Tinv = (I + A)^-1:  dA = -(dX Ut^T + dY Wt^T), strictly lower
  for (int idx = threadIdx.x; idx < C * C; idx += blockDim.x) {
    const int r = idx / C, i = idx % C;
    float da = 0.0f;
    if (i < r && r < L) {
      float dx_ut = 0.0f;
      for (int j = 0; j < V; ++j) dx_ut += dX[r * V + j] * Ut[i * V + j];
      float dy_wt = 0.0f;
      for (int k = 0; k < K; ++k) dy_wt += dY[r * K + k] * Wt[i * K + k];
      da = -(dx_ut + dy_wt);
    }
    dA[idx] = da;
  }
  __syncthreads();

  // One thread per element (j, k): dQ, dK, dB and dG (wrt the cumulative G).
  for (int idx = threadIdx.x; idx < L * K; idx += blockDim.x) {
    const int j = idx / K, k = idx % K;
    const float q_j = q(j, k), key_j = key(j, k), beta_j = beta(j, k);
    const float G_j = G[idx], E_j = expf(G_j);
    // Qg = Q*E, O = scale [Qg S0 + ...]:  dQg = scale dO S0^T
    float dqg = 0.0f;
    for (int v = 0; v < V; ++v) dqg += dO(j, v) * S0[k * V + v];
    dqg *= p.scale;
    // Y = B*K*E
    float dB = dY[idx] * key_j * E_j;
    float dK = dY[idx] * beta_j * E_j;
    float dE = dY[idx] * beta_j * key_j;
    // Qg = Q*E
    float dQ = dqg * E_j;
    dE += dqg * q_j;
    float dG_j = dE * E_j;

    // M_ri and A_ri through their pairwise decays exp(G_r - G_i). As the row
    // (r = j), partners i <= j; the diagonal's decay is 1 and adds nothing to dG.
    for (int i = 0; i <= j; ++i) {
      const float decay = expf(G_j - G[i * K + k]);
      const float key_i = key(i, k);
      const float m = dM[j * C + i] * decay;
      dQ += m * key_i;
      if (i < j) {
        const float a = dA[j * C + i] * decay;
        dB += a * key_j * key_i;
        dK += a * beta_j * key_i;
        dG_j += m * q_j * key_i + a * beta_j * key_j * key_i;  // + through_g
      }
    }
    // As the column (i = j), partners r >= j.
    for (int r = j; r < L; ++r) {
      const float decay = expf(G[r * K + k] - G_j);
      const float q_r = q(r, k);
      const float m = dM[r * C + j] * decay;
      dK += m * q_r;
      if (r > j) {
        const float beta_r = beta(r, k), key_r = key(r, k);
        const float a = dA[r * C + j] * decay;
        dK += a * beta_r * key_r;
        dG_j -= m * q_r * key_j + a * beta_r * key_r * key_j;  // - through_g
      }
    }
    // Kdec = K * exp(G_C - G): through K, and through G (- at row j, + at the
    // last row, which collects every other row's term; its own cancels)
    const float G_end = G[(L - 1) * K + k];
    {
      const float decay = expf(G_end - G_j);
      dK += dKdec[idx] * decay;
      if (j < L - 1) dG_j -= dKdec[idx] * key_j * decay;
    }
    if (j == L - 1) {
      for (int i = 0; i < L - 1; ++i)
        dG_j += dKdec[i * K + k] * key(i, k) * expf(G_end - G[i * K + k]);
      // decay_end = exp(G_C):  d_decay_end = rowsum(dS_end * S0)
      float d_decay_end = 0.0f;
      for (int v = 0; v < V; ++v) d_decay_end += dS_end[k * V + v] * S0[k * V + v];
      dG_j += d_decay_end * decay_end[k];
    }
    dG[idx] = dG_j;
    if (t0 + j < p.T) {
      const std::size_t out = tok(p.T, p.H, K, b, t0 + j, h, k);
      p.dq[out] = dQ;
      p.dk[out] = dK;
      p.db[out] = dB;
    }
  }
  __syncthreads();

  // G_r = sum_{i<=r} g_i: dg is the reverse cumulative sum of dG, one thread
  // per channel (sign flipped under dg_sign_flipped)
  for (int k = threadIdx.x; k < K; k += blockDim.x) {
    float running = 0.0f;
    for (int r = L - 1; r >= 0; --r) {
      running += dG[r * K + k];
      if (t0 + r < p.T)
        p.dg[tok(p.T, p.H, K, b, t0 + r, h, k)] =
            DP_FAULT(p.faults, dg_sign_flipped) ? -running : running;
    }
  }
}

// ---------------------------------------------------------------------------
// Host side.

void check_supported(const DeviceProblem& p, bool backward) {
  auto fail = [&](const std::string& what) {
    throw std::runtime_error("cuda-chunk: " + what + " (" + describe(p) + ")");
  };
  if (p.B < 1 || p.T < 1 || p.H < 1) fail("B, T and H must be at least 1");
  if (p.K < 1 || p.K > ChunkConfig::kMaxDim || p.V < 1 || p.V > ChunkConfig::kMaxDim)
    fail("K and V must be from 1 to " + std::to_string(ChunkConfig::kMaxDim));
  if (p.chunk != 16 && p.chunk != 32 && p.chunk != ChunkConfig::kMaxChunk)
    fail("the chunk size must be 16, 32 or 64");
  if (static_cast<long long>(p.B) * p.H > 65535) fail("B*H must be at most 65535 (grid y)");
  if (!p.q || !p.k || !p.v || !p.g || !p.b || !p.w || !p.h0 || !p.o || !p.ht)
    fail("an input or output pointer is null");
  if (backward &&
      (!p.d_o || !p.dht || !p.dq || !p.dk || !p.dv || !p.dg || !p.db || !p.dw || !p.dh0))
    fail("a cotangent or gradient pointer is null");
}

// Scratch buffers, one slab per (b, h, chunk), filled with NaN on allocation.
// The backward's are allocated only for a backward run.
struct ScratchBuffers {
  ScratchBuffers(const DeviceProblem& p, std::size_t slabs, bool backward)
      : slabs_(slabs),
        backward_(backward),
        G(floats(p.chunk, p.K), "scratch G", p),
        Tinv(floats(p.chunk, p.chunk), "scratch Tinv", p),
        M(floats(p.chunk, p.chunk), "scratch M", p),
        Ut(floats(p.chunk, p.V), "scratch Ut", p),
        Wt(floats(p.chunk, p.K), "scratch Wt", p),
        Qg(floats(p.chunk, p.K), "scratch Qg", p),
        Kdec(floats(p.chunk, p.K), "scratch Kdec", p),
        decay_end(floats(1, p.K), "scratch decay_end", p),
        chunk_start(floats(p.K, p.V), "scratch chunk_start", p),
        dS_end(backward_floats(p.K, p.V), "scratch dS_end", p),
        dU(backward_floats(p.chunk, p.V), "scratch dU", p),
        dX(backward_floats(p.chunk, p.V), "scratch dX", p),
        dY(backward_floats(p.chunk, p.K), "scratch dY", p),
        dKdec(backward_floats(p.chunk, p.K), "scratch dKdec", p),
        dG(backward_floats(p.chunk, p.K), "scratch dG", p) {
    for (const DeviceBuffer* buffer : {&G, &Tinv, &M, &Ut, &Wt, &Qg, &Kdec, &decay_end,
                                       &chunk_start, &dS_end, &dU, &dX, &dY, &dKdec, &dG})
      if (buffer->size())
        CUDA_CHECK(cudaMemset(buffer->get(), 0xFF, buffer->size() * sizeof(float)),
                   "cudaMemset (scratch NaN fill)", p);
  }
  std::size_t floats(int rows, int cols) const {
    return slabs_ * static_cast<std::size_t>(rows) * cols;
  }
  std::size_t backward_floats(int rows, int cols) const {
    return backward_ ? floats(rows, cols) : 0;
  }
  ChunkScratch view() const {
    return {G.get(),  Tinv.get(), M.get(),         Ut.get(),          Wt.get(),
            Qg.get(), Kdec.get(), decay_end.get(), chunk_start.get(), dS_end.get(),
            dU.get(), dX.get(),   dY.get(),        dKdec.get(),       dG.get()};
  }

  const std::size_t slabs_;
  const bool backward_;
  DeviceBuffer G, Tinv, M, Ut, Wt, Qg, Kdec, decay_end, chunk_start, dS_end, dU, dX, dY, dKdec, dG;
};

// Lets a kernel use up to `floats` of dynamic shared memory (beyond the 48 KB
// default). Each kernel is given its most for any supported shape, so callers
// on several host threads all set the same value.
template <class Kernel>
void allow_shared(Kernel kernel, int floats, const char* name, const DeviceProblem& p) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  floats * static_cast<int>(sizeof(float))),
             name, p);
}

}  // namespace

void run_chunk(const DeviceProblem& p, bool backward, LaunchLog& log) {
  check_supported(p, backward);
  using Config = ChunkConfig;
  const int C = p.chunk, K = p.K, V = p.V;
  const int num_chunks = (p.T + C - 1) / C;
  const int heads = p.B * p.H;
  ScratchBuffers buffers(p, static_cast<std::size_t>(heads) * num_chunks, backward);
  const ChunkScratch scratch = buffers.view();
  const dim3 chunk_grid(num_chunks, heads);
  constexpr int kMaxC = Config::kMaxChunk, kMaxD = Config::kMaxDim;

  // fwd.intra
  allow_shared(chunk_intra_kernel, intra_shared_floats(kMaxC, kMaxD), "chunk_intra_kernel", p);
  chunk_intra_kernel<<<chunk_grid, Config::kThreads, intra_shared_floats(C, K) * sizeof(float)>>>(
      p, scratch, num_chunks);
  CUDA_CHECK_LAUNCH("chunk_intra_kernel", p);
  log.note("fwd.intra", "chunk_intra_kernel");

  // fwd.inter: a transposed state (the fault) mixes columns, so one tile of all of V
  const bool whole_state = DP_FAULT(p.faults, state_transposed) && K == V;
  const int inter_tile = whole_state ? V : std::min(Config::kVTile, V);
  allow_shared(chunk_inter_kernel, carry_shared_floats(kMaxC, kMaxD, kMaxD), "chunk_inter_kernel",
               p);
  const dim3 inter_grid((V + inter_tile - 1) / inter_tile, heads);
  chunk_inter_kernel<<<inter_grid, Config::kThreads,
                       carry_shared_floats(C, K, inter_tile) * sizeof(float)>>>(
      p, scratch, num_chunks, inter_tile);
  CUDA_CHECK_LAUNCH("chunk_inter_kernel", p);
  log.note("fwd.inter", "chunk_inter_kernel");
  if (!backward) return;

  // bwd.bk2 and the glue (dS_end handed back, dh0), in one kernel
  const int bk2_tile = std::min(Config::kVTile, V);
  allow_shared(bk2_kernel, carry_shared_floats(kMaxC, kMaxD, Config::kVTile), "bk2_kernel", p);
  const dim3 bk2_grid((V + bk2_tile - 1) / bk2_tile, heads);
  bk2_kernel<<<bk2_grid, Config::kThreads, carry_shared_floats(C, K, bk2_tile) * sizeof(float)>>>(
      p, scratch, num_chunks, bk2_tile);
  CUDA_CHECK_LAUNCH("bk2_kernel", p);
  log.note("bwd.bk2", "bk2_kernel");
  log.note("bwd.glue", "bk2_kernel");

  // bwd.bk1: its dU scratch is zeroed, then accumulated into (never zeroed
  // under global_scratch_read_before_write: it keeps the NaN fill)
  if (!DP_FAULT(p.faults, global_scratch_read_before_write))
    CUDA_CHECK(cudaMemset(scratch.dU, 0, buffers.dU.size() * sizeof(float)),
               "cudaMemset (bk1 dU scratch)", p);
  allow_shared(bk1_kernel, bk1_shared_floats(kMaxC, kMaxD, kMaxD), "bk1_kernel", p);
  bk1_kernel<<<chunk_grid, Config::kThreads, bk1_shared_floats(C, K, V) * sizeof(float)>>>(
      p, scratch, num_chunks);
  CUDA_CHECK_LAUNCH("bk1_kernel", p);
  log.note("bwd.bk1", "bk1_kernel");
}

}  // namespace deltaproof::kernels::cuda

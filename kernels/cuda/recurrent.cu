// kernels/cuda/recurrent.cu — cuda-recurrent: DESIGN.md section 1 token by
// token on the GPU, and its hand-derived reverse sweep. The device twin of
// core/recurrence.hpp (forward() and reverse(), which cpu-recurrent runs in
// f32 on the host): the same equations, the same names (state, decay, bk, u,
// du, dstate, decayed, current, dpre, dbk, previous).
//
// Forward, per token t (S is K x V):
//   a = exp(g_t);  P = Diag(a) S_{t-1};  e = P^T (b_t * k_t)
//   u = w_t * v_t - e;  S_t = P + k_t u^T;  o_t = scale S_t^T q_t
// Reverse sweep of L = sum_t <o_t, do_t> + <S_T, dht>, dS = dL/dS_t from
// t = T down to 1, starting at dht:
//   dS += scale q_t do_t^T          dq_t = scale S_t do_t
//   dk_t = dS u + dbk * b_t         du = dS^T k_t
//   dw_t = du * v_t                 dv_t = du * w_t
//   dP = dS - bk du^T               dbk = -P du        db_t = dbk * k_t
//   dg_t = a * rowsum(dP .* S_{t-1})                   dS_{t-1} = Diag(a) dP
// and dh0 = dS_0.
//
// Layout of the work. The recurrence is separable over the V columns: column
// j of S and of dS depends on column j of v, w, do, dht, h0 and on the
// K-vectors only. So the grid is (V tiles of 32 columns, H, B), and a block of
// 256 threads carries the K x 32 tile of one (batch, head): lane j owns column
// j, warp r owns rows r, r + 8, r + 16, ... Each element of S and dS lives in
// a register of its owner for the whole sweep, so the state itself is never
// shared between threads. Shared memory holds the token vectors (staged 8
// tokens at a time) and the partial sums:
// - sums over the rows (e, o, du: one per column): each warp's partial sum over
//   its rows, then every thread of the column adds the 8 partials in order
//   0..7 (all of them get the same bits);
// - sums over the columns (dq, dk, db, dg: one per row): each element's
//   products staged in shared memory, a thread per row adds the tile's columns
//   in order, and writes the tile's sum to a scratch [V tiles][4][B,T,H,K];
//   recurrent_reduce_kernel adds the tiles in order 0, 1, ... and applies the
//   per-row factors (scale, b, k, a). Tile 0's sums go straight into the
//   gradient buffers they become (dq dk db dg), which the reduce then finishes
//   in place, so the scratch holds only tiles 1, 2, ...
// No atomics: every sum has one fixed order, so the bits are the same run to
// run.
//
// Inputs: q k v g b w are f32 or bf16 (DeviceProblem::input); every kernel
// is a template on that element type, and the dispatch is in run_recurrent.
// They are widened to f32 as they are read (read_input); all the arithmetic,
// h0, the cotangents and every output are f32.
//
// Kernels, by stage:
//   recurrent.fwd  recurrent_fwd_kernel     o and ht; for the backward also the
//                                           state every 64 tokens (checkpoints)
//   recurrent.bwd  recurrent_bwd_kernel     per 64-token segment, last first:
//                                           recompute its states from the
//                                           checkpoint, then sweep back; writes
//                                           dv, dw, dh0 and the tiles' row sums
//   recurrent.bwd  recurrent_reduce_kernel  dq, dk, db, dg from the row sums
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/tile.cuh"
#include "kernels/cuda/traits.cuh"

namespace deltaproof::kernels::cuda {

namespace {

// The kernels' configuration (no magic numbers in the kernel bodies):
// kernels/cuda/traits.cuh.
using Traits = RecurrentTraits;

// The per-row sums of the backward, one plane each in the row-sum scratch.
enum RowSum : int {
  kCurrentDo = 0,  // sum_j S_t[i,j] do_j        -> dq = scale * sum
  kDstateU = 1,    // sum_j dS[i,j] u_j          -> dk = sum + dbk * b
  kDecayedDu = 2,  // sum_j P[i,j] du_j          -> dbk = -sum
  kDpreState = 3,  // sum_j dP[i,j] S_{t-1}[i,j] -> dg = a * sum
  kNumRowSums = 4,
};

__host__ __device__ inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Where V tile `vtile`'s row sum `sum_id` lives, [B,T,H,K]: tile 0's in the
// gradient it turns into (recurrent_reduce_kernel finishes it in place), the
// other tiles' in the row-sum scratch [num_vtiles - 1][kNumRowSums][B,T,H,K].
__device__ inline float* row_sum_plane(const DeviceProblem& p, float* row_sums, int vtile,
                                       int sum_id) {
  if (vtile == 0) {
    switch (sum_id) {
      case kCurrentDo:
        return p.dq;
      case kDstateU:
        return p.dk;
      case kDecayedDu:
        return p.db;
      default:
        return p.dg;  // kDpreState
    }
  }
  const std::size_t plane = static_cast<std::size_t>(p.B) * p.T * p.H * p.K;
  return row_sums + (static_cast<std::size_t>(vtile - 1) * kNumRowSums + sum_id) * plane;
}

// The vectors of up to kTokenTile consecutive tokens, in shared memory; token
// m of the tile at [m * K] (K-vectors) or [m * kVTile] (this tile's columns).
struct TokenTile {
  float* q;      // [kTokenTile][K]
  float* k;      // [kTokenTile][K]
  float* decay;  // [kTokenTile][K]  a = exp(g)
  float* bk;     // [kTokenTile][K]  b * k
  float* v;      // [kTokenTile][kVTile]
  float* w;      // [kTokenTile][kVTile]
  float* d_o;    // [kTokenTile][kVTile]
};

__host__ __device__ inline int token_tile_floats(int K) {
  return Traits::kTokenTile * (4 * K + 3 * Traits::kVTile);
}

// Forward: the token tile, two alternating buffers of e partials, the o partials.
__host__ __device__ inline int forward_shared_floats(int K) {
  return token_tile_floats(K) + 3 * Traits::kColumnPartials;
}

// Backward: the token tile, two alternating buffers of e or du partials, u of
// every token of the segment, and the staged products of the row sums.
__host__ __device__ inline int backward_shared_floats(int K) {
  return token_tile_floats(K) + 2 * Traits::kColumnPartials + Traits::kSegment * Traits::kVTile +
         kNumRowSums * K * Traits::kStageStride;
}

__device__ TokenTile carve_token_tile(float*& cursor, int K) {
  const int k_floats = Traits::kTokenTile * K, v_floats = Traits::kTokenTile * Traits::kVTile;
  TokenTile tile;
  tile.q = cursor, cursor += k_floats;
  tile.k = cursor, cursor += k_floats;
  tile.decay = cursor, cursor += k_floats;
  tile.bk = cursor, cursor += k_floats;
  tile.v = cursor, cursor += v_floats;
  tile.w = cursor, cursor += v_floats;
  tile.d_o = cursor, cursor += v_floats;
  return tile;
}

// Where a thread sits: its (batch, head), its column and the rows it owns.
struct ThreadPlace {
  int b, h;           // batch, head
  int vtile;          // the block's V tile
  int col0;           // the tile's first column
  int cols;           // the tile's columns inside V (the last tile may be partial)
  int lane;           // this thread's column within the tile
  int j;              // this thread's column within V
  bool column_valid;  // j < V
  int row_group;      // the warp; owns rows owned_row(row_group, s)
};

__device__ ThreadPlace thread_place(const DeviceProblem& p) {
  ThreadPlace at;
  at.vtile = static_cast<int>(blockIdx.x);
  at.h = static_cast<int>(blockIdx.y);
  at.b = static_cast<int>(blockIdx.z);
  at.col0 = at.vtile * Traits::kVTile;
  at.cols = min(Traits::kVTile, p.V - at.col0);
  at.lane = static_cast<int>(threadIdx.x) % Traits::kVTile;
  at.row_group = static_cast<int>(threadIdx.x) / Traits::kVTile;
  at.j = at.col0 + at.lane;
  at.column_valid = at.j < p.V;
  return at;
}

__device__ inline int owned_row(int row_group, int s) { return row_group + Traits::kRowGroups * s; }

using OwnedRows = float[Traits::kRowsPerThread];

// The thread's elements of a K x V state at `state` (h0, dht, a checkpoint);
// zero outside K x V, which keeps those elements of S and dS exactly zero.
__device__ void load_state(OwnedRows& mine, const float* state, int K, int V,
                           const ThreadPlace& at) {
#pragma unroll
  for (int s = 0; s < Traits::kRowsPerThread; ++s) {
    const int i = owned_row(at.row_group, s);
    mine[s] = (i < K && at.column_valid) ? state[static_cast<std::size_t>(i) * V + at.j] : 0.0f;
  }
}

__device__ void store_state(const OwnedRows& mine, float* state, int K, int V,
                            const ThreadPlace& at) {
  if (!at.column_valid) return;
#pragma unroll
  for (int s = 0; s < Traits::kRowsPerThread; ++s) {
    const int i = owned_row(at.row_group, s);
    if (i < K) state[static_cast<std::size_t>(i) * V + at.j] = mine[s];
  }
}

// Stages tokens [t_begin, t_begin + count) of (b, h) for this block's columns.
// Opens with a barrier (no thread still reads the previous tile) and closes
// with one (every thread sees this tile): call it from every thread. Columns
// past V read as zero (their S stays zero). q and do only when asked. In: the
// element type of q k v g b w.
template <class In>
__device__ void load_token_tile(const DeviceProblem& p, const ThreadPlace& at, int t_begin,
                                int count, bool with_q, bool with_do, const TokenTile& tile) {
  __syncthreads();
  for (int idx = static_cast<int>(threadIdx.x); idx < count * p.K; idx += Traits::kThreads) {
    const int m = idx / p.K, i = idx % p.K;
    const std::size_t n = token_offset(p.T, p.H, p.K, at.b, t_begin + m, at.h, i);
    const float k = read_input<In>(p.k, n);
    if (with_q) tile.q[idx] = read_input<In>(p.q, n);
    tile.k[idx] = k;
    tile.decay[idx] = expf(read_input<In>(p.g, n));  // a = exp(g_t)
    tile.bk[idx] = read_input<In>(p.b, n) * k;       // bk = b_t * k_t
  }
  for (int idx = static_cast<int>(threadIdx.x); idx < count * Traits::kVTile;
       idx += Traits::kThreads) {
    const int m = idx / Traits::kVTile, j = at.col0 + idx % Traits::kVTile;
    const bool inside = j < p.V;
    const std::size_t n = inside ? token_offset(p.T, p.H, p.V, at.b, t_begin + m, at.h, j) : 0;
    tile.v[idx] = inside ? read_input<In>(p.v, n) : 0.0f;
    tile.w[idx] = inside ? read_input<In>(p.w, n) : 0.0f;
    if (with_do) tile.d_o[idx] = inside ? p.d_o[n] : 0.0f;
  }
  __syncthreads();
}

// The sum over all K rows of the thread's column, given each thread's sum
// over its own rows: the warps' partials added in order 0..kRowGroups-1 by
// every thread of the column alike. Holds a barrier: call it from every
// thread. `partials` must not be written again before every thread has read
// it, i.e. not before the next barrier (callers alternate two buffers by the
// parity of t, or have a barrier in between).
__device__ float column_sum(float own_rows, float* partials, const ThreadPlace& at) {
  partials[at.row_group * Traits::kVTile + at.lane] = own_rows;
  __syncthreads();
  float sum = 0.0f;
  for (int r = 0; r < Traits::kRowGroups; ++r) sum += partials[r * Traits::kVTile + at.lane];
  return sum;
}

// One token of the forward on the thread's elements of column j (m: the
// token within `tile`); S_{t-1} in, S_t out; returns u_j. Holds a barrier.
__device__ float forward_step(OwnedRows& state, const TokenTile& tile, int m, int K,
                              float* partials, const ThreadPlace& at) {
  const float* k = tile.k + m * K;
  const float* decay = tile.decay + m * K;
  const float* bk = tile.bk + m * K;
  // P = Diag(a) S_{t-1};  e = P^T bk
  float e_own = 0.0f;
#pragma unroll
  for (int s = 0; s < Traits::kRowsPerThread; ++s) {
    const int i = owned_row(at.row_group, s);
    if (i < K) {
      state[s] = decay[i] * state[s];
      e_own += bk[i] * state[s];
    }
  }
  const float e = column_sum(e_own, partials, at);
  // u = w*v - e
  const int c = m * Traits::kVTile + at.lane;
  const float u = tile.w[c] * tile.v[c] - e;
  // S_t = P + k u^T
#pragma unroll
  for (int s = 0; s < Traits::kRowsPerThread; ++s) {
    const int i = owned_row(at.row_group, s);
    if (i < K) state[s] += k[i] * u;
  }
  return u;
}

// Offset of checkpoint c (the state before token c * kSegment) of (b, h) in
// the checkpoint scratch [B*H][num_segments][K][V].
__device__ std::size_t checkpoint_offset(const DeviceProblem& p, const ThreadPlace& at,
                                         int num_segments, int c) {
  return ((static_cast<std::size_t>(at.b) * p.H + at.h) * num_segments + c) *
         static_cast<std::size_t>(p.K) * p.V;
}

// recurrent.fwd: o and ht; with `checkpoints` (the backward), also the state
// before every kSegment-th token. In: the element type of q k v g b w.
template <class In>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kMinBlocksPerSM)
    recurrent_fwd_kernel(const DeviceProblem p, float* checkpoints) {
  extern __shared__ float shared[];
  const ThreadPlace at = thread_place(p);
  float* cursor = shared;
  const TokenTile tile = carve_token_tile(cursor, p.K);
  float* e_partials = cursor;  // [2][kColumnPartials], by the parity of t
  float* o_partials = cursor + 2 * Traits::kColumnPartials;
  const int num_segments = ceil_div(p.T, Traits::kSegment);

  // S_0 = h0 (zero under the h0_ignored fault)
  OwnedRows state;
  load_state(state, p.h0 + state_offset(p.H, p.K, p.V, at.b, at.h, 0, 0), p.K, p.V, at);
  if (DP_FAULT(p.faults, h0_ignored))
    for (float& x : state) x = 0.0f;

  for (int t_begin = 0; t_begin < p.T; t_begin += Traits::kTokenTile) {
    const int count = min(Traits::kTokenTile, p.T - t_begin);
    load_token_tile<In>(p, at, t_begin, count, /*with_q=*/true, /*with_do=*/false, tile);
    for (int m = 0; m < count; ++m) {
      const int t = t_begin + m;
      if (checkpoints != nullptr && t % Traits::kSegment == 0)
        store_state(state,
                    checkpoints + checkpoint_offset(p, at, num_segments, t / Traits::kSegment), p.K,
                    p.V, at);
      forward_step(state, tile, m, p.K, e_partials + (t & 1) * Traits::kColumnPartials, at);
      // o_t = scale S_t^T q_t
      const float* q = tile.q + m * p.K;
      float o_own = 0.0f;
#pragma unroll
      for (int s = 0; s < Traits::kRowsPerThread; ++s) {
        const int i = owned_row(at.row_group, s);
        if (i < p.K) o_own += state[s] * q[i];
      }
      // o_partials is written again only after the next token's e barrier
      const float o = column_sum(o_own, o_partials, at);
      if (at.row_group == 0 && at.column_valid)
        p.o[token_offset(p.T, p.H, p.V, at.b, t, at.h, at.j)] = o * p.scale;
    }
  }
  // ht = S_T
  store_state(state, p.ht + state_offset(p.H, p.K, p.V, at.b, at.h, 0, 0), p.K, p.V, at);
}

// recurrent.bwd: the reverse sweep of one (b, h) and V tile, a 64-token
// segment at a time, last segment first. Per segment: recompute S_{t-1} of
// every token from the segment's checkpoint into this block's slice of
// `segment_scratch` ([kSegment][K][kVTile]; each thread reads back only what
// it wrote) and u into shared memory, then sweep the segment backwards.
// Writes the tile's row sums to row_sum_plane(). In: the element type of q k v
// g b w.
template <class In>
__global__ void __launch_bounds__(Traits::kThreads, Traits::kMinBlocksPerSM)
    recurrent_bwd_kernel(const DeviceProblem p, const float* checkpoints, float* segment_scratch,
                         float* row_sums) {
  extern __shared__ float shared[];
  const ThreadPlace at = thread_place(p);
  float* cursor = shared;
  const TokenTile tile = carve_token_tile(cursor, p.K);
  float* partials = cursor;  // [2][kColumnPartials], by the parity of t
  cursor += 2 * Traits::kColumnPartials;
  float* u_segment = cursor;  // [kSegment][kVTile]: u of each token of the segment
  cursor += Traits::kSegment * Traits::kVTile;
  float* stage = cursor;  // [kNumRowSums][K][kStageStride]: products to sum over columns
  const int num_segments = ceil_div(p.T, Traits::kSegment);
  const std::size_t block = (static_cast<std::size_t>(at.b) * p.H + at.h) * gridDim.x + at.vtile;
  float* segment_states =
      segment_scratch + block * Traits::kSegment * static_cast<std::size_t>(p.K) * Traits::kVTile;
  auto previous_at = [&](int n, int i) -> float& {  // S_{t-1} of segment token n, row i
    return segment_states[(static_cast<std::size_t>(n) * p.K + i) * Traits::kVTile + at.lane];
  };

  // dS = dL/dS_T = dht
  OwnedRows dstate;
  if (DP_FAULT(p.faults, dht_ignored)) {
    for (float& x : dstate) x = 0.0f;
  } else {
    load_state(dstate, p.dht + state_offset(p.H, p.K, p.V, at.b, at.h, 0, 0), p.K, p.V, at);
  }

  for (int segment = num_segments - 1; segment >= 0; --segment) {
    const int t0 = segment * Traits::kSegment;
    const int t1 = min(p.T, t0 + Traits::kSegment);

    // Recompute the segment from its checkpoint, exactly as the forward did:
    // keep S_{t-1} (the `previous` of the sweep) and u of every token.
    OwnedRows state;
    load_state(state, checkpoints + checkpoint_offset(p, at, num_segments, segment), p.K, p.V, at);
    for (int t_begin = t0; t_begin < t1; t_begin += Traits::kTokenTile) {
      const int count = min(Traits::kTokenTile, t1 - t_begin);
      load_token_tile<In>(p, at, t_begin, count, /*with_q=*/false, /*with_do=*/false, tile);
      for (int m = 0; m < count; ++m) {
        const int t = t_begin + m, n = t - t0;
#pragma unroll
        for (int s = 0; s < Traits::kRowsPerThread; ++s) {
          const int i = owned_row(at.row_group, s);
          if (i < p.K) previous_at(n, i) = state[s];
        }
        const float u =
            forward_step(state, tile, m, p.K, partials + (t & 1) * Traits::kColumnPartials, at);
        if (at.row_group == 0) u_segment[n * Traits::kVTile + at.lane] = u;
      }
    }

    // Sweep the segment backwards, last token tile first.
    const int last_tile_begin = t0 + (t1 - 1 - t0) / Traits::kTokenTile * Traits::kTokenTile;
    for (int t_begin = last_tile_begin; t_begin >= t0; t_begin -= Traits::kTokenTile) {
      const int count = min(Traits::kTokenTile, t1 - t_begin);
      load_token_tile<In>(p, at, t_begin, count, /*with_q=*/true, /*with_do=*/true, tile);
      for (int m = count - 1; m >= 0; --m) {
        const int t = t_begin + m, n = t - t0;
        const float* q = tile.q + m * p.K;
        const float* k = tile.k + m * p.K;
        const float* decay = tile.decay + m * p.K;
        const float* bk = tile.bk + m * p.K;
        const int c = m * Traits::kVTile + at.lane;
        const float v = tile.v[c], w = tile.w[c], d_o = tile.d_o[c];
        const float u = u_segment[n * Traits::kVTile + at.lane];
        OwnedRows previous;  // S_{t-1}, loads issued before the barrier below
#pragma unroll
        for (int s = 0; s < Traits::kRowsPerThread; ++s) {
          const int i = owned_row(at.row_group, s);
          previous[s] = i < p.K ? previous_at(n, i) : 0.0f;
        }

        // o_t = scale S_t^T q_t:  dS += scale q_t do_t^T
        // S_t = P + k u^T:        du = dS^T k_t
        float du_own = 0.0f;
#pragma unroll
        for (int s = 0; s < Traits::kRowsPerThread; ++s) {
          const int i = owned_row(at.row_group, s);
          if (i < p.K) {
            dstate[s] += (q[i] * d_o) * p.scale;
            du_own += dstate[s] * k[i];
          }
        }
        // the stage barrier below sits between this read and the next write
        const float du = column_sum(du_own, partials + (t & 1) * Traits::kColumnPartials, at);

        // u = w*v - e:  dw = du * v,  dv = du * w
        if (at.row_group == 0 && at.column_valid) {
          const std::size_t nv = token_offset(p.T, p.H, p.V, at.b, t, at.h, at.j);
          p.dw[nv] = du * v;
          p.dv[nv] = du * w;
        }

        // Stage the products whose sums over the columns give dq dk db dg:
        //   dq = scale S_t do;  dk = dS u + dbk * b;  dbk = -P du;  dg = a rowsum(dP .* S_{t-1})
        // with dP = dS - bk du^T, then dS_{t-1} = Diag(a) dP.
        // (The previous token's row sums were read before the du barrier.)
#pragma unroll
        for (int s = 0; s < Traits::kRowsPerThread; ++s) {
          const int i = owned_row(at.row_group, s);
          if (i < p.K) {
            const float decayed = decay[i] * previous[s];  // P
            const float current = decayed + k[i] * u;      // S_t
            const float dpre = dstate[s] - bk[i] * du;     // dP
            float* row = stage + i * Traits::kStageStride + at.lane;
            const int sum_plane = p.K * Traits::kStageStride;
            row[kCurrentDo * sum_plane] = current * d_o;
            row[kDstateU * sum_plane] = dstate[s] * u;
            row[kDecayedDu * sum_plane] = decayed * du;
            row[kDpreState * sum_plane] = dpre * previous[s];
            dstate[s] = decay[i] * dpre;  // dS_{t-1} = Diag(a) dP
          }
        }
        __syncthreads();

        // A thread per (row sum, row): the tile's columns in order 0..cols-1.
        for (int idx = static_cast<int>(threadIdx.x); idx < kNumRowSums * p.K;
             idx += Traits::kThreads) {
          const int sum_id = idx / p.K, i = idx % p.K;
          const float* row = stage + (sum_id * p.K + i) * Traits::kStageStride;
          float sum = 0.0f;
          for (int col = 0; col < at.cols; ++col) sum += row[col];
          row_sum_plane(p, row_sums, at.vtile,
                        sum_id)[token_offset(p.T, p.H, p.K, at.b, t, at.h, i)] = sum;
        }
      }
    }
  }

  // dh0 = dS_0
  if (!DP_FAULT(p.faults, dh0_not_written))
    store_state(dstate, p.dh0 + state_offset(p.H, p.K, p.V, at.b, at.h, 0, 0), p.K, p.V, at);
}

// recurrent.bwd: dq dk db dg, one element [b,t,h,i] per thread, from the row
// sums of the V tiles added in order 0, 1, ..., num_vtiles - 1 (tile 0's read
// from the gradient buffers themselves, row_sum_plane()). In: the element type
// of q k v g b w.
template <class In>
__global__ void recurrent_reduce_kernel(const DeviceProblem p, const float* row_sums,
                                        int num_vtiles) {
  const std::size_t plane = static_cast<std::size_t>(p.B) * p.T * p.H * p.K;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t n = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; n < plane;
       n += stride) {
    // tile 0, then 1, 2, ... (this thread alone reads and then writes element n)
    float sums[kNumRowSums] = {p.dq[n], p.dk[n], p.db[n], p.dg[n]};
    static_assert(kCurrentDo == 0 && kDstateU == 1 && kDecayedDu == 2 && kDpreState == 3,
                  "sums[] above lists tile 0's planes in RowSum order");
    for (int vtile = 1; vtile < num_vtiles; ++vtile)
#pragma unroll
      for (int sum_id = 0; sum_id < kNumRowSums; ++sum_id)
        sums[sum_id] +=
            row_sums[(static_cast<std::size_t>(vtile - 1) * kNumRowSums + sum_id) * plane + n];
    // o_t = scale S_t^T q_t:  dq = scale S_t do
    p.dq[n] = sums[kCurrentDo] * p.scale;
    // e = P^T bk, bk = b * k:  dbk = -P du;  db = dbk * k;  dk = dS u + dbk * b
    const float dbk = -sums[kDecayedDu];
    p.db[n] = dbk * read_input<In>(p.k, n);
    p.dk[n] = sums[kDstateU] + dbk * read_input<In>(p.b, n);
    // P = Diag(a) S_{t-1}:  dg = a * rowsum(dP .* S_{t-1})
    const float dg = expf(read_input<In>(p.g, n)) * sums[kDpreState];
    p.dg[n] = DP_FAULT(p.faults, dg_sign_flipped) ? -dg : dg;
  }
}

// Allows `bytes` of dynamic shared memory (needed above 48 KB) and prefers
// the largest shared-memory carveout, so that kMinBlocksPerSM blocks fit.
template <class Kernel>
void allow_shared_memory(Kernel kernel, std::size_t bytes, const char* what,
                         const DeviceProblem& p) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)),
             what, p);
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                  cudaSharedmemCarveoutMaxShared),
             what, p);
}

// The host side of run_recurrent for inputs of element type In.
template <class In>
void run_recurrent_as(const DeviceProblem& p, bool backward, LaunchLog& log) {
  const int num_vtiles = ceil_div(p.V, Traits::kVTile);
  const int num_segments = ceil_div(p.T, Traits::kSegment);
  const std::size_t heads = static_cast<std::size_t>(p.B) * p.H;
  const std::size_t K = p.K, V = p.V;
  const dim3 grid(num_vtiles, p.H, p.B);
  const dim3 block(Traits::kThreads);

  // The state before every kSegment-th token, [B*H][num_segments][K][V]; only
  // the backward reads it.
  DeviceBuffer checkpoints(backward ? heads * num_segments * K * V : 0,
                           "recurrent_fwd_kernel (checkpoint scratch)", p);
  const std::size_t fwd_shared = forward_shared_floats(p.K) * sizeof(float);
  allow_shared_memory(recurrent_fwd_kernel<In>, fwd_shared, "recurrent_fwd_kernel", p);
  recurrent_fwd_kernel<In><<<grid, block, fwd_shared>>>(p, checkpoints.get());
  CUDA_CHECK_LAUNCH("recurrent_fwd_kernel", p);
  log.note("recurrent.fwd", "recurrent_fwd_kernel");
  if (!backward) return;

  // S_{t-1} of every token of the segment being swept, per block
  // [B*H*num_vtiles][kSegment][K][kVTile]; the row sums of tiles 1, 2, ...
  // [num_vtiles - 1][kNumRowSums][B,T,H,K] (tile 0's go to dq dk db dg).
  DeviceBuffer segment_states(heads * num_vtiles * Traits::kSegment * K * Traits::kVTile,
                              "recurrent_bwd_kernel (segment scratch)", p);
  const std::size_t plane = heads * p.T * K;
  DeviceBuffer row_sums((num_vtiles - 1) * kNumRowSums * plane,
                        "recurrent_bwd_kernel (row-sum scratch)", p);
  const std::size_t bwd_shared = backward_shared_floats(p.K) * sizeof(float);
  allow_shared_memory(recurrent_bwd_kernel<In>, bwd_shared, "recurrent_bwd_kernel", p);
  recurrent_bwd_kernel<In>
      <<<grid, block, bwd_shared>>>(p, checkpoints.get(), segment_states.get(), row_sums.get());
  CUDA_CHECK_LAUNCH("recurrent_bwd_kernel", p);
  log.note("recurrent.bwd", "recurrent_bwd_kernel");

  const std::size_t reduce_blocks = std::min<std::size_t>(
      (plane + Traits::kReduceThreads - 1) / Traits::kReduceThreads, Traits::kReduceMaxBlocks);
  recurrent_reduce_kernel<In><<<static_cast<unsigned>(reduce_blocks), Traits::kReduceThreads>>>(
      p, row_sums.get(), num_vtiles);
  CUDA_CHECK_LAUNCH("recurrent_reduce_kernel", p);
  log.note("recurrent.bwd", "recurrent_reduce_kernel");
}

}  // namespace

void run_recurrent(const DeviceProblem& p, bool backward, LaunchLog& log) {
  if (!Traits::supports(p.B, p.T, p.H, p.K, p.V))
    throw std::runtime_error("cuda-recurrent supports T >= 1, K and V in 1.." +
                             std::to_string(Traits::kMaxK) + " and B, H in 1.." +
                             std::to_string(Traits::kMaxBH) + "; the problem is " + describe(p));
  switch (p.input) {
    case InputType::f32:
      return run_recurrent_as<float>(p, backward, log);
    case InputType::bf16:
      return run_recurrent_as<__nv_bfloat16>(p, backward, log);
  }
  throw std::runtime_error("cuda-recurrent: unknown input type (" + describe(p) + ")");
}

}  // namespace deltaproof::kernels::cuda

// kernels/cuda/traits.cuh — the CUDA kernels' configuration, apart from their
// algorithms (as FlashAttention's kernel_traits.h): threads, tiles, the largest
// supported shape, each kernel's shared memory derived from them, and the
// constraints between them as static_asserts. The host asks these traits
// whether a shape is supported (ChunkConfig::supports, RecurrentTraits::
// supports) instead of restating the limits; the chunk sizes themselves are
// core's one fact (core/op.hpp kChunkSizes), which the tiles are checked
// against here.
#pragma once

#include <cstddef>
#include <string>

#include "core/op.hpp"

namespace deltaproof::kernels::cuda {

// Floats per quad: the four consecutive rows one thread of a product sums
// (kernels/cuda/tile.cuh), one 16-byte load.
inline constexpr int kQuad = 4;
// Threads per warp.
inline constexpr int kWarp = 32;
// The H200's (sm_90) dynamic shared memory per block, opted in.
inline constexpr std::size_t kMaxSharedBytes = 227 * 1024;

// n rounded up to a multiple of 4: the row length of the global buffers read
// by quads along their rows (a row of K channels is K4 long, zeros past K).
__host__ __device__ constexpr int round_up4(int n) { return (n + 3) / 4 * 4; }
// n or n + 1, whichever is odd: the row stride of a shared buffer whose columns
// are read one row per thread, without bank conflicts.
__host__ __device__ constexpr int odd_stride(int n) { return n | 1; }
// The row stride of the shared transposes read by quads (a chunk's C rows per
// row): a multiple of 4 for the 16-byte quads, C + 4 so that the quads stored
// by consecutive threads fall in different banks.
__host__ __device__ constexpr int quad_stride(int C) { return C + 4; }

// Dynamic shared memory of each cuda-chunk kernel, in floats.
__host__ __device__ constexpr int intra_shared_floats(int C, int K) {
  return 2 * C * odd_stride(K) + C * C + C * quad_stride(C);  // G, keys; A, TinvT
}
__host__ __device__ constexpr int inter_shared_floats(int C, int K, int v_tile) {
  return K * odd_stride(v_tile) + 2 * C * v_tile;  // S; U, Qg S0
}
__host__ __device__ constexpr int bk2_shared_floats(int C, int K, int v_tile) {
  return K * odd_stride(v_tile) + C * v_tile;  // dS; dU
}
__host__ __device__ constexpr int bk1_shared_floats(int C, int K, int V) {
  // dO^T, dX^T, dY^T; dM, dA; dQg (then dG), dKdec; d_decay_end
  return (2 * V + K) * quad_stride(C) + 2 * C * C + 2 * C * K + K;
}
constexpr std::size_t shared_bytes(int floats) {
  return static_cast<std::size_t>(floats) * sizeof(float);
}

// cuda-chunk (kernels/cuda/chunk.cu): the launch configuration.
struct ChunkConfig {
  // fwd.intra, fwd.inter and bwd.bk2: blocks of kThreads, registers capped so
  // that kBlocksPerSM of them fit an SM (fwd.inter's and bwd.bk2's 256 blocks at
  // B*H = 64 then run in one wave on 132 SMs)
  static constexpr int kThreads = 256;
  static constexpr int kBlocksPerSM = 2;
  static constexpr int kBk1Threads = 512;  // bwd.bk1: its shared memory fits one block per SM
  static constexpr int kVTile = kWarp;     // state columns per fwd.inter / bwd.bk2 block
  static constexpr int kMaxDim = 128;      // K and V at most
  static constexpr int kMaxChunk = kMaxChunkSize;  // C at most
  static constexpr int kMaxGridY = 65535;          // B*H at most (grid y)

  // The most shared memory each kernel takes, over every supported shape (the
  // value each kernel is allowed once, whatever the shape: run_chunk). fwd.inter
  // takes a tile of all of V under the state_transposed fault.
  static constexpr int kIntraSharedFloats = intra_shared_floats(kMaxChunk, kMaxDim);
  static constexpr int kInterSharedFloats = inter_shared_floats(kMaxChunk, kMaxDim, kMaxDim);
  static constexpr int kBk2SharedFloats = bk2_shared_floats(kMaxChunk, kMaxDim, kVTile);
  static constexpr int kBk1SharedFloats = bk1_shared_floats(kMaxChunk, kMaxDim, kMaxDim);

  // Why cuda-chunk cannot run a K x V state at this chunk size, as the words of
  // a sentence, or "" when it can.
  static std::string supports(int K, int V, int chunk) {
    if (K < 1 || K > kMaxDim || V < 1 || V > kMaxDim)
      return "K and V must be from 1 to " + std::to_string(kMaxDim);
    if (!is_supported_chunk(chunk)) return "the chunk size must be " + chunk_sizes_text();
    return "";
  }
};

constexpr bool chunk_sizes_fill_quads() {
  for (int size : kChunkSizes)
    if (size % kQuad != 0 || size > ChunkConfig::kMaxChunk) return false;
  return true;
}
static_assert(chunk_sizes_fill_quads(),
              "every chunk size is whole quads of rows (for_quads over C / 4), at most kMaxChunk");
static_assert(ChunkConfig::kMaxDim % kQuad == 0, "K4 of the largest K is K");
static_assert(ChunkConfig::kThreads % kWarp == 0 && ChunkConfig::kBk1Threads % kWarp == 0,
              "blocks are whole warps");
static_assert(ChunkConfig::kVTile == kWarp,
              "a fwd.inter / bwd.bk2 tile is a warp wide: a warp shares its quad of rows");
static_assert(shared_bytes(ChunkConfig::kIntraSharedFloats) <= kMaxSharedBytes &&
                  shared_bytes(ChunkConfig::kInterSharedFloats) <= kMaxSharedBytes &&
                  shared_bytes(ChunkConfig::kBk2SharedFloats) <= kMaxSharedBytes &&
                  shared_bytes(ChunkConfig::kBk1SharedFloats) <= kMaxSharedBytes,
              "the largest supported shape fits the H200's 227 KiB of shared memory per block");

// cuda-recurrent (kernels/cuda/recurrent.cu): the kernels' configuration.
struct RecurrentTraits {
  static constexpr int kMaxK = 128;
  static constexpr int kMaxV = 128;
  static constexpr int kMaxBH = 65535;                         // B and H at most (grid z, y)
  static constexpr int kVTile = kWarp;                         // columns per block: one per lane
  static constexpr int kRowGroups = 8;                         // warps; warp r owns rows r + 8 s
  static constexpr int kThreads = kVTile * kRowGroups;         // 256
  static constexpr int kRowsPerThread = kMaxK / kRowGroups;    // 16 registers of S (or dS)
  static constexpr int kMinBlocksPerSM = 2;                    // 256 blocks in one wave at H16 B4
  static constexpr int kSegment = 64;                          // tokens between checkpoints
  static constexpr int kTokenTile = 8;                         // tokens staged at once
  static constexpr int kColumnPartials = kRowGroups * kVTile;  // one warp partial per column
  static constexpr int kStageStride = kVTile + 1;              // padded: no bank conflicts
  static constexpr int kReduceThreads = 256;
  static constexpr int kReduceMaxBlocks = 1 << 16;

  // Whether cuda-recurrent runs this shape.
  static constexpr bool supports(int B, int T, int H, int K, int V) {
    return B >= 1 && H >= 1 && T >= 1 && K >= 1 && K <= kMaxK && V >= 1 && V <= kMaxV &&
           H <= kMaxBH && B <= kMaxBH;
  }
};
static_assert(RecurrentTraits::kVTile == kWarp, "a V tile is one warp wide: lane = column");
static_assert(RecurrentTraits::kRowsPerThread * RecurrentTraits::kRowGroups ==
                  RecurrentTraits::kMaxK,
              "rows cover K");
static_assert(RecurrentTraits::kSegment % RecurrentTraits::kTokenTile == 0,
              "a token tile never straddles segments");
static_assert(RecurrentTraits::kSegment % 2 == 0,
              "partial-sum buffers alternate by the parity of t");
static_assert(RecurrentTraits::kThreads % kWarp == 0 &&
                  RecurrentTraits::kReduceThreads % kWarp == 0,
              "blocks are whole warps");

}  // namespace deltaproof::kernels::cuda

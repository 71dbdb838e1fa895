// kernels/cuda/tc.hpp — cuda-tc, the tensor-core backend (kernels/cuda/tc.cu):
// its configuration and limits, its scratch, and its entry points: run_tc for
// the backend interface (allocates, launches, synchronises after each launch)
// and launch_tc_forward for a caller that owns the scratch and the stream (a
// benchmark: no allocation, no synchronisation).
// Plain C++: included by .cu files and by host code alike.
#pragma once

#include <cstddef>
#include <string>

#include "kernels/cuda/device_problem.hpp"

struct CUstream_st;    // cudaStream_t's target
struct __nv_bfloat16;  // cuda_bf16.h's

namespace deltaproof::kernels::cuda {

struct TcConfig {
  static constexpr int kChunk = 64;           // the chunk size it runs
  static constexpr int kMaxDim = 128;         // K and V at most (padded to 64 or 128)
  static constexpr int kIntraThreads = 256;   // fwd.intra: 8 warps
  static constexpr int kStateThreads = 128;   // fwd.inter: 4 warps, each a quarter of K
  static constexpr int kOutputThreads = 256;  // fwd.output: 8 warps
  static constexpr int kVTile = 32;           // state columns per fwd.inter block
  static constexpr int kMaxHeads = 65535;     // B*H at most (grid y)
  // Why cuda-tc cannot run B x H heads of a K x V state at this chunk size, as
  // the words of a sentence, or "" when it can.
  static std::string supports(int B, int H, int K, int V, int chunk);
};

// The scratch the stages hand each other, one slab per (b, h, chunk), in
// bf16 but decay_end (declared above, so that host code needs no CUDA header). KP and VP are K and
// V padded to 64 or 128.
struct TcScratch {
  using bf16 = __nv_bfloat16;
  bf16* Wt = nullptr;          // [64][KP]
  bf16* Ut = nullptr;          // [64][VP]
  bf16* KdecT = nullptr;       // [KP][64]
  bf16* Qg = nullptr;          // [64][KP], scale Q*exp G
  bf16* M = nullptr;           // [64][64], scale included
  bf16* UT = nullptr;          // [VP][64]
  bf16* S0T = nullptr;         // [VP][KP], the chunk's start state as the products read it
  float* decay_end = nullptr;  // [KP], exp(G_C)
};

// Bytes of scratch a problem needs; carve_tc_scratch lays the buffers out in
// an allocation of that many bytes (256-byte aligned).
std::size_t tc_scratch_bytes(const DeviceProblem& p);
TcScratch carve_tc_scratch(const DeviceProblem& p, void* base);

// The forward's stages, as bits of a mask (a benchmark times one alone, on
// scratch an earlier whole run filled).
enum TcStage : unsigned { kTcIntra = 1, kTcState = 2, kTcOutput = 4, kTcForward = 7 };

// The forward stages fwd.intra, fwd.inter and fwd.output (those in `stages`)
// on `stream`. Checks each launch; with `synchronous`, waits for each kernel
// and checks it too. Notes each launch in `log` when given.
void launch_tc_forward(const DeviceProblem& p, const TcScratch& scratch, CUstream_st* stream,
                       LaunchLog* log, bool synchronous, unsigned stages = kTcForward);

// The backend's entry: allocates the scratch, runs the forward synchronously.
// The backward is not written yet: throws std::runtime_error when asked.
void run_tc(const DeviceProblem& p, bool backward, LaunchLog& log);

}  // namespace deltaproof::kernels::cuda

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
  static constexpr int kVTile = 32;           // state columns per fwd.inter and bwd.bk2 block,
  static constexpr int kNarrowVTile = 16;     // or these where kVTile's tiles leave SMs idle
  static constexpr int kMaxHeads = 65535;     // B*H at most (grid y)
  // A 16-row diagonal block of A and M goes through its first row on the tensor
  // cores where no channel's cumulative decay G spans more than this within the
  // block (e^60 ~ 1e26: bf16, to ~3e38, holds both factors), else pair by pair.
  static constexpr float kSpanLimit = 60.0f;
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
  bf16* Tinv = nullptr;        // [64][64], (I + A)^-1
  float* decay_end = nullptr;  // [KP], exp(G_C)
  // The backward's (null unless carved for a backward run):
  bf16* dS_endT = nullptr;       // [VP][KP], the gradient wrt the chunk's end state (bwd.bk2)
  bf16* dU = nullptr;            // [64][VP] (bwd.bk2)
  bf16* dM = nullptr;            // [64][64], scale dO U^T, lower
  bf16* dA = nullptr;            // [64][64], strictly lower
  float* dQg = nullptr;          // [64][KP], scale dO S0^T
  float* dY = nullptr;           // [64][KP], the gradient wrt B*K*exp G
  float* dKdec = nullptr;        // [64][KP]
  float* d_decay_end = nullptr;  // [KP]
};

// Bytes of scratch a problem needs; carve_tc_scratch lays the buffers out in
// an allocation of that many bytes (256-byte aligned).
// With `backward`, the backward's buffers too.
std::size_t tc_scratch_bytes(const DeviceProblem& p, bool backward = false);
TcScratch carve_tc_scratch(const DeviceProblem& p, void* base, bool backward = false);

// The stages, as bits of a mask (a benchmark times one alone, on scratch an
// earlier whole run filled; a stage test runs one alone, kernels/cuda/tc_stages.hpp).
// bwd.bk1 is its two kernels, tc_bwd_products then tc_bwd_tokens, each a bit
// of its own so that a benchmark can time one alone.
enum TcStage : unsigned {
  kTcIntra = 1,
  kTcState = 2,
  kTcOutput = 4,
  kTcForward = 7,
  kTcBk2 = 8,
  kTcBk1Products = 16,
  kTcBk1Tokens = 32,
  kTcBk1 = 48,
  kTcBackward = 56
};

// The forward stages fwd.intra, fwd.inter and fwd.output (those in `stages`)
// on `stream`. Checks each launch; with `synchronous`, waits for each kernel
// and checks it too. Notes each launch in `log` when given.
void launch_tc_forward(const DeviceProblem& p, const TcScratch& scratch, CUstream_st* stream,
                       LaunchLog* log, bool synchronous, unsigned stages = kTcForward);

// The backward stages bwd.bk2 (with the glue: dS_end handed back, dh0) and
// bwd.bk1 (those in `stages`) on scratch the forward filled (carved with
// `backward`), on `stream`; checked as launch_tc_forward.
void launch_tc_backward(const DeviceProblem& p, const TcScratch& scratch, CUstream_st* stream,
                        LaunchLog* log, bool synchronous, unsigned stages = kTcBackward);

// The backend's entry: allocates the scratch, runs the forward (and the
// backward) synchronously.
void run_tc(const DeviceProblem& p, bool backward, LaunchLog& log);

}  // namespace deltaproof::kernels::cuda

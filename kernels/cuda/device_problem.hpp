// kernels/cuda/device_problem.hpp — what the CUDA kernels are handed: device
// pointers in FLA layout, every op already in gdn2 form (kda's beta broadcast
// into b [B,T,H,K] and w [B,T,H,V], or for cuda-tc handed as it is in beta;
// gdn's scalar g broadcast over K), f32 inputs, and the faults to inject.
// backends.cu expands the inputs and folds the gradients back (dbeta = sum db
// + sum dw; gdn's dg = sum over K).
// Plain C++: included by .cu files and by host code alike.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/faults.hpp"
#include "kernels/round_bits.hpp"

namespace deltaproof::kernels::cuda {

// The fault points switched on, one bit each (kernels::fault_bit; the list
// is kernels/faults.hpp). Set only in a falsify build; a normal build
// compiles every check to false (DP_FAULT in common.cuh).
struct CudaFaults {
  unsigned long long mask = 0;
};

// The element type of the inputs q k v g b w: f32, or bf16 (raw 16-bit
// patterns, __nv_bfloat16 in device code), widened to f32 as they are read;
// every accumulation is f32. h0, the cotangents and every output are f32.
enum class InputType { f32, bf16 };

// `values` as bf16 bit patterns, two to a float slot of `packed` (so a float
// buffer carries them). Each value must be a bf16 value already (its low 16
// bits zero): returns the index of the first that is not, or values.size().
inline std::size_t pack_bf16(const std::vector<float>& values, std::vector<float>& packed) {
  packed.assign((values.size() + 1) / 2, 0.0f);
  auto* halves = reinterpret_cast<std::uint16_t*>(packed.data());
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    if (bits & 0xFFFFu) return i;
    halves[i] = static_cast<std::uint16_t>(bits >> 16);
  }
  return values.size();
}

// A precision contract (kernels/precision.hpp) as the chunked kernels take it:
// the bits dropped from each matrix product's operands (0: none; 13: TF32; 16:
// bf16) and from the intermediates stored between stages (0 or 16), by a
// deterministic rule (nearest-even or toward zero). The outputs' rounding is
// the host's (kernels::round_outputs). All zero: f32, bit for bit as without.
struct DeviceRounding {
  int operand_bits = 0;
  int intermediate_bits = 0;
  Rounding rule = Rounding::nearest_even;
};

struct DeviceProblem {
  int B = 1, T = 1, H = 1, K = 1, V = 1;
  int chunk = 64;
  float scale = 1.0f;
  InputType input = InputType::f32;
  // inputs, gdn2 form: q k g b [B,T,H,K]; v w [B,T,H,V], each of type `input`
  const void *q = nullptr, *k = nullptr, *v = nullptr, *g = nullptr, *b = nullptr, *w = nullptr;
  // Or, for kda and gdn (cuda-tc only), beta [B,T,H] of type `input`: when set, b
  // and w are beta broadcast over their channels, read from here (b and w are
  // not read and may be null), never stored at their full width.
  const void* beta = nullptr;
  const float* h0 = nullptr;  // [B,H,K,V]
  // Packed sequences (FLA's varlen; cuda-tc only): when set, B + 1 ints in
  // device memory, and sequence b is the rows [cu_seqlens[b], cu_seqlens[b+1])
  // of token tensors [1, cu_seqlens[B], H, width]; T is then the longest
  // sequence's length (it sizes the chunk grid and the scratch) and the states
  // h0, ht, dht, dh0 stay [B,H,K,V], one per sequence.
  const int* cu_seqlens = nullptr;
  // cotangents (backward): do [B,T,H,V], dht [B,H,K,V]
  const float *d_o = nullptr, *dht = nullptr;
  // outputs: o [B,T,H,V], ht [B,H,K,V]; gradients in gdn2 form, same shapes
  // as their inputs
  float *o = nullptr, *ht = nullptr;
  // or, when set (cuda-tc only), o in bf16 here instead of in o: bit patterns,
  // each o's f32 value rounded to nearest even (FLA's output type; half the
  // bytes of fwd.output's largest write)
  std::uint16_t* o_bf16 = nullptr;
  float *dq = nullptr, *dk = nullptr, *dv = nullptr, *dg = nullptr, *db = nullptr, *dw = nullptr,
        *dh0 = nullptr;
  CudaFaults faults;
  DeviceRounding rounding;  // cuda-chunk only; cuda-recurrent refuses a contract
};

// The kernels launched, in order, each as "<stage>:<kernel name>", e.g.
// "fwd.intra:chunk_intra_kernel" (the backend turns them into the execution
// record: the stage and the kernel both count).
struct LaunchLog {
  std::vector<std::string> launches;
  void note(const char* stage, const char* kernel) {
    launches.push_back(std::string(stage) + ":" + kernel);
  }
};

// The fault switched on now (kernels::active_fault), as the kernels take it;
// none outside a falsify build.
CudaFaults active_faults();

// "B1 T40 H2 K8 V8 chunk16", for error messages.
inline std::string describe(const DeviceProblem& p) {
  return "B" + std::to_string(p.B) + " T" + std::to_string(p.T) + " H" + std::to_string(p.H) +
         " K" + std::to_string(p.K) + " V" + std::to_string(p.V) + " chunk" +
         std::to_string(p.chunk);
}

// cuda-chunk: stages fwd.intra, fwd.inter, then (backward) bwd.bk2, bwd.glue,
// bwd.bk1. Synchronous: returns when the results are in the output buffers.
// Throws std::runtime_error naming the kernel and the shape on any CUDA error.
void run_chunk(const DeviceProblem& p, bool backward, LaunchLog& log);

// cuda-recurrent: stages recurrent.fwd, then (backward) recurrent.bwd.
void run_recurrent(const DeviceProblem& p, bool backward, LaunchLog& log);

}  // namespace deltaproof::kernels::cuda

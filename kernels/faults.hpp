// kernels/faults.hpp — named fault injection points (DESIGN.md section 6):
// known bugs compiled in at the places they live. In a normal build
// DELTAPROOF_FAULT(id) is the constant false and the branch compiles to
// nothing; in a build with -DDELTAPROOF_FALSIFY=ON one fault at a time is
// switched on at run time by name (mutant schemata: one build, every fault).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace deltaproof::kernels {

enum class Fault {
  none,
  double_exp_chunk_decay,       // exp(exp(G_C)) in the chunk-end decay of S_end
  state_not_carried,            // each chunk starts from h0 instead of the carried state
  ds_not_handed_back,           // BK2: dS_end of chunk c is not chunk c+1's dS0 (zero)
  state_transposed,             // the chunk-start state S0 read as S0^T (K = V)
  b_dropped_from_a,             // A_ri built without b (or beta)
  cumulative_decay_off_by_one,  // G_r = sum_{i<r} g_i, exclusive instead of inclusive
  scratch_read_before_write,    // BK1's dU scratch accumulates over chunks (never zeroed)
  dg_sign_flipped,              // dg written with the wrong sign
  dh0_not_written,              // dh0 left unwritten
  dht_ignored,                  // the last chunk's dS_end taken as zero, not dht
  partial_chunk_reads_past_t,   // the partial last chunk reads chunk-size rows, past T
  // CUDA kernels only
  missing_barrier_bk2,               // a __syncthreads() left out of BK2 (a race)
  global_scratch_read_before_write,  // a global scratch buffer read before it is written
};

struct FaultInfo {
  Fault fault;
  std::string_view id;
  std::string_view what;
  bool cuda_only = false;  // the point exists in the CUDA kernels alone
};
const std::vector<FaultInfo>& fault_catalog();

#ifdef DELTAPROOF_FALSIFY
inline constexpr bool kFaultsCompiledIn = true;
// Switches one fault on (Fault::none for off); throws InputError on an unknown id.
void set_active_fault(std::string_view id);
Fault active_fault();
#define DELTAPROOF_FAULT(id) \
  (::deltaproof::kernels::active_fault() == ::deltaproof::kernels::Fault::id)
#else
inline constexpr bool kFaultsCompiledIn = false;
#define DELTAPROOF_FAULT(id) false
#endif

}  // namespace deltaproof::kernels

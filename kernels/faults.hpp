// kernels/faults.hpp — named fault injection points (DESIGN.md section 6):
// known bugs compiled in at the places they live, in the kernels and in the
// instrument (the gates) alike. In a normal build DELTAPROOF_FAULT(id) is the
// constant false and the branch compiles to nothing; in a build with
// -DDELTAPROOF_FALSIFY=ON one fault at a time is switched on at run time by
// name (mutant schemata: one build, every fault). Faults that change
// synchronisation are not switched at run time: each has its own build
// (DELTAPROOF_SYNC_FAULT; see sync_faults()). What each must turn red is in
// falsify/catalog.json.
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
  h0_ignored,                   // the initial state h0 taken as zero
  // faults only the coverage matrix of issue 11 shows (green on the 39
  // fixtures before it): each lives in one shape the old set lacked
  tail_decay_factorised,      // a long tail's decay as exp(G_r) * exp(-G_i): overflows past 88.7
  chunk_shift_lacks_32,       // chunk c starts at c << log2(chunk) from a table without 32
  v_read_with_k_stride,       // v's token stride taken from K (square heads hide it)
  ceil_div_off_by_one,        // chunks = (T + C - 2) / C: a one-row tail is dropped
  gate_batch_offset_dropped,  // g read at batch 0 for every sequence
  head_count_hardcoded_2,     // k read at head h % 2
  short_call_ignores_h0,      // a call shorter than a chunk starts from zero, not h0
  // CUDA kernels only
  global_scratch_read_before_write,  // a global scratch buffer holds stale garbage (0xFF)
  global_scratch_unwritten,          // a global scratch buffer is never written before it is read
  // the instrument (gates/)
  reference_other_seed,       // the reference is the oracle on inputs of another seed
  output_not_copied_back,     // one output (dv, else ht) never reaches the comparison
  per_entry_relative_metric,  // rel = max |a-b| / |b| entry by entry
  layout_swapped,             // the candidate's token tensors read as [B, H, T, ...]
};

enum class FaultClass { kernel, instrument };

struct FaultInfo {
  Fault fault;
  std::string_view id;
  std::string_view what;
  FaultClass cls = FaultClass::kernel;
  bool cuda_only = false;  // the point exists in the CUDA kernels alone
  // No number need show it (fresh device memory is often zero): a sanitizer
  // (initcheck) is the gate that must catch it, and campaigns that judge by
  // numbers alone do not require it killed.
  bool sanitizer_only = false;
  // A fault of issue 11's proof table: in cpu-chunk alone, living in a shape
  // only the coverage matrix holds (a long tail, chunk 32, K != V, B > 1, ...).
  // A campaign over other fixtures (the precision campaigns) leaves it out.
  bool coverage_proof = false;
};
// Every fault switchable at run time in the falsify build.
const std::vector<FaultInfo>& fault_catalog();

// Faults built separately (not switchable): configure with
// -DDELTAPROOF_SYNC_FAULT=<id> and the build holds that one fault, always on.
struct SyncFaultInfo {
  std::string_view id;
  std::string_view what;
};
const std::vector<SyncFaultInfo>& sync_faults();
// The sync fault this binary was built with, or "" (DELTAPROOF_SYNC_FAULT).
std::string_view built_sync_fault();

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

// kernels/faults.hpp — named fault injection points (DESIGN.md section 6):
// known bugs compiled in at the places they live, in the kernels here and in
// the instrument (gates/instrument_faults.hpp). In a normal build
// DELTAPROOF_FAULT(id) is the constant false and the branch compiles to
// nothing; in a build with -DDELTAPROOF_FALSIFY=ON one fault at a time is
// switched on at run time by name (mutant schemata: one build, every fault).
// Faults that change synchronisation are not switched at run time: each has
// its own build (DELTAPROOF_SYNC_FAULT; see sync_faults()). What each is and
// what it must turn red is in falsify/catalog.json.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace deltaproof::kernels {

// The fault list: each kernel fault once, as X(name, "id", reach). The enum,
// the ids, the catalog and the CUDA kernels' mask (device_problem.hpp) are all
// expanded from it; what each fault is and what it must turn red is written
// only in falsify/catalog.json. The reach says where the point lives:
//   shared          the CPU and the CUDA chunked kernels (and, where the
//                   recurrent backends have the point, those too)
//   coverage_proof  cpu-chunk alone, in a shape only issue 11's coverage
//                   matrix holds (a long tail, chunk 32, K != V, B > 1, ...):
//                   green on the 39 fixtures before it; precision campaigns
//                   leave it out
//   varlen          packed sequences and grouped value heads (issue 14): the
//                   CPU backends, the only ones that take such shapes yet;
//                   red only on the packed and grouped fixtures; precision
//                   campaigns leave it out
//   cuda            the CUDA kernels alone
//   cuda_sanitizer  the CUDA kernels alone, and no number need show it (fresh
//                   device memory is often zero): initcheck must catch it, and
//                   campaigns that judge by numbers do not require it killed
// The instrument's faults (the gates' own bugs) are listed in
// gates/instrument_faults.hpp.
#define DELTAPROOF_KERNEL_FAULTS(X)                                             \
  X(double_exp_chunk_decay, "double-exp-chunk-decay", shared)                   \
  X(state_not_carried, "state-not-carried", shared)                             \
  X(ds_not_handed_back, "ds-not-handed-back", shared)                           \
  X(state_transposed, "state-transposed", shared)                               \
  X(b_dropped_from_a, "b-dropped-from-a", shared)                               \
  X(cumulative_decay_off_by_one, "cumulative-decay-off-by-one", shared)         \
  X(scratch_read_before_write, "scratch-read-before-write", shared)             \
  X(dg_sign_flipped, "dg-sign-flipped", shared)                                 \
  X(dh0_not_written, "dh0-not-written", shared)                                 \
  X(dht_ignored, "dht-ignored", shared)                                         \
  X(partial_chunk_reads_past_t, "partial-chunk-reads-past-t", shared)           \
  X(h0_ignored, "h0-ignored", shared)                                           \
  X(tail_decay_factorised, "tail-decay-factorised", coverage_proof)             \
  X(chunk_shift_lacks_32, "chunk-shift-lacks-32", coverage_proof)               \
  X(v_read_with_k_stride, "v-read-with-k-stride", coverage_proof)               \
  X(ceil_div_off_by_one, "ceil-div-off-by-one", coverage_proof)                 \
  X(gate_batch_offset_dropped, "gate-batch-offset-dropped", coverage_proof)     \
  X(head_count_hardcoded_2, "head-count-hardcoded-2", coverage_proof)           \
  X(short_call_ignores_h0, "short-call-ignores-h0", coverage_proof)             \
  X(state_not_reset, "state-not-reset", varlen)                                 \
  X(chunk_index_not_rebased, "chunk-index-not-rebased", varlen)                 \
  X(value_head_reads_key_head_h, "value-head-reads-key-head-h", varlen)         \
  X(global_scratch_read_before_write, "global-scratch-read-before-write", cuda) \
  X(global_scratch_unwritten, "global-scratch-unwritten", cuda_sanitizer)

enum class Fault {
  none,
#define DELTAPROOF_FAULT_ENUM(name, id, reach) name,
  DELTAPROOF_KERNEL_FAULTS(DELTAPROOF_FAULT_ENUM)
#undef DELTAPROOF_FAULT_ENUM
};

enum class FaultReach { shared, coverage_proof, varlen, cuda, cuda_sanitizer };

// One bit per fault, for the CUDA kernels' mask (Fault::none has none).
constexpr unsigned long long fault_bit(Fault f) {
  return f == Fault::none ? 0ull : 1ull << (static_cast<int>(f) - 1);
}
#define DELTAPROOF_FAULT_COUNT(name, id, reach) +1
static_assert(0 DELTAPROOF_KERNEL_FAULTS(DELTAPROOF_FAULT_COUNT) <= 64,
              "the CUDA fault mask has 64 bits");
#undef DELTAPROOF_FAULT_COUNT

enum class FaultClass { kernel, instrument };

struct FaultInfo {
  std::string_view id;
  FaultClass cls = FaultClass::kernel;
  FaultReach reach = FaultReach::shared;
  Fault fault = Fault::none;  // a kernel fault's enum (none for an instrument fault)
  bool cuda_only() const {
    return reach == FaultReach::cuda || reach == FaultReach::cuda_sanitizer;
  }
  bool sanitizer_only() const { return reach == FaultReach::cuda_sanitizer; }
  bool coverage_proof() const { return reach == FaultReach::coverage_proof; }
  // In the CPU backends alone: no CUDA injection point.
  bool cpu_only() const { return coverage_proof() || reach == FaultReach::varlen; }
};
// Every kernel fault switchable at run time in the falsify build, in the
// list's order (gates::fault_catalog() adds the instrument's).
const std::vector<FaultInfo>& fault_catalog();

// Faults built separately (not switchable): configure with
// -DDELTAPROOF_SYNC_FAULT=<id> and the build holds that one fault, always on.
// (The ids must match DELTAPROOF_SYNC_FAULTS in kernels/CMakeLists.txt.)
struct SyncFaultInfo {
  std::string_view id;
};
const std::vector<SyncFaultInfo>& sync_faults();
// The sync fault this binary was built with, or "" (DELTAPROOF_SYNC_FAULT).
std::string_view built_sync_fault();

#ifdef DELTAPROOF_FALSIFY
inline constexpr bool kFaultsCompiledIn = true;
// Switches one kernel fault on ("" or "none": every one off); throws
// InputError on an id the list lacks. gates::set_active_fault is the switch
// for kernel and instrument faults alike.
void set_active_fault(std::string_view id);
Fault active_fault();
#define DELTAPROOF_FAULT(id) \
  (::deltaproof::kernels::active_fault() == ::deltaproof::kernels::Fault::id)
#else
inline constexpr bool kFaultsCompiledIn = false;
#define DELTAPROOF_FAULT(id) false
#endif

// Switches the active kernel fault off for its scope and back on after: for
// the reference machinery a gate runs beside the kernel under test (a
// precision class's noise ensemble runs cpu-chunk, whose fault points are the
// kernels' own), which must not see the fault. Nothing in a normal build.
class FaultSuspended {
 public:
#ifdef DELTAPROOF_FALSIFY
  FaultSuspended() : fault_(active_fault()) { set_active_fault("none"); }
  ~FaultSuspended() { restore(fault_); }
#else
  FaultSuspended() {}
#endif
  FaultSuspended(const FaultSuspended&) = delete;
  FaultSuspended& operator=(const FaultSuspended&) = delete;

 private:
#ifdef DELTAPROOF_FALSIFY
  static void restore(Fault f);
  Fault fault_;
#endif
};

}  // namespace deltaproof::kernels

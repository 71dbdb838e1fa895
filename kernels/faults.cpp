// kernels/faults.cpp — the fault catalog of the kernels' injection points and,
// in a falsify build, the run-time switch.
#include "kernels/faults.hpp"

#include <atomic>

#include <fmt/format.h>

#include "core/error.hpp"

namespace deltaproof::kernels {

const std::vector<FaultInfo>& fault_catalog() {
  static const std::vector<FaultInfo> catalog = {
      {Fault::double_exp_chunk_decay, "double-exp-chunk-decay",
       "the chunk-end decay exponentiated twice: K*exp(exp(G_C) - G) (background/000)"},
      {Fault::state_not_carried, "state-not-carried",
       "every chunk starts from h0: the chunk-start state is not carried forward"},
      {Fault::ds_not_handed_back, "ds-not-handed-back",
       "BK2: dS is not handed back between chunks (each chunk's dS_end is zero but the last)"},
      {Fault::state_transposed, "state-transposed", "the chunk-start state read transposed"},
      {Fault::b_dropped_from_a, "b-dropped-from-a", "b (or beta) dropped from A"},
      {Fault::cumulative_decay_off_by_one, "cumulative-decay-off-by-one",
       "the cumulative decay G_r sums g_i for i < r instead of i <= r"},
      {Fault::scratch_read_before_write, "scratch-read-before-write",
       "BK1's dU scratch buffer is read before it is written (accumulates over chunks)"},
      {Fault::dg_sign_flipped, "dg-sign-flipped", "dg written with its sign flipped"},
      {Fault::dh0_not_written, "dh0-not-written", "dh0 is never written"},
      {Fault::dht_ignored, "dht-ignored", "the cotangent of the final state (dht) is ignored"},
      {Fault::partial_chunk_reads_past_t, "partial-chunk-reads-past-t",
       "the partial last chunk reads a whole chunk of rows, past T"},
      {Fault::h0_ignored, "h0-ignored", "the initial state h0 is taken as zero"},
      {Fault::tail_decay_factorised, "tail-decay-factorised",
       "a partial last chunk's decays as exp(G_r) * exp(-G_i), which overflows past 88.7",
       FaultClass::kernel, false, false, true},
      {Fault::chunk_shift_lacks_32, "chunk-shift-lacks-32",
       "chunk c starts at c << log2(chunk), from a table that lacks chunk 32 (shift 4)",
       FaultClass::kernel, false, false, true},
      {Fault::v_read_with_k_stride, "v-read-with-k-stride",
       "v is read with K, not V, as its token stride", FaultClass::kernel, false, false, true},
      {Fault::ceil_div_off_by_one, "ceil-div-off-by-one",
       "the chunk count is (T + C - 2) / C: a last chunk of one row is dropped", FaultClass::kernel,
       false, false, true},
      {Fault::gate_batch_offset_dropped, "gate-batch-offset-dropped",
       "g is read without its batch offset: every sequence decays with the first's gates",
       FaultClass::kernel, false, false, true},
      {Fault::head_count_hardcoded_2, "head-count-hardcoded-2",
       "k is read at head h % 2: a head count of 2 written into the indexing", FaultClass::kernel,
       false, false, true},
      {Fault::short_call_ignores_h0, "short-call-ignores-h0",
       "a call shorter than one chunk starts from a zero state, not h0", FaultClass::kernel, false,
       false, true},
      {Fault::global_scratch_read_before_write, "global-scratch-read-before-write",
       "CUDA: BK2's global dU scratch is not zeroed and holds stale garbage (0xFF bytes)",
       FaultClass::kernel, true},
      {Fault::global_scratch_unwritten, "global-scratch-unwritten",
       "CUDA: BK2's global dU scratch is read before anything writes it (no memset)",
       FaultClass::kernel, true, true},
      {Fault::reference_other_seed, "reference-other-seed",
       "the instrument's reference is the oracle on inputs drawn from another seed",
       FaultClass::instrument},
      {Fault::output_not_copied_back, "output-not-copied-back",
       "the instrument never copies one output (dv, else ht) back from the kernel",
       FaultClass::instrument},
      {Fault::per_entry_relative_metric, "per-entry-relative-metric",
       "the instrument measures rel = max |a-b| / |b| entry by entry, not over the term's amax",
       FaultClass::instrument},
      {Fault::layout_swapped, "layout-swapped",
       "the instrument reads the candidate's token tensors as [B, H, T, ...] (head-first)",
       FaultClass::instrument},
  };
  return catalog;
}

const std::vector<SyncFaultInfo>& sync_faults() {
  static const std::vector<SyncFaultInfo> faults = {
      {"missing-barrier-bk2",
       "BK2 (CUDA): the __syncthreads() between writing dU and reading it is left out"},
  };
  return faults;
}

std::string_view built_sync_fault() {
#ifdef DELTAPROOF_SYNC_FAULT
  return DELTAPROOF_SYNC_FAULT;
#else
  return "";
#endif
}

#ifdef DELTAPROOF_FALSIFY
namespace {
std::atomic<Fault> g_active{Fault::none};
}

void set_active_fault(std::string_view id) {
  if (id.empty() || id == "none") {
    g_active = Fault::none;
    return;
  }
  for (const auto& info : fault_catalog())
    if (info.id == id) {
      g_active = info.fault;
      return;
    }
  throw InputError(
      fmt::format("unknown fault '{}'; see the fault catalog (kernels/faults.cpp).", id));
}

Fault active_fault() { return g_active.load(std::memory_order_relaxed); }
#endif

}  // namespace deltaproof::kernels

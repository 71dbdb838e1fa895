// gates/instrument_faults.hpp — the instrument's own fault points: bugs of
// the gates (the reference, the copy back, the metric, the layout), which a
// falsification campaign must see turn the gates red just as the kernels'
// faults do (DESIGN.md section 6). Listed once, as X(name, "id"); what each
// is and what it must turn red is in falsify/catalog.json. This file also
// holds the one run-time switch for kernel and instrument faults alike.
#pragma once

#include <string_view>
#include <vector>

#include "kernels/faults.hpp"

namespace deltaproof::gates {

#define DELTAPROOF_INSTRUMENT_FAULTS(X)                     \
  X(reference_other_seed, "reference-other-seed")           \
  X(output_not_copied_back, "output-not-copied-back")       \
  X(per_entry_relative_metric, "per-entry-relative-metric") \
  X(layout_swapped, "layout-swapped")

enum class InstrumentFault {
  none,
#define DELTAPROOF_INSTRUMENT_FAULT_ENUM(name, id) name,
  DELTAPROOF_INSTRUMENT_FAULTS(DELTAPROOF_INSTRUMENT_FAULT_ENUM)
#undef DELTAPROOF_INSTRUMENT_FAULT_ENUM
};

// Every fault switchable at run time: the kernels' (kernels::fault_catalog())
// then the instrument's.
const std::vector<kernels::FaultInfo>& fault_catalog();

#ifdef DELTAPROOF_FALSIFY
// Switches one fault on, kernel or instrument ("" or "none": every one off);
// throws InputError on an unknown id.
void set_active_fault(std::string_view id);
InstrumentFault active_instrument_fault();
#define DELTAPROOF_INSTRUMENT_FAULT(id) \
  (::deltaproof::gates::active_instrument_fault() == ::deltaproof::gates::InstrumentFault::id)
#else
#define DELTAPROOF_INSTRUMENT_FAULT(id) false
#endif

}  // namespace deltaproof::gates

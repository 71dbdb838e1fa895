// gates/instrument_faults.cpp — the instrument's fault list and the switch.
#include "gates/instrument_faults.hpp"

#include <atomic>

namespace deltaproof::gates {

namespace {

struct InstrumentPoint {
  std::string_view id;
  InstrumentFault fault;
};

constexpr InstrumentPoint kInstrumentPoints[] = {
#define DELTAPROOF_INSTRUMENT_POINT(name, id) {id, InstrumentFault::name},
    DELTAPROOF_INSTRUMENT_FAULTS(DELTAPROOF_INSTRUMENT_POINT)
#undef DELTAPROOF_INSTRUMENT_POINT
};

}  // namespace

const std::vector<kernels::FaultInfo>& fault_catalog() {
  static const std::vector<kernels::FaultInfo> catalog = [] {
    std::vector<kernels::FaultInfo> all = kernels::fault_catalog();
    for (const auto& point : kInstrumentPoints)
      all.push_back({point.id, kernels::FaultClass::instrument});
    return all;
  }();
  return catalog;
}

#ifdef DELTAPROOF_FALSIFY
namespace {
std::atomic<InstrumentFault> g_active{InstrumentFault::none};
}

void set_active_fault(std::string_view id) {
  for (const auto& point : kInstrumentPoints)
    if (point.id == id) {
      kernels::set_active_fault("none");
      g_active = point.fault;
      return;
    }
  kernels::set_active_fault(id);  // throws on an id neither list holds
  g_active = InstrumentFault::none;
}

InstrumentFault active_instrument_fault() { return g_active.load(std::memory_order_relaxed); }
#endif

}  // namespace deltaproof::gates

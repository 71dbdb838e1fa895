// kernels/faults.cpp — the fault catalog of the kernels' injection points and,
// in a falsify build, the run-time switch.
#include "kernels/faults.hpp"

#include <atomic>

#include <fmt/format.h>

#include "core/error.hpp"

namespace deltaproof::kernels {

const std::vector<FaultInfo>& fault_catalog() {
  static const std::vector<FaultInfo> catalog = {
#define DELTAPROOF_FAULT_INFO(name, id, reach) \
  {id, FaultClass::kernel, FaultReach::reach, Fault::name},
      DELTAPROOF_KERNEL_FAULTS(DELTAPROOF_FAULT_INFO)
#undef DELTAPROOF_FAULT_INFO
  };
  return catalog;
}

const std::vector<SyncFaultInfo>& sync_faults() {
  static const std::vector<SyncFaultInfo> faults = {
      {"missing-barrier-bk2"},
      {"missing-barrier-tc"},
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
      fmt::format("unknown fault '{}'; the fault points are listed in kernels/faults.hpp and "
                  "gates/instrument_faults.hpp, and described in falsify/catalog.json",
                  id));
}

Fault active_fault() { return g_active.load(std::memory_order_relaxed); }

void FaultSuspended::restore(Fault f) { g_active = f; }
#endif

}  // namespace deltaproof::kernels

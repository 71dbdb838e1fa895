// kernels/mutants.hpp — the switch of mutant schemata (falsify/mutants.py,
// issue 16): a kernel source rewritten with every mutant compiled in, each
// behind DELTAPROOF_MUTANT(id), one (or none) switched on at run time. Every
// point also records that it was reached, so a mutant no gate reaches is
// reported NoCoverage without being run. Only the rewritten sources of a
// mutation run include this; the switch itself is in every build.
#pragma once

#include <vector>

namespace deltaproof::kernels {

// The mutant switched on (0: none): `gate run --mutant ID`, else
// DELTAPROOF_MUTANT in the environment.
int active_mutant();
void set_active_mutant(int id);

// A mutant's point, evaluated where the kernel reaches it: records the reach,
// true when `id` is the active mutant. Ids from 1 to kMaxMutantId.
inline constexpr int kMaxMutantId = 1 << 16;
bool mutant_point(int id);
// The points reached since the process started, ascending.
std::vector<int> reached_mutants();

// No mutant while one lives (the bf16/tf32 noise ensemble, which must see the
// clean kernel): as kernels::FaultSuspended for the catalog's faults.
class MutantSuspended {
 public:
  MutantSuspended();
  ~MutantSuspended();
  MutantSuspended(const MutantSuspended&) = delete;
  MutantSuspended& operator=(const MutantSuspended&) = delete;

 private:
  int saved_;
};

}  // namespace deltaproof::kernels

#define DELTAPROOF_MUTANT(id) (::deltaproof::kernels::mutant_point(id))

// kernels/mutants.hpp — the switch of mutant schemata (falsify/mutants.py,
// `deltaproof falsify mutate`): a kernel source rewritten with every mutant
// compiled in, each behind DELTAPROOF_MUTANT(id), and one (or none) switched
// on at run time. Only the rewritten sources of a mutation run include this.
#pragma once

namespace deltaproof::kernels {

// The mutant switched on (0: none): set once, before any kernel runs, from
// `--mutant ID` or DELTAPROOF_MUTANT in the environment.
int active_mutant();
void set_active_mutant(int id);

}  // namespace deltaproof::kernels

#define DELTAPROOF_MUTANT(id) (::deltaproof::kernels::active_mutant() == (id))

// tests/python/mutants/mutants_main.cpp — the mutant switch for the sample:
// the active mutant from the environment (DELTAPROOF_MUTANT), as the falsify
// build's kernels/mutants.cpp reads it.
#include <cstdlib>

namespace deltaproof::kernels {
int active_mutant() {
  static const int id = [] {
    const char* text = std::getenv("DELTAPROOF_MUTANT");
    return text ? std::atoi(text) : 0;
  }();
  return id;
}
}  // namespace deltaproof::kernels

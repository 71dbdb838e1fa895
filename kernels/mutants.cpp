// kernels/mutants.cpp — see mutants.hpp.
#include "kernels/mutants.hpp"

#include <cstdlib>

namespace deltaproof::kernels {
namespace {

int& mutant() {
  static int id = [] {
    const char* text = std::getenv("DELTAPROOF_MUTANT");
    return text ? std::atoi(text) : 0;
  }();
  return id;
}

}  // namespace

int active_mutant() { return mutant(); }
void set_active_mutant(int id) { mutant() = id; }

}  // namespace deltaproof::kernels

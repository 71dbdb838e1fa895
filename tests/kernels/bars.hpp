// tests/kernels/bars.hpp — the bars the kernel tests hold the CPU kernels to
// (rel = max|a-b|/max|b| against the quad reference, core/metric.hpp): the
// gate registry's own (gates/registry.cpp), where each bar's evidence — the
// clean kernel's worst error and the nearest fault's — is written once.
#pragma once

#include <stdexcept>
#include <string>

#include "gates/registry.hpp"

namespace deltaproof::testing {

inline const gates::Family& family_of(const std::string& backend) {
  for (const auto& family : gates::families())
    if (family.backend == backend) return family;
  throw std::runtime_error("the gate registry has no family " + backend);
}
inline double fwd_bar(const std::string& backend) { return family_of(backend).bars.fwd.value; }
inline double bwd_bar(const std::string& backend) { return family_of(backend).bars.bwd.value; }
// The bar of `term`: the forward's for o and ht, the backward's for a gradient.
inline double term_bar(const std::string& backend, const std::string& term) {
  return term == "o" || term == "ht" ? fwd_bar(backend) : bwd_bar(backend);
}

}  // namespace deltaproof::testing

// tests/bf16_family.hpp — a registered gate of the bf16 family (cuda-tc's) run
// with a CPU backend in cuda-tc's place, so that a gate judged by the class's
// noise runs where no GPU is: the family as registered but for its GPU mark
// and its forward stages (cpu-chunk's). Shared by the gate tests and the
// falsify build's tests.
#pragma once

#include <filesystem>

#include "gates/registry.hpp"
#include "gates/runner.hpp"
#include "kernels/backend.hpp"

namespace deltaproof::testing {

inline gates::GateResult run_as_bf16_family(const gates::Gate& registered,
                                            const kernels::Backend& backend) {
  gates::Family family = *registered.family;
  family.needs_gpu = false;
  family.fwd_stages = {"fwd.intra", "fwd.inter"};  // cpu-chunk's
  gates::Gate gate = registered;
  gate.family = &family;
  gates::RunOptions options;
  options.fixtures_dir = std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures";
  options.backend = &backend;
  return gates::run_gate(gate, options);
}

}  // namespace deltaproof::testing

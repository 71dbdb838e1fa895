// gates/registry.hpp — named gates. A gate is (op, backend, fixture, phase,
// bars), named <op>.<backend>.<fixture>.<phase>, e.g.
// gdn2.cpu-chunk.t32-c16.bwd; metamorphic gates (no oracle) are named
// <op>.<backend>.<fixture>.<relation>. Families hold what gates of one backend
// share: precision class, bars with their evidence, and the kernel stages each
// phase must show in the execution record (path evidence).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "kernels/backend.hpp"

namespace deltaproof::gates {

// Precision classes and their contracts: kernels/precision.hpp.
using kernels::parse_precision;
using kernels::Precision;
using kernels::precision_name;

// A bar and the evidence it stands on (DESIGN.md section 5): the clean
// kernel's measured worst error and, once a falsification campaign has run,
// the smallest error a catalog fault produced.
struct Bar {
  double value = 0.0;
  double clean_worst = 0.0;
  const char* clean_where = "";
  double smallest_fault = -1.0;  // < 0: no campaign yet (issue 6)
  const char* fault_where = "";
};

struct PhaseBars {
  Bar fwd, bwd;
};

struct Family {
  const char* backend;
  Precision precision;
  PhaseBars bars;
  std::vector<std::string> fwd_stages;  // must appear in the record for a fwd gate
  std::vector<std::string> bwd_stages;  // ... and for a bwd gate (with the fwd ones)
  bool needs_gpu = false;
  int only_chunk = 0;  // the one chunk size the backend runs (0: every one)
  // A packed sequence's results are bit for bit the sequence's run alone; if
  // not (cuda-chunk: a padded last chunk sums its gate gradient in another
  // order), the packing gate holds them to the family's bars instead.
  bool packs_bitwise = true;
  // A family of a class other than f32 has no constant bars: each fixture's
  // bars and bias bands come from its class's noise (gates/noise.hpp), as in
  // `gate check --precision`.
  bool noise_bars() const { return precision != Precision::f32; }
};
const std::vector<Family>& families();

enum class GateKind { oracle, causality, split_call, batch_head, isolation, packing };
std::string_view kind_name(GateKind kind);

struct Gate {
  std::string name;
  GateKind kind = GateKind::oracle;
  Op op = Op::gdn2;
  const Family* family = nullptr;
  std::string fixture;  // relative to the fixtures folder, e.g. "gdn2/t32-c16.safetensors"
  kernels::Phase phase = kernels::Phase::bwd;
  std::vector<std::string> required_stages() const;
};

// Every committed fixture (fixtures_dir/manifest.json) x every family x both
// phases, plus the metamorphic gates of every op x family.
std::vector<Gate> all_gates(const std::filesystem::path& fixtures_dir);
// Gates whose name matches any glob (* and ? wildcards); throws InputError
// naming a pattern that matches nothing.
std::vector<Gate> select_gates(const std::vector<Gate>& gates,
                               const std::vector<std::string>& globs);
bool glob_match(std::string_view pattern, std::string_view text);

}  // namespace deltaproof::gates

// falsify/precision.hpp — campaigns at a precision class (issue 10,
// docs/PRECISION.md): can the class's noise-calibrated gates see small bugs?
// On each fixture, a candidate of the class — a chunked twin (cpu-chunk, or
// cuda-chunk on a GPU) under the class's contract, or an external kernel's
// outputs (FLA on the H200) — must be green, and each fault applied to it
// must be red:
//   graded faults, applied to the candidate's outputs: one term scaled by
//     1.005, 1.01, 1.02, 1.05 (and the same below 1); dg sign-flipped in one
//     chunk; the rows of o and of dk shifted by one inside one chunk;
//   catalog faults (falsify build, twin candidates only): every kernel fault
//     point of the twin switched on, run under the class's contract.
// Required: a scaling of at least `required_scaling` (1% at bf16, 0.5% at
// tf32) and every other graded fault killed on every fixture, by the term it
// touched; every catalog fault killed on at least one fixture (but those only
// a sanitizer must see: FaultInfo::sanitizer_only); every clean candidate
// green. The noise model (cpu-chunk's ensemble) is always measured with no
// fault on.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/precision.hpp"

namespace deltaproof::falsify {

enum class PrecisionFaultKind { clean, graded, catalog };

struct PrecisionOutcome {
  std::string fixture;
  std::string fault;  // "clean" for the candidate itself
  PrecisionFaultKind kind = PrecisionFaultKind::graded;
  std::string term;      // the term a graded fault touches ("" for catalog faults)
  double size = 0.0;     // a scaling's |s|; 0 for the others
  bool required = true;  // must be killed (clean: must stay green)
  bool killed = false;
  std::string killer;           // "db: bias in chunk 1" / "dh0: rel" — the first red term and why
  bool killer_is_term = false;  // the red term is the one the graded fault touched
  double margin =
      0.0;  // killed: the red term's max(rel/bar, bias excess); else the largest such ratio
  double mde = 0.0;  // the touched term's minimum detectable scaling on this fixture
};

struct PrecisionCampaignOptions {
  kernels::Precision precision = kernels::Precision::bf16;
  std::vector<std::filesystem::path> fixtures;
  // Empty: the twin `backend` under the class's contract. Else one candidate
  // per fixture.
  std::vector<std::filesystem::path> candidates;
  std::string backend = "cpu-chunk";  // cpu-chunk or cuda-chunk
  bool catalog_faults = true;  // ignored without the falsify build or with external candidates
  // Whether the graded faults must be killed (else they are reported only: on
  // fixtures too small to resolve a 1% bias, say — each row gives its minimum
  // detectable scaling).
  bool require_graded = true;
  std::function<void(const std::string&)> progress;
};

struct PrecisionCampaign {
  kernels::Precision precision = kernels::Precision::bf16;
  double required_scaling = 0.01;
  std::string candidate_source;
  std::vector<PrecisionOutcome> outcomes;  // per fixture: clean first, then each fault
  std::vector<std::string> unmet;          // each requirement that did not hold, one sentence
  double seconds = 0.0;
  bool requirements_met() const { return unmet.empty(); }
  nlohmann::json to_json(const std::string& command) const;
};

// 1% at bf16, 0.5% at tf32, 0.5% at f32.
double required_scaling(kernels::Precision precision);

PrecisionCampaign run_precision_campaign(const PrecisionCampaignOptions& options);

}  // namespace deltaproof::falsify

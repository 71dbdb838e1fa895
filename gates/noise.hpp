// gates/noise.hpp — bars from noise (docs/PRECISION.md). A precision class's
// contract is evaluated on the fixture by the CPU chunked twin under an
// ensemble of legitimate variants (rounding rules, the optional rounding
// points, summation order, chunk size): the spread a correct kernel of that
// class shows on this fixture, per term, per chunk and per head. From it:
//   - the bar of each term: kappa x the ensemble's worst error against the
//     f64 reference (FlashAttention's rule: at most 2x a same-precision
//     reference), never below a floor;
//   - the bias band of each term, chunk and head: the regression slope of the
//     error on the reference, alpha = <c - r, r> / <r, r>, must lie within
//     kappa x the ensemble's half-range of it (plus a floor; for a chunk or a
//     head, plus z x its rounding grain) around the ensemble's mid-point. A term scaled
//     by 1 + s has alpha = s exactly, while rounding noise averages out: this
//     sees a 1% bug that a max-error bar at bf16 cannot. Where a group's
//     <r, r> sits in a few elements, one output rounding of theirs moves its
//     alpha by up to an ulp (relative): the grain says how much;
//   - the minimum detectable effect of each term: the smallest uniform scaling
//     that turns it red.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gates/compare.hpp"
#include "kernels/backend.hpp"

namespace deltaproof::gates {

using kernels::Precision;

// How far a class's evaluation may stray from its ensemble: one small struct
// per class (the measurements behind each figure are in docs/PRECISION.md).
struct NoiseTolerances {
  double kappa_error;  // bar = kappa_error x the ensemble's worst rel
  double error_floor;  // ... and never below this rel
  double kappa_bias;   // the bias band: kappa_bias x the ensemble's half-range ...
  double bias_floor;   // ... plus this, around the ensemble's mid-point ...
  double grain_z;      // ... plus grain_z x a chunk's or head's rounding grain
};
const NoiseTolerances& noise_tolerances(Precision precision);

// One legitimate variant of a class's evaluation.
struct EnsembleMember {
  std::string name;
  kernels::PrecisionContract contract;
  int chunk = 64;
  bool channels_reversed = false;  // K and V channels in reverse order: another summation order
  // The token inputs q k v b w beta and the cotangent do rounded to bf16
  // before anything (g and the states h0, dht stay f32, as FLA takes them),
  // when set: to nearest, as a kernel whose tensors arrive in bf16 reads an
  // f32 fixture's; stochastically (stream inputs_stream), the problem's own
  // sensitivity to its inputs at bf16 precision. A bf16 fixture's inputs are
  // exact in bf16: either leaves them as they are.
  std::optional<kernels::Rounding> inputs_in_bf16 = std::nullopt;
  std::uint64_t inputs_stream = 0;
};
// The class's members for a fixture of chunk size `chunk`; the first is the
// baseline (round to nearest even at every point the class allows).
std::vector<EnsembleMember> ensemble_members(Precision precision, int chunk);

// An interval of the regression slope alpha.
struct Band {
  double lo = 0.0, hi = 0.0;
  double mid() const { return 0.5 * (lo + hi); }
  double half() const { return 0.5 * (hi - lo); }
};

struct TermNoise {
  double baseline_rel = 0.0;                   // the baseline member's rel
  double worst_rel = 0.0;                      // the ensemble's worst rel
  std::vector<double> member_rel;              // per member
  std::vector<double> member_alpha;            // per member, the whole term's slope
  std::vector<double> chunk_worst_rel;         // per chunk, the ensemble's worst (token tensors)
  Band alpha;                                  // the whole term, over the members
  std::vector<Band> chunk_alpha;               // per chunk (empty for states)
  std::vector<Band> head_alpha;                // per (b, h), b-major
  double alpha_mean = 0.0, alpha_sigma = 0.0;  // the members' mean and standard deviation
};

struct NoiseModel {
  Precision precision = Precision::f32;
  NoiseTolerances tolerances{};
  std::vector<EnsembleMember> members;
  std::map<std::string, TermNoise> terms;
  double seconds = 0.0;
  nlohmann::json to_json() const;  // members and tolerances (the per-term figures sit in the terms)
};

// Runs every member of the class's ensemble on the job's inputs (cpu-chunk)
// and measures each output term against `reference`. Deterministic: the same
// fixture gives the same model bit for bit.
NoiseModel measure_noise(const kernels::KernelShape& shape, const kernels::Buffers& inputs,
                         kernels::Phase phase,
                         const std::map<std::string, std::vector<double>>& reference,
                         Precision precision);

// A folder measure_noise keeps its models in (none by default): a model is
// read back when one of the same inputs, reference, shape, phase and class
// was written there before, else measured and written (atomically). The key
// is the sha256 of all of them and of the cache format, so a changed fixture,
// a changed ensemble or a changed kernel of the ensemble (kNoiseCacheFormat,
// bumped with either) never meets an old model. What lets `gate check` of a
// second kernel on a production-shape fixture skip minutes of cpu-chunk runs.
void set_noise_cache(const std::filesystem::path& folder);
inline constexpr const char* kNoiseCacheFormat = "deltaproof-noise-cache/1";

// A model's per-term figures as JSON and back (the members and tolerances
// follow from the class and the chunk size).
nlohmann::json terms_to_json(const NoiseModel& model);
void terms_from_json(const nlohmann::json& json, NoiseModel& model);

// The rounding grain of each group of one term (per chunk, per head; the
// groups of TermGroups): how far the outputs' own rounding can move a
// group's alpha, sqrt(sum (ulp(r) r)^2) / sum r^2 with ulp the output
// format's (bf16 for the bf16 class, f32 otherwise) at the reference value r.
// Two correct kernels whose outputs round one ulp apart, in random
// directions, differ in alpha by about this much; a group carried by one
// element, by ulp(r) / |r|, about 2^-8 in bf16. Large groups: ~ 2^-8 /
// sqrt(elements), far under the floor. The whole term takes none (judge_bias).
struct Grains {
  std::vector<double> chunk, head;
};

// The regression slopes of `candidate` on `reference` for one term: whole,
// per chunk, per head (TermGroups). NaN where the reference is zero. With a
// precision, the same pass also takes the groups' rounding grains.
struct Slopes {
  double whole = 0.0;
  std::vector<double> chunk, head;
  double correlation = 0.0;  // of the error with the reference, whole term: <e, r> / |e| |r|
  Grains grains;             // empty unless asked for
};
Slopes regression_slopes(const kernels::KernelShape& shape, const std::string& term,
                         const std::vector<double>& candidate, const std::vector<double>& reference,
                         std::optional<Precision> grains_of = std::nullopt);
// The grains alone, for a term without a candidate.
Grains rounding_grains(const kernels::KernelShape& shape, const std::string& term,
                       const std::vector<double>& reference, Precision precision);

// The bar of each term from the model.
std::map<std::string, double> noise_bars(const NoiseModel& model);

// Judges the bias of every compared term against the model, sets each term's
// noise figures (baseline and ensemble error, alpha and its band, the
// minimum detectable effect), and turns a term red when its error is biased
// outside the band: on the whole term, in one chunk or in one head.
void judge_bias(const kernels::KernelShape& shape, const NoiseModel& model,
                const std::map<std::string, std::vector<double>>& candidate,
                const std::map<std::string, std::vector<double>>& reference,
                std::vector<TermComparison>& terms);

// compare_terms with the model's per-term bars, then judge_bias: a candidate
// against a precision class, as `gate check` does it.
std::vector<TermComparison> judge_against_noise(
    const kernels::KernelShape& shape, kernels::Phase phase, const NoiseModel& model,
    const std::map<std::string, std::vector<double>>& candidate,
    const std::map<std::string, std::vector<double>>& reference);

}  // namespace deltaproof::gates

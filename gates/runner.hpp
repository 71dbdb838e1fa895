// gates/runner.hpp — running a gate: load the fixture, poison the outputs with
// NaN, run the backend, check path evidence (the stages the gate claims to
// test ran), compare term by term (forward first), and check determinism
// (--repeat N in this process, --replay N in fresh processes, bitwise).
// Metamorphic gates compare the backend with itself under a relation that
// needs no oracle: causality, split-call invariance, batch/head independence.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gates/compare.hpp"
#include "gates/fixture_io.hpp"
#include "gates/registry.hpp"

namespace deltaproof::gates {

struct RunOptions {
  std::filesystem::path fixtures_dir = "fixtures";
  int repeat = 1;        // runs in this process; any bitwise difference fails
  int replay = 0;        // extra runs in fresh processes (`deltaproof run`)
  std::string self_exe;  // the deltaproof executable, for --replay
  std::string fault;     // falsify build: the active fault, handed to --replay processes
  // a mutation run: oracle gates hash their outputs (GateResult::outputs_sha256)
  bool digest_outputs = false;
  // Runs this backend instead of the family's (tests of the gates themselves
  // run deliberately broken backends through the real gate); not for --replay.
  const kernels::Backend* backend = nullptr;
};

struct DeterminismResult {
  int repeats = 1;
  int replays = 0;
  bool identical = true;
  std::string first_difference;  // "run 2 vs run 1: dq differs at (b,t,h,i) = (...)"
};

struct GateResult {
  std::string name;
  std::string kind;
  std::string op, backend, phase, precision;
  Verdict verdict = Verdict::fail;
  std::vector<std::string> reasons;  // each red or skip reason, one sentence
  std::vector<TermComparison> terms;
  kernels::ExecutionRecord record;
  std::vector<std::string> required_stages;
  DeterminismResult determinism;
  nlohmann::json fixture;          // path, sha256, spec
  nlohmann::json bars;             // fwd/bwd bar with evidence
  bool gradients_compared = true;  // false for a forward-only gate or check
  double seconds = 0.0;
  // an oracle gate of a mutation run (RunOptions::digest_outputs): sha256 of
  // every output's name and bits, which tells a mutant with no effect from a
  // survivor; "" otherwise
  std::string outputs_sha256;
  bool passed() const { return verdict == Verdict::pass; }
  nlohmann::json to_json() const;
};

// The rows a causality gate perturbs from (each P: the tokens t >= P move,
// o[t < P] must stay bitwise): the middle and the last row of the first
// chunk, the second chunk's first, middle and last rows, and the first and
// middle rows of a partial tail; those inside [1, T), sorted.
std::vector<int> causality_points(int T, int chunk);
// A shape's: a dense one's as above; a packed one's, each sequence's points
// from its first token, and every sequence boundary but 0.
std::vector<int> causality_points(const kernels::KernelShape& shape);

// Where a split-call gate cuts T in two (the first call's final state is the
// second's h0, the second's dh0 the first's dht). At a chunk boundary (the
// first and the second) the second call's chunks are the whole call's, so the
// joined results must equal the whole call's bit for bit. Inside a chunk (the
// first row, the middle of the first chunk, the last row) the chunk grid moves
// and the arithmetic with it: the joined results are held to the oracle at the
// family's bars, like an oracle gate. Those inside [1, T), sorted.
struct SplitPoint {
  int at = 0;
  bool boundary = false;
  bool operator==(const SplitPoint&) const = default;
};
std::vector<SplitPoint> split_points(int T, int chunk);

GateResult run_gate(const Gate& gate, const RunOptions& options);

// A fixture read for a gate: its file, the kernel's view of it (shape, f32
// inputs), the reference outputs of `phase` as doubles, and its path, sha256
// and spec for reports. Throws InputError naming the file and the tensor.
struct LoadedFixture {
  SafetensorsFile file;
  KernelJob job;
  std::map<std::string, std::vector<double>> reference;
  nlohmann::json info;
};
LoadedFixture load_fixture(const std::filesystem::path& path, kernels::Phase phase);

// The candidate's outputs of `phase` as doubles (an absent one is left out: the
// comparison reports it missing); a tensor of the wrong shape is an InputError
// naming `path`.
std::map<std::string, std::vector<double>> candidate_values(const SafetensorsFile& candidate,
                                                            const std::filesystem::path& path,
                                                            const kernels::KernelShape& shape,
                                                            kernels::Phase phase);

// `gate check`: a candidate computed by anything, against a fixture, with bars
// from the noise of its precision class on this fixture (gates/noise.hpp):
// per-term bars and bias bands. The phase is bwd when the candidate holds any
// gradient, else fwd (forward only, and the result says so), unless given.
GateResult check_candidate(const std::filesystem::path& fixture,
                           const std::filesystem::path& candidate, Precision precision,
                           std::optional<kernels::Phase> phase = std::nullopt);
// The same check of a candidate already in memory (the Python package's
// check_outputs): `name` stands where the candidate file's name stands in the
// gate's name (check.<op>.<name>), `source` names the candidate in errors.
GateResult check_candidate(const std::filesystem::path& fixture, const SafetensorsFile& candidate,
                           const std::string& name, const std::string& source, Precision precision,
                           std::optional<kernels::Phase> phase = std::nullopt);

struct NoiseModel;
// The bars of a noise-calibrated check, as the report holds them.
nlohmann::json noise_bars_json(const NoiseModel& noise, const std::vector<TermComparison>& terms);

nlohmann::json bars_json(const PhaseBars& bars, Precision precision);

}  // namespace deltaproof::gates

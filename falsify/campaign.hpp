// falsify/campaign.hpp — a falsification campaign (DESIGN.md section 6).
//
// 1. The tree's tracked files are hashed.
// 2. Baseline in both directions, per backend, in this process: every gate of
//    the campaign green with no fault on; every gate red when every output is
//    NaN (the poison). If either fails, the campaign stops and says so.
// 3. Each fault of the catalog (or of --fault), per backend it lives in, runs
//    in a child process: `deltaproof gate run --fault ID` of the falsify build
//    (mutant schemata), the fault's own build for a sync fault, or
//    `deltaproof gen --inject-generator-fault` for an oracle fault; a sanitizer
//    runs where the catalog asks for one (CUDA). The gates' verdicts are held
//    against the catalog's expectations: status Killed, Survived,
//    KilledWrongTerm, GreenBroken, CompileError, RuntimeError, Timeout (or
//    Ignored: no selected backend has it).
// 4. The tracked files are hashed again: one changed byte fails the campaign.
#pragma once

#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "falsify/catalog.hpp"
#include "gates/registry.hpp"
#include "gates/runner.hpp"

namespace deltaproof::falsify {

// A gate's verdict as a campaign sees it (from a gate-run report).
struct GateOutcome {
  std::string name, kind, phase;
  FixtureTraits fixture;  // the fixture's shape, for the catalog's fixture classes
  bool red = false;
  bool skipped = false;
  std::vector<std::string> red_terms;  // fail, missing or unresolvable terms
  // gradients left out of the verdict after a red forward whose diagnosis
  // would not pass: the other terms the fault touched (report-v1 "diagnosis")
  std::vector<std::string> diagnosed_terms;
  double error = 0.0;        // worst rel over the red terms (inf: NaN/inf outputs)
  double bar = 0.0;          // that term's bar
  std::string worst_term;    // that term
  double clean_error = 0.0;  // (clean runs) worst rel over every compared term
  std::string clean_term;
  std::string reason;  // the first red reason
};
// A gate's outcome from its result: in this process, from the value; from a
// child process, from the report it wrote (JSON only across processes).
GateOutcome gate_outcome(const gates::GateResult& result);
// Reads the "gates" of a deltaproof-report/1 (gates::read_gate_result; throws
// InputError on a malformed gate).
std::vector<GateOutcome> gate_outcomes(const nlohmann::json& report);

// compute-sanitizer's verdict in `log`: {summary, count, exit_code}; count is
// the hazards (racecheck) or errors (the other tools) of its summary line, -1
// when there is none.
nlohmann::json sanitizer_summary(const std::string& tool, const std::string& log, int exit_code);

// A fault's outcome (DESIGN.md section 6), each with its one name as reports
// write it: Killed, Survived, KilledWrongTerm (red, but not where the catalog
// says), GreenBroken (a gate that must stay green went red), CompileError,
// RuntimeError, Timeout, Ignored (no selected backend has the fault).
enum class FaultStatus {
  killed,
  survived,
  killed_wrong_term,
  green_broken,
  compile_error,
  runtime_error,
  timeout,
  ignored
};
std::string_view status_name(FaultStatus status);
FaultStatus parse_fault_status(std::string_view name);

struct FaultOutcome {
  FaultOutcome() = default;
  FaultOutcome(std::string fault_id, std::string fault_class, std::string backend_name)
      : fault(std::move(fault_id)), cls(std::move(fault_class)), backend(std::move(backend_name)) {}
  std::string fault, cls, backend;
  FaultStatus status = FaultStatus::survived;
  std::string reason;  // one paragraph: why this status
  std::string killer_gate, killer_term;
  double killer_error = 0.0, killer_bar = 0.0;
  // killer_error / killer_bar, the fault's error over the bar, on the
  // expected-red gate it cleared by least (the weakest kill)
  double margin = 0.0;
  std::vector<std::string> killed_by;  // every red gate
  int red_gates = 0, gates = 0;
  std::vector<std::string> broken;  // each broken expectation, one sentence
  // the gate of each broken expectation -> what it is for that gate: survived
  // (must go red, stayed green), killed_wrong_term, green_broken (must stay
  // green, went red); the report's fault-by-gate matrix draws them
  std::map<std::string, FaultStatus> broken_gates;
  nlohmann::json sanitizer;  // tool, gate, summary, count, caught (or null)
  std::vector<GateOutcome> outcomes;
  double seconds = 0.0;
  bool ok() const { return status == FaultStatus::killed || status == FaultStatus::ignored; }
  nlohmann::json to_json() const;
};

struct BaselineOutcome {
  std::string backend;
  int gates = 0, clean_green = 0, poison_red = 0;
  std::vector<std::string> problems;  // "clean: gate X is red: ..." / "poison: gate Y stayed green"
  std::vector<GateOutcome> clean;
  bool ok() const { return problems.empty(); }
};

// Per gate: how far the smallest fault error sits from the clean error.
struct Separation {
  std::string gate, backend;
  double bar = 0.0;
  double clean_error = 0.0;
  std::string clean_term;
  double smallest_fault_error = std::numeric_limits<double>::infinity();
  std::string smallest_fault, smallest_fault_term;
  double ratio = 0.0;      // smallest fault error / clean error (inf when clean is 0)
  bool falsified = false;  // some kernel fault turned it red
  bool weak = false;       // ratio below 10x
};

struct CampaignOptions {
  std::filesystem::path fixtures_dir = "fixtures";
  std::filesystem::path source_dir;                  // the tree whose files are hashed
  std::vector<std::string> backends;                 // the backends under test
  std::vector<std::string> fault_ids;                // empty: the whole catalog
  std::vector<std::string> gate_globs;               // narrows the gates (empty: all)
  int shard_index = 1, shard_count = 1;              // --shard i/n
  double timeout_s = 600.0;                          // per child process
  std::string self_exe;                              // this (falsify build) deltaproof
  std::map<std::string, std::string> sync_binaries;  // sync fault id -> its prebuilt deltaproof
  std::filesystem::path sync_build_root;             // where sync builds go when none is given
  int build_jobs = 2;
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

// What a campaign and a patch run share: the tree they checked, the
// baselines, the outcomes.
struct RunRecord {
  std::filesystem::path source_top;
  std::vector<BaselineOutcome> baselines;
  bool baseline_ok = true;
  std::vector<FaultOutcome> outcomes;
  std::size_t tracked_files = 0;
  std::vector<std::string> tree_changes;  // empty: every tracked file unchanged
  bool interrupted = false;
  double seconds = 0.0;
};

struct CampaignResult : RunRecord {
  std::vector<Separation> separation;
  bool passed() const;
};

// Runs `body` between two hashes of the tracked files under
// record.source_top: fills tracked_files, tree_changes and seconds, and turns
// SIGINT/SIGTERM during `body` into record.interrupted (the tree is still
// checked after).
void run_tree_checked(RunRecord& record, const std::function<void()>& body);

// The baselines of every backend, both ways, with a progress line per backend
// (and its first problems): fills record.baselines and baseline_ok, and
// returns each backend's gates.
std::map<std::string, std::vector<gates::Gate>> run_baselines(
    const std::vector<std::string>& backends, const std::filesystem::path& fixtures_dir,
    const std::vector<std::string>& globs, const std::function<void(const std::string&)>& progress,
    RunRecord& record);

// The gates of one backend a campaign runs (narrowed by globs).
std::vector<gates::Gate> campaign_gates(const std::filesystem::path& fixtures_dir,
                                        const std::string& backend,
                                        const std::vector<std::string>& globs);

// Which faults of the catalog shard i of n runs (by catalog order, i = 1..n).
std::vector<const CatalogFault*> shard_faults(const Catalog& catalog,
                                              const std::vector<std::string>& ids, int index,
                                              int count);

BaselineOutcome run_baseline(const std::string& backend, const std::vector<gates::Gate>& gates,
                             const std::filesystem::path& fixtures_dir);

// `binary gate run` of `gates` in a child process (with `--fault
// fault_switch` when it is not empty), its report written to `report`: fills
// o.outcomes and returns true, or sets o.status to Timeout or RuntimeError (a
// crash, an exit other than 0 or 1, no readable report) and returns false.
bool run_gates_in_child(const std::string& binary, const std::filesystem::path& fixtures_dir,
                        const std::string& fault_switch, const std::vector<gates::Gate>& gates,
                        const std::filesystem::path& report, double timeout_s, FaultOutcome& o);

// Holds one fault's gate outcomes against its expectations and sets status,
// reason, killer and margin (not for generator faults).
void judge(const CatalogFault& fault, FaultOutcome& outcome);

CampaignResult run_campaign(const Catalog& catalog, const CampaignOptions& options);

// Per gate: clean error beside the smallest error a kernel fault produced.
std::vector<Separation> separation(const std::vector<BaselineOutcome>& baselines,
                                   const std::vector<FaultOutcome>& outcomes);

}  // namespace deltaproof::falsify

// falsify/mutate.hpp — `deltaproof falsify mutate` (issue 16, docs/MUTATION.md):
// the gates' mutation score over kernel sources.
//
// 1. The tree's tracked files are hashed (as a campaign's: one changed byte
//    fails the run); a scratch git worktree of HEAD is made under /tmp.
// 2. cmake configures it (for compile_commands.json) and falsify/mutants.py
//    lists the mutants of FILES with libclang; --operators, --ids, --shard and
//    --max choose among them.
// 3. The files are rewritten as mutant schemata (every chosen mutant compiled
//    in, each behind DELTAPROOF_MUTANT(id)) and built; a mutant the compiler
//    refuses is CompileError and leaves the schemata; the build is tried again.
// 4. Baseline: every chosen gate with no mutant on, in a child process, must
//    be green; it records which mutant points the gates reach and each oracle
//    gate's output digest. A point no gate reaches is NoCoverage.
// 5. Each reached mutant: `gate run --mutant ID --first-red` (or every gate,
//    --all-gates) in a child, the gates cheapest first (by the baseline's
//    seconds): Killed (a gate went red), Survived (every gate green, some
//    output differs), NoEffect (every gate green and every output bitwise the
//    baseline's: a likely equivalent mutant), Timeout, RuntimeError (a crash).
// 6. The tree is hashed again; the worktree is removed (also on SIGINT/SIGTERM).
// A tree without .git (the GPU machine's copy) is copied instead of checked out.
//
// The report is Stryker's schemaVersion 2 (NoEffect is its Ignored, the status
// kept in deltaproofStatus) with a "deltaproof" object: the header, the build,
// the baseline, the tree check, and the score = killed / (killed + survived)
// in all, per file and per operator.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "falsify/campaign.hpp"

namespace deltaproof::falsify {

inline constexpr const char* kMutateReportFormat = "deltaproof-mutate-report/1";

// One mutant as falsify/mutants.py lists it.
struct Mutant {
  int id = 0;
  std::string file, op, original, replacement, function;
  int line = 1, column = 1;
  long offset = 0, length = 0;
  bool held = true;  // the schemata can hold it (mutants.py "schema" is not null)
};
// Reads mutants.py's `list` output; throws InputError naming `what` on a malformed one.
std::vector<Mutant> parse_mutants(const nlohmann::json& list, const std::string& what);

enum class MutantStatus {
  killed,
  survived,
  no_effect,
  no_coverage,
  timeout,
  runtime_error,
  compile_error,
  ignored  // the schemata cannot hold it
};
std::string_view mutant_status_name(MutantStatus status);  // Killed, Survived, NoEffect, ...
MutantStatus parse_mutant_status(std::string_view name);
// The status Stryker's schema knows: NoEffect and the unheld are its Ignored.
std::string_view stryker_mutant_status(MutantStatus status);

struct MutantOutcome {
  Mutant mutant;
  MutantStatus status = MutantStatus::survived;
  std::string reason;
  std::string killer_gate, killer_term;
  double margin = 0.0;  // the killer's error over its bar (inf: NaN/inf outputs)
  std::vector<std::string> killed_by;
  int gates_run = 0;
  std::vector<std::string> changed_outputs;  // a survivor's gates whose outputs differ
  double seconds = 0.0;
  // the sanitizer pass (--sanitize): its tool and what it found ("" clean)
  std::string sanitizer, sanitizer_finding;
};

// What a child `gate run --mutant ID` left: how it ended and, when it wrote
// one, its report's gates.
struct MutantRun {
  int exit_code = -1, signal = 0;
  bool timed_out = false;
  double seconds = 0.0, timeout_s = 0.0;
  std::string tail;
  std::optional<nlohmann::json> report;  // null: none, or not readable
  std::string report_problem;
  std::string finding;  // under a sanitizer: what it reported ("" none)
};
// The status of a reached mutant from its run, against the baseline's output
// digests (gate -> outputs_sha256).
MutantOutcome judge_mutant(const Mutant& mutant, const MutantRun& run,
                           const std::map<std::string, std::string>& baseline_digests);

// The first error a sanitizer printed in `log`, as "kind: line" ("" none):
// AddressSanitizer's and UBSan's ERROR and runtime error lines, a failed
// assertion (Eigen's bounds checks), compute-sanitizer's memcheck, racecheck
// and synccheck errors. `exit_code` 86 is the sanitizers' exit code here: a
// run that exits with it and prints nothing known is still a finding.
std::string sanitizer_finding(const std::string& log, int exit_code, int signal);
inline constexpr int kSanitizerExitCode = 86;
// A mutant that went undetected (Survived, NoEffect), run again under a
// sanitizer: Killed (by the sanitizer, or by a gate red there), else as it was.
MutantOutcome judge_sanitized(const MutantOutcome& before, const MutantRun& run,
                              const std::string& tool);

// Which mutants a run takes: those of `ids` (all when empty; an unknown id is
// an InputError), then shard i of n (by list order), then at most `max`
// spread evenly over what is left (0: all).
std::vector<Mutant> choose_mutants(const std::vector<Mutant>& all, const std::vector<int>& ids,
                                   int shard_index, int shard_count, int max);

// How many mutants ended in each status, and the score: killed / (killed +
// survived); NaN when neither happened.
struct Score {
  std::map<MutantStatus, int> counts;
  int operator[](MutantStatus status) const;
  double score() const;
  nlohmann::json to_json() const;  // each status's count, score, score_text
};
Score score_of(const std::vector<MutantOutcome>& outcomes);

struct MutateOptions {
  std::vector<std::string> files;      // relative to the source top
  std::vector<std::string> operators;  // empty: all of mutants.py's
  std::vector<int> ids;
  int shard_index = 1, shard_count = 1, max = 0;
  std::filesystem::path fixtures_dir = "fixtures";
  std::filesystem::path source_dir;
  std::vector<std::string> backends = {"cpu-chunk", "cpu-recurrent"};
  std::vector<std::string> gate_globs;
  double timeout_s = 120.0;       // per mutant
  double build_timeout_s = 3600;  // per build round
  bool all_gates = false;         // every gate per mutant, not only to the first red
  int build_jobs = 2;
  int parallel = 1;  // mutants run at once, each child's kernels on cores / parallel threads
  std::string python = "python3";
  // mutants.py's list made beforehand (a machine without libclang: the GPU's);
  // empty: listed here
  std::filesystem::path mutants_list;
  // mutate a copy of the working tree as it is (uncommitted edits too), not a
  // worktree of HEAD (a tree without .git is always copied)
  bool working_tree = false;
  // the undetected mutants (Survived, NoEffect) run again under a sanitizer:
  // CPU backends in a build under ASan + UBSan with Eigen's asserts on; CUDA
  // backends under compute-sanitizer (memcheck; racecheck too
  // where the mutant deletes a barrier); on the gates of sanitize_globs
  // (empty: every gate of the run)
  bool sanitize = false;
  std::vector<std::string> sanitize_globs;
  std::string compute_sanitizer = "compute-sanitizer";
  // the journal: each mutant's result appended as it ends; the results it
  // holds already are taken, those mutants not run again (empty: none)
  std::filesystem::path journal;
  std::function<void(const std::string&)> progress = [](const std::string&) {};
};

// The journal (--journal F) keeps a long run's results through its end coming
// early (a machine taken back, ^C, a timeout of the caller): one JSON line per
// result as it comes, the run's phase (the gates, the sanitizer pass) with it.
// A run given the journal again takes what it holds and runs only the rest.
// Line 1 names what the results depend on (the files, the backends, the
// gates, first red or all, the timeout, the sanitizer's gates); a journal of
// another set-up, or of another list of mutants, is refused.
inline constexpr const char* kMutateJournalFormat = "deltaproof-mutate-journal/1";
enum class JournalPhase { gates, sanitize };
nlohmann::json journal_header(const MutateOptions& options);
nlohmann::json journal_line(const MutantOutcome& outcome, JournalPhase phase);
struct Journal {
  std::map<int, MutantOutcome> gates, sanitize;  // id -> its last result of each phase
  int results = 0;
  int cut_lines = 0;  // lines cut short by a run's end (not JSON), left out
};
// Reads `path` (a missing file: an empty journal); `all` is this run's list.
// Throws InputError naming the file and the line.
Journal read_journal(const std::filesystem::path& path, const nlohmann::json& header,
                     const std::vector<Mutant>& all);
// Appends `line` to `path` (writing `header` first in a new file) and flushes.
void append_journal(const std::filesystem::path& path, const nlohmann::json& header,
                    const nlohmann::json& line);

struct MutateResult : RunRecord {  // RunRecord::outcomes stays empty
  std::string head;
  int mutants_found = 0;
  std::map<std::string, std::string> sources;  // file -> its text at HEAD
  std::vector<MutantOutcome> mutants;
  std::vector<std::string> gates;  // the gates, in the order each mutant runs them
  int build_rounds = 0;
  double build_seconds = 0.0, baseline_seconds = 0.0;
  int points_reached = 0;
  int from_journal = 0;  // results taken from the journal, not run
  struct SanitizePass {
    bool ran = false, baseline_clean = false;
    std::string tools, problem;
    int rerun = 0, killed = 0;
    std::vector<std::string> gates;
    double build_seconds = 0.0, seconds = 0.0;
  } sanitize;
  bool passed() const;  // baseline green, tree unchanged, not interrupted
};

MutateResult run_mutate(const MutateOptions& options);

nlohmann::json mutate_report(const MutateResult& result, const MutateOptions& options,
                             const std::string& command);
bool is_mutate_report(const nlohmann::json& report);
// The lines a report's mutant (its offset, length and replacement) touches
// in `source`: before and after the edit.
struct MutantDiff {
  std::vector<std::string> before, after;
};
MutantDiff mutant_diff(const std::string& source, const nlohmann::json& mutant);
// `deltaproof report show` of a mutation report: the score in all, per file
// and per operator, the statuses, and every survivor with its source line and
// the diff (every mutant with all_mutants).
void print_mutate_report(const nlohmann::json& report, bool all_mutants);

}  // namespace deltaproof::falsify

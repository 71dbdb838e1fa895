// gates/report_file.hpp — a deltaproof-report/1 read back from a file: parsed,
// validated against reports/schema/report-v1.schema.json (compiled in, so the
// schema is the one statement of what a report holds), and typed, each gate
// through read_gate_result. One reader for `report show`, `report diff` and
// the campaign's child reports; and the diff of two reports, term by term.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/names.hpp"
#include "gates/runner.hpp"

namespace deltaproof::gates {

struct ReportFile {
  std::filesystem::path path;
  std::string schema, tool, git_commit, created, device, command;
  std::string host_name, host_system;
  int host_cpus = 0;
  Verdict verdict = Verdict::fail;
  std::vector<GateResult> gates;
};

// Reads `path`. Throws InputError with one sentence naming the file and, for
// a report the schema refuses, the gate, the term and the field: "r.json: gate
// 3 ('gdn2.cpu-chunk.t40-c16.bwd'), term 'dq' has no 'rel' field, ...".
ReportFile read_report_file(const std::filesystem::path& path);

// What the schema says is wrong with `report`, as read_report_file's sentence
// without the file name; "" when it validates.
std::string report_schema_problem(const nlohmann::json& report);

// ---- diff -------------------------------------------------------------------

// B's rel over A's above this (a 10% growth) is worse; A's over B's, better.
inline constexpr double kWorseRatio = 1.1;

enum class Change { same, better, worse };
inline constexpr std::pair<Change, std::string_view> kChangeNames[] = {
    {Change::same, "same"}, {Change::better, "better"}, {Change::worse, "worse"}};
// "same", "better" or "worse", as the diff's views write it.
constexpr std::string_view change_name(Change change) { return name_of(kChangeNames, change); }

// One term of a gate in both reports, or in one of them (the other null).
struct TermChange {
  const TermComparison* a = nullptr;
  const TermComparison* b = nullptr;
  Change change = Change::same;
  bool turned_red = false;  // passed in A, does not pass in B
};

struct GateChange {
  const GateResult* a = nullptr;
  const GateResult* b = nullptr;
  std::vector<TermChange> terms;  // A's in A's order, then those only in B
};

struct ReportDiff {
  std::vector<GateChange> gates;  // the gates in both, in A's order
  std::vector<const GateResult*> only_a, only_b;
  int worse = 0, better = 0, same = 0, verdicts_changed = 0;
  // "gate NAME" for a verdict pass -> fail, "NAME term T" for a term that
  // passed in A and does not in B
  std::vector<std::string> turned_red;
};

// Matches gates by name and terms by term; throws InputError naming the file
// when a report holds a gate, or a gate a term, twice.
ReportDiff diff_reports(const ReportFile& a, const ReportFile& b);

// rel as a report means it: a null rel (read as inf) is inf when the
// candidate held NaN or inf, and nothing measured otherwise.
bool rel_infinite(const TermComparison& term);
bool rel_measured(const TermComparison& term);

// A metamorphic relation's term compared bit for bit (no bar); split-call's
// splits inside a chunk carry the oracle's bar instead.
bool is_bitwise(const GateResult& gate, const TermComparison& term);

// A report's gates by verdict, and their time.
struct GateCounts {
  int passed = 0, failed = 0, skipped = 0;
  double seconds = 0.0;
};
GateCounts count_gates(const ReportFile& report);

}  // namespace deltaproof::gates

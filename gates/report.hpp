// gates/report.hpp — the JSON report of a gate run (DESIGN.md section 7),
// versioned by reports/schema/report-v1.schema.json: tool version, git commit,
// host and device, the command, and per gate the fixture (path, sha256, spec),
// backend and execution record, per-term rows, bars with evidence, verdict,
// determinism and timings.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gates/runner.hpp"

namespace deltaproof::gates {

inline constexpr const char* kReportSchema = "deltaproof-report/1";
inline constexpr const char* kToolVersion = "deltaproof 0.1.0";

nlohmann::json make_report(const std::vector<GateResult>& results, const std::string& command);
// The text a report file holds: make_report's JSON indented by 2, and a newline.
std::string report_text(const std::vector<GateResult>& results, const std::string& command);

// What `gate run` and `gate check` print for a result: one line of the verdict
// word (as given: the CLI paints it on a terminal), the gate's name, its worst
// term against its bar (or its relations' count) and its time; below it each
// reason of a gate that is not green (red terms, worst index, red chunks).
std::string result_lines(const GateResult& r, const std::string& verdict_word);
// The table `gate check` prints above that line: per term its status, the
// class's baseline error, the candidate's, the bar, the margin, alpha and its
// allowed band, the minimum detectable scaling and the worst index.
std::string check_table(const GateResult& r);

// One gate of a report read back (a report written by another process): what
// GateResult::to_json wrote, but a term's noise figures. A figure written as
// null (NaN or inf) reads back as inf. Throws InputError naming the gate and
// the field on an unknown verdict or term status, or a field of the wrong type.
GateResult read_gate_result(const nlohmann::json& gate);

// "abc123..." or "abc123...+dirty", or "unknown" outside a git checkout.
std::string git_commit();

}  // namespace deltaproof::gates

// falsify/report.hpp — a campaign's report in Stryker's mutation-testing-report
// schema, version 2 (reports/schema/mutation-testing-report-v2.schema.json),
// the fields mutation-testing-elements reads (not tried here: it ships on
// npm only; `report html` renders the campaign): files -> mutants with id,
// mutatorName, location, status, statusReason, killedBy. Ours beside them, in
// each mutant: gate, term, margin, expected, sourceSha256, deltaproofStatus
// (KilledWrongTerm and GreenBroken map to Stryker's Survived); and a top-level
// "deltaproof" object: header, baselines, tree check, every fault's outcome,
// each gate's separation (clean error beside the smallest fault error).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "falsify/campaign.hpp"

namespace deltaproof::falsify {

inline constexpr const char* kFalsifyReportFormat = "deltaproof-falsify-report/1";

// Where a mutant sits: the marker's line and columns in the file (1-based).
struct MutantSite {
  std::string file;  // relative to the source tree
  int line = 1, column = 1, end_line = 1, end_column = 2;
  bool found = false;
};
MutantSite locate(const std::filesystem::path& top, const std::string& file,
                  const std::string& marker);

// Stryker's status for ours: Killed, Survived (also KilledWrongTerm and
// GreenBroken: an expectation broken), CompileError, RuntimeError, Timeout, Ignored.
std::string_view stryker_status(FaultStatus status);

struct ReportMutant {
  FaultOutcome outcome;
  std::string what;
  nlohmann::json expected;
  MutantSite site;
  std::string source;  // the file's text when not read from the tree (a patched file)
};

// `header` becomes the "deltaproof" object (with "faults" added from the mutants).
nlohmann::json stryker_report(const std::filesystem::path& top,
                              const std::vector<ReportMutant>& mutants, nlohmann::json header);

// The "deltaproof" object of a campaign's or a patch run's report: the
// header of deltaproof-report/1 (tool, commit, host, device, command), the
// baselines, the tree check, the separation table, the statuses' counts and
// the verdict.
nlohmann::json report_header(const RunRecord& record, const std::string& command,
                             const std::string& catalog, const std::vector<std::string>& backends,
                             const std::string& shard, const std::vector<Separation>& separation,
                             bool passed);

// A file's text, or "" when it cannot be read.
std::string read_text(const std::filesystem::path& path);

// The whole campaign as a report.
nlohmann::json campaign_report(const CampaignResult& result, const Catalog& catalog,
                               const CampaignOptions& options, const std::string& command);

// `deltaproof report show` of a falsify report: faults, killers, margins,
// baselines, the tree check, and each gate's separation with the weak ones.
void print_falsify_report(const nlohmann::json& report, bool all_gates);
bool is_falsify_report(const nlohmann::json& report);
// A Stryker report deltaproof wrote (a campaign's, a patch run's or a mutation
// run's: dispatch on is_falsify_report / is_mutate_report) at `path`, parsed
// once; null when it holds something else (not JSON, or another report: read
// it as a gate report, whose reader names the problem) or cannot be read.
nlohmann::json stryker_report_at(const std::filesystem::path& path);

// Stryker's entry for one file (language, source, its sha256, no mutant yet)
// and the report around `files` (schemaVersion 2, the framework, our header).
nlohmann::json stryker_file(const std::string& file, const std::string& source);
nlohmann::json stryker_envelope(const std::filesystem::path& top, nlohmann::json files,
                                nlohmann::json header, int high, int low);

}  // namespace deltaproof::falsify

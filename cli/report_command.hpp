// cli/report_command.hpp — `deltaproof report show|diff`: reading the JSON
// reports of `deltaproof gate run|check --report FILE` (deltaproof-report/1,
// reports/schema/report-v1.schema.json).
//   deltaproof report show FILE   (a falsify report: faults, killers, margins,
//                                 baselines, each weak gate's separation)
//                                 the run's header, a table of every gate and
//                                 term (rel, bar, margin, worst index, status),
//                                 per-chunk figures, the reasons of red gates
//   deltaproof report diff A B    per gate and term: rel in A and B, their
//                                 ratio, better / worse / same; --html FILE
//                                 also writes the diff as a page
//   deltaproof report html R... -o FILE
//                                 one self-contained HTML page of gate and
//                                 campaign reports (reports/html/)
// Exit codes: 0 shown, or nothing turned red; 1 (diff) a gate or term that
// passed in A does not pass in B; 2 usage or input error (a missing file, not
// JSON, not a deltaproof-report/1, a gate or term lacking a field).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltaproof::cli {

struct ReportArguments {
  std::string file;           // show
  bool all_gates = false;     // show, falsify report: every gate's separation, not the weak ones
  std::string before, after;  // diff: A and B
  std::string diff_html;      // diff: also write the page here
  std::vector<std::string> html_inputs;  // html: the reports
  std::string html_out;                  // html: the page
  CLI::App* show = nullptr;
  CLI::App* diff = nullptr;
  CLI::App* html = nullptr;
};

void add_report_command(CLI::App& app, ReportArguments& args);
int run_report_command(const ReportArguments& args);

}  // namespace deltaproof::cli

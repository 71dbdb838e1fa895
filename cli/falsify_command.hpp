// cli/falsify_command.hpp — `deltaproof falsify list|run|patch` (DESIGN.md
// section 6, falsify/campaign.hpp, falsify/patch.hpp).
//   falsify list                 the catalog: id, class, mechanism, where, what
//   falsify run [--fault ID...] [--backend B...] [--shard i/n] [--report FILE]
//                                a campaign (needs the falsify build)
//   falsify mutate [FILE...] [--operators LIST] [--ids LIST] [--max N] [--shard i/n]
//                                the gates' mutation score over kernel sources
//                                (falsify/mutate.hpp); exit 1 also when the
//                                score is below --min-score
//   falsify patch FILE.patch     an ad-hoc hypothesis in a scratch worktree
//   falsify precision --precision bf16|tf32 [--fixture F...] [--candidate C...]
//                     [--backend cpu-chunk|cuda-chunk]
//                                graded and catalog faults against a precision
//                                class's noise-calibrated gates (falsify/precision.hpp)
// Exit codes: 0 every fault killed as the catalog expects (patch: the gates
// caught it); 1 a fault survived, an expectation broke, a baseline failed or a
// tracked file changed; 2 usage or input error; 77 nothing to run (no selected
// fault lives in a selected backend: ctest's SKIP); 130 interrupted.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltaproof::cli {

struct FalsifyArguments {
  std::string catalog, fixtures_dir, source_dir, report;
  std::vector<std::string> faults, backends, gates, sync_binaries;
  std::string shard = "1/1";
  double timeout_s = 600.0;
  int jobs = 0;
  std::string patch;
  std::vector<std::string> expect_red, expect_green;
  bool keep = false;
  std::string precision = "bf16";
  std::vector<std::string> fixtures, candidates;
  std::string twin = "cpu-chunk";
  bool report_graded_only = false;
  std::vector<std::string> mutate_files, operators;
  std::vector<int> ids;
  int max = 0;
  double mutant_timeout_s = 120.0;
  double min_score = 0.0;
  bool all_gates = false;
  std::string python = "python3";
  int parallel = 1;
  bool working_tree = false;
  std::string mutants_list;
  std::string journal;  // falsify mutate --journal
  bool sanitize = false;
  std::vector<std::string> sanitize_gates;
  std::string compute_sanitizer = "compute-sanitizer";
  CLI::App* mutate = nullptr;
  CLI::App* list = nullptr;
  CLI::App* precision_command = nullptr;
  CLI::App* run = nullptr;
  CLI::App* patch_command = nullptr;
};

void add_falsify_command(CLI::App& app, FalsifyArguments& args);
int run_falsify_command(const FalsifyArguments& args, const std::string& command_line,
                        const std::string& self_exe);

}  // namespace deltaproof::cli

// cli/falsify_command.cpp — `deltaproof falsify`. See falsify_command.hpp.
#include "cli/falsify_command.hpp"

#include "cli/gate_command.hpp"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "falsify/campaign.hpp"
#include "falsify/catalog.hpp"
#include "falsify/mutate.hpp"
#include "falsify/patch.hpp"
#include "falsify/precision.hpp"
#include "falsify/report.hpp"
#include "gates/registry.hpp"
#include "kernels/backend.hpp"
#include "kernels/faults.hpp"

namespace deltaproof::cli {
namespace fs = std::filesystem;

void add_falsify_command(CLI::App& app, FalsifyArguments& a) {
  CLI::App* falsify =
      app.add_subcommand("falsify", "Falsification campaigns: prove every gate can fail");
  falsify->require_subcommand(1);
  auto common = [&a](CLI::App* c) {
    c->add_option("--backend", a.backends,
                  "backends under test (run: the CPU ones, and the CUDA ones where a GPU is; "
                  "patch: cpu-chunk)");
    c->add_option("--gates", a.gates, "only the gates matching these globs");
    c->add_option("--report", a.report, "write the report (Stryker schemaVersion 2) to FILE");
    c->add_option("--fixtures", a.fixtures_dir, "the fixtures folder (default: fixtures)");
    c->add_option("--source", a.source_dir,
                  "the source tree hashed before and after (default: this build's)");
    c->add_option("--jobs", a.jobs, "build jobs for sync-fault and patch builds (default: CPUs)");
  };
  a.list = falsify->add_subcommand("list", "List the fault catalog");
  a.list->add_option("--catalog", a.catalog, "the catalog (default: falsify/catalog.json)");

  a.run = falsify->add_subcommand("run", "Run a campaign over the catalog (the falsify build)");
  a.run->add_option("--fault", a.faults, "only these fault ids (default: the whole catalog)");
  a.run->add_option("--shard", a.shard, "run shard i of n of the faults, e.g. 2/4")
      ->capture_default_str();
  a.run->add_option("--catalog", a.catalog, "the catalog (default: falsify/catalog.json)");
  a.run->add_option("--timeout", a.timeout_s, "seconds per fault before it is a Timeout")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  a.run->add_option("--sync-binary", a.sync_binaries,
                    "ID=PATH: a prebuilt deltaproof of a sync fault (else it is built)");
  common(a.run);

  a.patch_command = falsify->add_subcommand(
      "patch", "Apply FILE.patch to a scratch worktree of HEAD, build there, run the gates");
  a.patch_command->add_option("patch", a.patch, "a unified diff (git diff > FILE.patch)")
      ->required();
  a.patch_command->add_option("--expect-red", a.expect_red, "gate globs that must go red");
  a.patch_command->add_option("--expect-green", a.expect_green, "gate globs that must stay green");
  a.patch_command->add_option("--timeout", a.timeout_s, "seconds for the build and for each run")
      ->check(CLI::PositiveNumber);
  a.patch_command->add_flag("--keep", a.keep,
                            "keep the patched scratch tree under /tmp for a post-mortem");
  common(a.patch_command);

  a.mutate = falsify->add_subcommand(
      "mutate",
      "Mutation testing: mutants of kernel sources (libclang), built as schemata in a scratch "
      "worktree of HEAD, each run against the gates; the score and every survivor");
  a.mutate->add_option("files", a.mutate_files,
                       "kernel sources, relative to the source tree (default: "
                       "kernels/cpu/chunk.cpp kernels/cpu/backends.cpp core/recurrence.hpp)");
  a.mutate
      ->add_option("--operators", a.operators,
                   "arith, relational, bound, index, constant, unary, delete, swap (default: all)")
      ->delimiter(',');
  a.mutate->add_option("--ids", a.ids, "only these mutant ids (mutants.py list)")->delimiter(',');
  a.mutate->add_option("--max", a.max, "at most N mutants, spread evenly over the list (0: all)")
      ->check(CLI::NonNegativeNumber);
  a.mutate->add_option("--shard", a.shard, "run shard i of n of the mutants, e.g. 2/4")
      ->capture_default_str();
  a.mutate->add_option("--timeout", a.mutant_timeout_s, "seconds per mutant before it is a Timeout")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  a.mutate->add_flag("--all-gates", a.all_gates,
                     "run every gate per mutant (default: stop at the first red one)");
  a.mutate
      ->add_option("--min-score", a.min_score,
                   "exit 1 when killed / (killed + survived) is below this (0 to 1)")
      ->check(CLI::Range(0.0, 1.0));
  a.mutate->add_option("--python", a.python, "the python3 with libclang's bindings")
      ->capture_default_str();
  a.mutate->add_option("--parallel", a.parallel, "mutants run at once (cores shared among them)")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  a.mutate->add_flag("--working-tree", a.working_tree,
                     "mutate a copy of the working tree as it is, uncommitted edits too "
                     "(default: a worktree of HEAD)");
  a.mutate
      ->add_option("--mutants", a.mutants_list,
                   "mutants.py's list made beforehand (a machine without libclang)")
      ->check(CLI::ExistingFile);
  a.mutate->add_option("--journal", a.journal,
                       "append each mutant's result to FILE as it ends; the results FILE holds "
                       "already (a run cut short) are taken, those mutants not run again");
  a.mutate->add_flag("--sanitize", a.sanitize,
                     "run the undetected mutants again under a sanitizer: CPU backends under "
                     "ASan + UBSan with Eigen's asserts (a second build), CUDA backends under "
                     "compute-sanitizer memcheck (and racecheck for a barrier deleted)");
  a.mutate->add_option("--sanitize-gates", a.sanitize_gates,
                       "the gates (globs) of the sanitizer pass (default: every gate of the run)");
  a.mutate->add_option("--compute-sanitizer", a.compute_sanitizer, "compute-sanitizer to run")
      ->capture_default_str();
  common(a.mutate);

  a.precision_command = falsify->add_subcommand(
      "precision",
      "Graded faults (and, in the falsify build, the catalog's kernel faults) against a "
      "precision class's noise-calibrated gates");
  a.precision_command->add_option("--precision", a.precision, "the class: bf16, tf32 or f32")
      ->capture_default_str();
  a.precision_command->add_option(
      "--fixture", a.fixtures,
      "fixtures (default: the committed K=V=64 ones, fixtures/*/t{64,192,200}-c64)");
  a.precision_command->add_option(
      "--candidate", a.candidates,
      "one candidate per --fixture, in order (default: --backend under the class's contract)");
  a.precision_command
      ->add_option("--backend", a.twin,
                   "the twin run under the class's contract as the candidate, its catalog "
                   "faults switched on in a falsify build: cpu-chunk, or cuda-chunk on a GPU")
      ->capture_default_str();
  a.precision_command->add_flag(
      "--graded-not-required", a.report_graded_only,
      "report the graded faults without requiring them killed (fixtures too small to resolve "
      "the class's required scaling); the clean candidates and the catalog faults still count");
  a.precision_command->add_option("--report", a.report, "write the JSON report to FILE");
  a.precision_command->add_option("--fixtures", a.fixtures_dir,
                                  "the fixtures folder (default: fixtures)");
}

namespace {

std::pair<int, int> parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  try {
    if (slash != std::string::npos) {
      const int i = std::stoi(text.substr(0, slash)), n = std::stoi(text.substr(slash + 1));
      if (n >= 1 && i >= 1 && i <= n) return {i, n};
    }
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("--shard {}: expected i/n with 1 <= i <= n, e.g. 1/4", text));
}

void progress(const std::string& line) {
  fmt::print("{}\n", line);
  std::fflush(stdout);
}

int list(const FalsifyArguments& a) {
  const auto catalog = falsify::load_catalog(source_file(a.catalog, "falsify/catalog.json"));
  fmt::print("{:<34} {:<10} {:<11} {:<40} {}\n", "fault", "class", "mechanism", "lives in", "what");
  for (const auto& f : catalog.faults) {
    std::vector<std::string> where;
    for (const auto& at : f.injected_at) where.push_back(at.backend);
    fmt::print("{:<34} {:<10} {:<11} {:<40} {}\n", f.id, f.cls,
               falsify::mechanism_name(f.mechanism), fmt::format("{}", fmt::join(where, ", ")),
               f.what);
  }
  fmt::print("{} faults ({})\n", catalog.faults.size(), catalog.path.string());
  return 0;
}

int jobs_or_cpus(int jobs) {
  return jobs > 0 ? jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Prints each changed tracked file, then how a run stopped before its
// verdict: 130 when interrupted, 1 when a baseline failed, else 0.
int stopped_early(const falsify::RunRecord& result, const char* run, const char* not_run) {
  for (const auto& change : result.tree_changes) fmt::print("  tree: {}\n", change);
  if (result.interrupted) {
    fmt::print("interrupted: the {} stopped; the tree was checked after.\n", run);
    return 130;
  }
  if (!result.baseline_ok) {
    fmt::print("verdict FAIL: the baseline failed, so {} (see above)\n", not_run);
    return 1;
  }
  return 0;
}

int run(const FalsifyArguments& a, const std::string& command_line, const std::string& self_exe) {
  if (!kernels::kFaultsCompiledIn)
    throw InputError(
        "falsify run needs the falsify build, whose fault points switch at run time: "
        "cmake --preset falsify && cmake --build build-falsify, then "
        "build-falsify/bin/deltaproof falsify run");
  const auto catalog = falsify::load_catalog(source_file(a.catalog, "falsify/catalog.json"));
  check_report_folder(a.report);
  falsify::CampaignOptions options;
  options.fixtures_dir = fixtures_folder(a.fixtures_dir);
  options.source_dir =
      a.source_dir.empty() ? fs::path(DELTAPROOF_SOURCE_DIR) : fs::path(a.source_dir);
  options.backends = a.backends;
  if (options.backends.empty()) {
    options.backends = {"cpu-chunk", "cpu-recurrent"};
    if (kernels::gpu_available()) {
      options.backends.push_back("cuda-chunk");
      options.backends.push_back("cuda-recurrent");
    }
  }
  for (const auto& b : options.backends) kernels::find_backend(b);  // names the known ones
  options.fault_ids = a.faults;
  options.gate_globs = a.gates;
  std::tie(options.shard_index, options.shard_count) = parse_shard(a.shard);
  options.timeout_s = a.timeout_s;
  options.self_exe = self_exe;
  for (const auto& pair : a.sync_binaries) {
    const auto eq = pair.find('=');
    if (eq == std::string::npos || !fs::exists(pair.substr(eq + 1)))
      throw InputError(
          fmt::format("--sync-binary {}: expected ID=PATH naming an existing deltaproof built with "
                      "-DDELTAPROOF_SYNC_FAULT=ID",
                      pair));
    options.sync_binaries[pair.substr(0, eq)] = pair.substr(eq + 1);
  }
  options.sync_build_root = fs::path(self_exe).parent_path().parent_path().parent_path();
  options.build_jobs = jobs_or_cpus(a.jobs);
  options.progress = progress;
  fmt::print("falsify: {} faults in {}, shard {}, backends {}\n", catalog.faults.size(),
             catalog.path.string(), a.shard, fmt::join(options.backends, ", "));
  const falsify::CampaignResult result = falsify::run_campaign(catalog, options);
  if (!a.report.empty()) {
    write_text_atomically(
        a.report, falsify::campaign_report(result, catalog, options, command_line).dump(2) + "\n");
    fmt::print("report: {}\n", a.report);
  }
  std::map<std::string, int> counts;
  for (const auto& o : result.outcomes) ++counts[std::string(falsify::status_name(o.status))];
  std::vector<std::string> count_text;
  for (const auto& [status, n] : counts) count_text.push_back(fmt::format("{} {}", n, status));
  if (count_text.empty()) count_text.push_back("none");
  int weak = 0;
  for (const auto& s : result.separation) weak += s.weak;
  fmt::print(
      "\n{} faults ran: {}; {} weak gates (separation < 10x); {} tracked files {} "
      "({:.1f} s)\n",
      result.outcomes.size(), fmt::join(count_text, ", "), weak, result.tracked_files,
      result.tree_changes.empty() ? "unchanged" : "CHANGED", result.seconds);
  if (const int code = stopped_early(result, "campaign", "no fault ran")) return code;
  const bool nothing_ran =
      !result.outcomes.empty() &&
      std::all_of(result.outcomes.begin(), result.outcomes.end(),
                  [](const auto& o) { return o.status == falsify::FaultStatus::ignored; });
  if (nothing_ran && result.tree_changes.empty()) {
    fmt::print("nothing to run: no selected fault lives in a selected backend (exit 77)\n");
    return 77;
  }
  fmt::print("verdict {}\n", result.passed() ? "PASS" : "FAIL");
  return result.passed() ? 0 : 1;
}

int patch(const FalsifyArguments& a, const std::string& command_line) {
  check_report_folder(a.report);
  falsify::PatchOptions options;
  options.patch = a.patch;
  options.fixtures_dir = fixtures_folder(a.fixtures_dir);
  options.source_dir =
      a.source_dir.empty() ? fs::path(DELTAPROOF_SOURCE_DIR) : fs::path(a.source_dir);
  if (!a.backends.empty()) options.backends = a.backends;
  for (const auto& b : options.backends) kernels::find_backend(b);
  options.gate_globs = a.gates;
  options.expect_red = a.expect_red;
  options.expect_green = a.expect_green;
  if (a.timeout_s != 600.0) options.timeout_s = a.timeout_s;
  options.build_jobs = jobs_or_cpus(a.jobs);
  options.keep = a.keep;
  options.progress = progress;
  const falsify::PatchResult result = falsify::run_patch(options);
  if (!a.report.empty()) {
    write_text_atomically(a.report,
                          falsify::patch_report(result, options, command_line).dump(2) + "\n");
    fmt::print("report: {}\n", a.report);
  }
  for (const auto& o : result.outcomes) {
    fmt::print("{} on {}: {}: {}\n", a.patch, o.backend, falsify::status_name(o.status), o.reason);
    for (std::size_t i = 0; i < o.broken.size() && i < 6; ++i) fmt::print("    {}\n", o.broken[i]);
  }
  fmt::print("{} tracked files {}; scratch worktree removed\n", result.tracked_files,
             result.tree_changes.empty() ? "unchanged" : "CHANGED");
  if (const int code = stopped_early(result, "patch campaign", "the patch did not run"))
    return code;
  fmt::print("verdict {}\n", result.killed() ? "PASS (the gates caught the patch)"
                                             : "FAIL (see the statuses above)");
  return result.killed() ? 0 : 1;
}

int mutate(const FalsifyArguments& a, const std::string& command_line) {
  check_report_folder(a.report);
  falsify::MutateOptions options;
  options.files = a.mutate_files;
  if (options.files.empty())
    options.files = {"kernels/cpu/chunk.cpp", "kernels/cpu/backends.cpp", "core/recurrence.hpp"};
  options.operators = a.operators;
  options.ids = a.ids;
  options.max = a.max;
  std::tie(options.shard_index, options.shard_count) = parse_shard(a.shard);
  options.fixtures_dir = fs::absolute(fixtures_folder(a.fixtures_dir));
  options.source_dir =
      a.source_dir.empty() ? fs::path(DELTAPROOF_SOURCE_DIR) : fs::path(a.source_dir);
  if (!a.backends.empty()) options.backends = a.backends;
  for (const auto& b : options.backends) kernels::find_backend(b);
  options.gate_globs = a.gates;
  options.timeout_s = a.mutant_timeout_s;
  options.all_gates = a.all_gates;
  options.build_jobs = jobs_or_cpus(a.jobs);
  options.python = a.python;
  options.parallel = a.parallel;
  options.working_tree = a.working_tree;
  options.mutants_list = a.mutants_list;
  options.sanitize = a.sanitize;
  options.journal = a.journal;
  options.sanitize_globs = a.sanitize_gates;
  options.compute_sanitizer = a.compute_sanitizer;
  options.progress = progress;
  const falsify::MutateResult result = falsify::run_mutate(options);
  const nlohmann::json report = falsify::mutate_report(result, options, command_line);
  if (!a.report.empty()) {
    write_text_atomically(a.report, report.dump(2) + "\n");
    fmt::print("report: {}\n", a.report);
  }
  const nlohmann::json& summary = report["deltaproof"]["summary"];
  std::vector<std::string> counts;
  for (const auto& [status, n] : summary["statuses"].items())
    if (n.is_number_integer() && n.get<int>() > 0)
      counts.push_back(fmt::format("{} {}", n.get<int>(), status));
  fmt::print(
      "\n{} of {} mutants ran{}: {}; {} tracked files {} ({:.0f} s)\n", result.mutants.size(),
      result.mutants_found,
      result.from_journal ? fmt::format(" ({} results from the journal)", result.from_journal)
                          : std::string(),
      counts.empty() ? "none" : fmt::format("{}", fmt::join(counts, ", ")), result.tracked_files,
      result.tree_changes.empty() ? "unchanged" : "CHANGED", result.seconds);
  if (const int code = stopped_early(result, "mutation run", "no mutant ran")) return code;
  const double score = falsify::score_of(result.mutants).score();
  fmt::print("mutation score {} = killed / (killed + survived), NoEffect set aside\n",
             summary.value("score_text", "-"));
  if (a.min_score > 0 && !(score >= a.min_score)) {
    fmt::print("verdict FAIL: the score is below --min-score {:.1f}%\n", 100 * a.min_score);
    return 1;
  }
  if (!result.sanitize.problem.empty())
    fmt::print("the sanitizer pass stopped: {}\n", result.sanitize.problem);
  fmt::print("verdict {}\n", result.passed() ? "PASS" : "FAIL");
  return result.passed() ? 0 : 1;
}

}  // namespace

// `falsify precision`: prints each fault's kills over the fixtures, then what
// did not hold.
int precision_campaign(const FalsifyArguments& a, const std::string& command_line) {
  const kernels::Precision precision = precision_class(a.precision);
  check_report_folder(a.report);
  falsify::PrecisionCampaignOptions options;
  options.precision = precision;
  if (a.fixtures.empty()) {
    const fs::path folder = fixtures_folder(a.fixtures_dir);
    for (const char* op : {"gdn2", "kda", "gdn"})
      for (const char* name : {"t64-c64", "t192-c64", "t200-c64"})
        options.fixtures.push_back(folder / op / fmt::format("{}.safetensors", name));
  } else {
    options.fixtures.assign(a.fixtures.begin(), a.fixtures.end());
  }
  options.candidates.assign(a.candidates.begin(), a.candidates.end());
  options.require_graded = !a.report_graded_only;
  options.backend = a.twin;
  options.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  const falsify::PrecisionCampaign c = falsify::run_precision_campaign(options);

  // one line per fault: killed on how many fixtures, by what, the smallest margin
  struct Tally {
    int runs = 0, killed = 0;
    double smallest = std::numeric_limits<double>::infinity(), largest_survivor = 0.0;
    std::string killer;
  };
  std::vector<std::string> order;
  std::map<std::string, Tally> tally;
  for (const auto& o : c.outcomes) {
    if (!tally.count(o.fault)) order.push_back(o.fault);
    Tally& t = tally[o.fault];
    ++t.runs;
    if (o.killed) {
      ++t.killed;
      if (o.margin < t.smallest || t.killer.empty()) {
        t.smallest = o.margin;
        t.killer = o.killer;
      }
    } else {
      t.largest_survivor = std::max(t.largest_survivor, o.margin);
    }
  }
  fmt::print("{} class, {}; {} fixtures\n", kernels::precision_name(c.precision),
             c.candidate_source, options.fixtures.size());
  fmt::print("{:<34} {:>7}  {:>10}  {}\n", "fault", "killed", "margin", "closest kill");
  for (const auto& fault : order) {
    const Tally& t = tally.at(fault);
    const std::string margin = t.killed == 0 ? fmt::format("({:.2f})", t.largest_survivor)
                               : std::isfinite(t.smallest) ? fmt::format("{:.2f}x", t.smallest)
                                                           : std::string("inf");
    fmt::print("{:<34} {:>3}/{:<3}  {:>10}  {}\n", fault, t.killed, t.runs, margin, t.killer);
  }
  for (const auto& line : c.unmet) fmt::print("UNMET {}\n", line);
  fmt::print("{}: {} runs in {:.1f} s\n",
             c.requirements_met() ? "every requirement held" : "requirements not met",
             c.outcomes.size(), c.seconds);
  if (!a.report.empty()) {
    write_text_atomically(a.report, c.to_json(command_line).dump(2) + "\n");
    fmt::print("report: {}\n", a.report);
  }
  return c.requirements_met() ? 0 : 1;
}

int run_falsify_command(const FalsifyArguments& a, const std::string& command_line,
                        const std::string& self_exe) {
  if (a.list->parsed()) return list(a);
  if (a.run->parsed()) return run(a, command_line, self_exe);
  if (a.precision_command->parsed()) return precision_campaign(a, command_line);
  if (a.mutate->parsed()) return mutate(a, command_line);
  return patch(a, command_line);
}

}  // namespace deltaproof::cli

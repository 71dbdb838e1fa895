// cli/gate_command.cpp — `deltaproof gate`. See gate_command.hpp.
#include "cli/gate_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "gates/instrument_faults.hpp"
#include "gates/noise.hpp"
#include "gates/registry.hpp"
#include "gates/report.hpp"
#include "kernels/mutants.hpp"
#include "oracle/coverage.hpp"

namespace deltaproof::cli {
namespace fs = std::filesystem;

std::string paint(const std::string& text, const char* colour) {
  static const bool terminal = ::isatty(STDOUT_FILENO) == 1;
  if (!terminal) return text;
  return fmt::format("\033[{}m{}\033[0m", colour, text);
}

void add_gate_command(CLI::App& app, GateArguments& a) {
  CLI::App* gate = app.add_subcommand("gate", "List, run and check gates");
  gate->require_subcommand(1);
  a.list = gate->add_subcommand("list", "List the gates whose names match GLOB (all by default)");
  a.list->add_option("patterns", a.patterns, "name globs, e.g. 'gdn2.cpu-chunk.*.bwd'");
  a.list->add_option("--fixtures", a.fixtures_dir, "the fixtures folder (default: fixtures)");

  a.run = gate->add_subcommand("run", "Run the gates named by NAME or GLOB");
  a.run->add_option("patterns", a.patterns, "gate names or globs")->required();
  a.run->add_option("--report", a.report, "write the JSON report to FILE");
  a.run->add_option("--repeat", a.repeat, "runs in this process, compared bitwise")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  a.run->add_option("--replay", a.replay, "extra runs in fresh processes, compared bitwise")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  a.run->add_option("--fixtures", a.fixtures_dir, "the fixtures folder (default: fixtures)");
  const char* noise_cache_help =
      "keep the noise models of bf16/tf32 bars in DIR and reuse them (same fixture, phase and "
      "class): a second kernel on a large fixture skips the ensemble's runs";
  a.run->add_option("--noise-cache", a.noise_cache, noise_cache_help);
  a.run
      ->add_option("--mutant", a.mutant,
                   "a mutation run's build (falsify mutate): switch mutant ID on (0: none)")
      ->check(CLI::Range(0, kernels::kMaxMutantId));
  a.run->add_option("--mutant-coverage", a.mutant_coverage,
                    "a mutation run's build: write the mutant points the gates reached to FILE "
                    "(JSON)");
  a.run->add_flag("--first-red", a.first_red, "stop at the first gate that is not green");
  if (kernels::kFaultsCompiledIn)
    a.run->add_option("--fault", a.fault,
                      "falsify build: switch one kernel or instrument fault on by id "
                      "(falsify/catalog.json)");

  a.check =
      gate->add_subcommand("check", "Gate a candidate computed by anything against a fixture");
  a.check->add_option("--fixture", a.fixture, "the fixture (reference)")->required();
  a.check->add_option("--candidate", a.candidate, "safetensors with o, ht and the gradients")
      ->required();
  a.check
      ->add_option("--precision", a.precision, "the candidate's precision class: f32, tf32, bf16")
      ->capture_default_str();
  a.check
      ->add_option("--phase", a.phase,
                   "fwd: compare o and ht only; bwd: every gradient too (default: bwd when the "
                   "candidate holds any gradient, else fwd, said so in the verdict)")
      ->check(CLI::IsMember({"fwd", "bwd"}));
  a.check->add_option("--report", a.report, "write the JSON report to FILE");
  a.check->add_option("--noise-cache", a.noise_cache, noise_cache_help);

  a.coverage = gate->add_subcommand(
      "coverage", "The declared coverage matrix and the canonical fixtures filling each cell");
  a.coverage->add_flag("--markdown", a.markdown, "the summary tables README.md shows");
}

fs::path fixtures_folder(const std::string& given) {
  if (!given.empty()) return given;
  if (fs::exists("fixtures/manifest.json")) return "fixtures";
  return fs::path(DELTAPROOF_SOURCE_DIR) / "fixtures";
}

fs::path source_file(const std::string& given, const char* relative) {
  if (!given.empty()) return given;
  if (fs::exists(relative)) return relative;
  return fs::path(DELTAPROOF_SOURCE_DIR) / relative;
}

void check_report_folder(const std::string& report) {
  if (!report.empty() && fs::path(report).has_parent_path() &&
      !fs::is_directory(fs::path(report).parent_path()))
    throw InputError(fmt::format(
        "--report {}: the folder does not exist; create it or choose another path.", report));
}

kernels::Precision precision_class(const std::string& name) {
  const auto precision = kernels::parse_precision(name);
  if (!precision)
    throw InputError(
        fmt::format("unknown precision class '{}'; pass --precision f32, tf32 or bf16.", name));
  return *precision;
}

namespace {

// One line per gate, the verdict painted on a terminal; the reasons of a gate
// that is not green below it.
void print_result(const gates::GateResult& r) {
  const std::string verdict = r.verdict == gates::Verdict::pass      ? paint("PASS", "32")
                              : r.verdict == gates::Verdict::skipped ? paint("SKIP", "33")
                                                                     : paint("FAIL", "31;1");
  fmt::print("{}", gates::result_lines(r, verdict));
}

void write_report(const std::string& path, const std::vector<gates::GateResult>& results,
                  const std::string& command) {
  if (path.empty()) return;
  write_text_atomically(path, gates::report_text(results, command));
  fmt::print("report: {}\n", path);
}

}  // namespace

int run_gate_command(const GateArguments& a, const std::string& command_line,
                     const std::string& self_exe) {
  if (!a.noise_cache.empty()) gates::set_noise_cache(a.noise_cache);
  if (a.coverage->parsed()) {
    const oracle::Coverage c = oracle::coverage_of(oracle::canonical_fixtures());
    if (a.markdown) {
      fmt::print("{}", c.markdown());
    } else {
      for (const auto& row : c.rows)
        fmt::print("{:<44} {:>3}  {}\n", row.cell.name(), row.fixtures.size(),
                   row.fixtures.empty() ? std::string("EMPTY") : row.fixtures.front());
      fmt::print("{} cells declared, {} empty (oracle/coverage.hpp)\n", c.rows.size(),
                 c.empty().size());
    }
    return c.empty().empty() ? 0 : 1;
  }
  if (a.list->parsed()) {
    const auto all = gates::all_gates(fixtures_folder(a.fixtures_dir));
    const auto chosen = a.patterns.empty() ? all : gates::select_gates(all, a.patterns);
    for (const auto& g : chosen)
      fmt::print("{:<48} {:<10} {}\n", g.name, gates::kind_name(g.kind), g.fixture);
    fmt::print("{} gates\n", chosen.size());
    return 0;
  }
  if (a.run->parsed()) {
    const auto chosen =
        gates::select_gates(gates::all_gates(fixtures_folder(a.fixtures_dir)), a.patterns);
    check_report_folder(a.report);
    gates::RunOptions options;
    options.fixtures_dir = fixtures_folder(a.fixtures_dir);
    options.repeat = a.repeat;
    options.replay = a.replay;
    options.self_exe = self_exe;
#ifdef DELTAPROOF_FALSIFY
    gates::set_active_fault(a.fault);
    options.fault = a.fault;
#endif
    kernels::set_active_mutant(a.mutant);
    options.digest_outputs = a.run->count("--mutant") > 0 || !a.mutant_coverage.empty();
    std::vector<gates::GateResult> results;
    int failed = 0, skipped = 0;
    for (const auto& gate : chosen) {
      results.push_back(gates::run_gate(gate, options));
      print_result(results.back());
      failed += results.back().verdict == gates::Verdict::fail;
      skipped += results.back().verdict == gates::Verdict::skipped;
      if (a.first_red && failed > 0) {
        fmt::print("--first-red: stopped after {} of {} gates\n", results.size(), chosen.size());
        break;
      }
    }
    if (!a.mutant_coverage.empty())
      write_text_atomically(a.mutant_coverage,
                            nlohmann::json(kernels::reached_mutants()).dump() + "\n");
    fmt::print("{} gates: {} passed, {} failed, {} skipped\n", results.size(),
               results.size() - failed - skipped, failed, skipped);
    write_report(a.report, results, command_line);
    return failed > 0 ? 1 : 0;
  }
  // check
  const kernels::Precision precision = precision_class(a.precision);
  std::optional<kernels::Phase> phase;
  if (!a.phase.empty()) phase = find_value(kernels::kPhaseNames, a.phase);  // CLI11 checked it
  const gates::GateResult r = gates::check_candidate(a.fixture, a.candidate, precision, phase);
  fmt::print("{}", gates::check_table(r));
  print_result(r);
  write_report(a.report, {r}, command_line);
  return r.passed() ? 0 : 1;
}

}  // namespace deltaproof::cli

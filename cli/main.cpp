// cli/main.cpp — the `deltaproof` executable. Exit codes: 0 success, 1 a check
// failed, 2 usage or input error.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/falsify_command.hpp"
#include "cli/gate_command.hpp"
#include "cli/gen_command.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "core/error.hpp"
#include "core/process.hpp"

namespace {
// The running executable (for --replay), from /proc, else argv[0].
std::string self_executable(const char* argv0) {
  std::error_code error;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string(argv0) : path.string();
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "deltaproof: an oracle and verification harness for chunked linear-attention "
      "kernels (gdn2, kda, gdn)"};
  app.require_subcommand(1);
  deltaproof::cli::GenArguments gen;
  deltaproof::cli::add_gen_command(app, gen);
  deltaproof::cli::RunArguments run;
  deltaproof::cli::add_run_command(app, run);
  deltaproof::cli::GateArguments gate;
  deltaproof::cli::add_gate_command(app, gate);
  deltaproof::cli::ReportArguments report;
  deltaproof::cli::add_report_command(app, report);
  deltaproof::cli::FalsifyArguments falsify;
  deltaproof::cli::add_falsify_command(app, falsify);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "deltaproof: {}\nRun 'deltaproof --help' for the options.\n", e.what());
    return 2;
  }
  try {
    if (app.got_subcommand("gen")) return deltaproof::cli::run_gen(gen);
    if (app.got_subcommand("run")) return deltaproof::cli::run_run(run);
    std::string command_line;
    for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
    if (app.got_subcommand("gate"))
      return deltaproof::cli::run_gate_command(gate, command_line, self_executable(argv[0]));
    if (app.got_subcommand("falsify"))
      return deltaproof::cli::run_falsify_command(falsify, command_line, self_executable(argv[0]));
    if (app.got_subcommand("report")) return deltaproof::cli::run_report_command(report);
  } catch (const deltaproof::Interrupted& e) {
    fmt::print(stderr, "deltaproof: {}\n", e.what());
    return 130;
  } catch (const deltaproof::InputError& e) {
    fmt::print(stderr, "deltaproof: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "deltaproof: internal error: {}\n", e.what());
    return 2;
  }
  return 2;
}

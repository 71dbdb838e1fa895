// cli/main.cpp — the `deltaproof` executable. Exit codes: 0 success, 1 a check
// failed, 2 usage or input error.
#include <cstdio>
#include <exception>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/gen_command.hpp"
#include "cli/run_command.hpp"
#include "core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{
      "deltaproof: an oracle and verification harness for chunked linear-attention "
      "kernels (gdn2, kda, gdn)"};
  app.require_subcommand(1);
  deltaproof::cli::GenArguments gen;
  deltaproof::cli::add_gen_command(app, gen);
  deltaproof::cli::RunArguments run;
  deltaproof::cli::add_run_command(app, run);
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
  } catch (const deltaproof::InputError& e) {
    fmt::print(stderr, "deltaproof: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "deltaproof: internal error: {}\n", e.what());
    return 2;
  }
  return 2;
}

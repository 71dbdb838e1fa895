// cli/run_command.hpp — `deltaproof run`: a backend on a fixture's inputs and
// cotangents, written as a candidate file.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace deltaproof::cli {

struct RunArguments {
  std::string backend;
  std::string fixture;
  std::string out;
  std::string phase = "bwd";
  std::string fault;
  std::string precision = "f32";
  int chunk = 0;
};

void add_run_command(CLI::App& app, RunArguments& args);
int run_run(const RunArguments& args);

}  // namespace deltaproof::cli

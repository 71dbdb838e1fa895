// cli/gate_command.hpp — `deltaproof gate list|run|check|coverage`.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kernels/precision.hpp"

namespace deltaproof::cli {

struct GateArguments {
  std::vector<std::string> patterns;
  std::string fixtures_dir;
  std::string report;
  int repeat = 1;
  int replay = 0;
  std::string fault;  // falsify build: one kernel fault switched on
  std::string fixture, candidate, precision = "f32", phase;
  std::string noise_cache;  // gates::set_noise_cache
  // a mutation run (kernels/mutants.hpp): the mutant switched on, where to
  // write the mutant points the run reached, stop at the first red gate
  int mutant = 0;
  std::string mutant_coverage;
  bool first_red = false;
  CLI::App* list = nullptr;
  CLI::App* run = nullptr;
  CLI::App* check = nullptr;
  CLI::App* coverage = nullptr;
  bool markdown = false;
};

void add_gate_command(CLI::App& app, GateArguments& args);
int run_gate_command(const GateArguments& args, const std::string& command_line,
                     const std::string& self_exe);

// The fixtures folder: `given`, else ./fixtures when it holds a manifest.json,
// else the source tree's (the one this binary was built from).
std::filesystem::path fixtures_folder(const std::string& given);
// A file of the source tree: `given`, else `relative` when it exists here,
// else the source tree's.
std::filesystem::path source_file(const std::string& given, const char* relative);
// Throws InputError when --report names a file in a folder that does not exist.
void check_report_folder(const std::string& report);
// --precision NAME as a class; InputError naming the classes otherwise.
kernels::Precision precision_class(const std::string& name);

// Colour codes only when stdout is a terminal.
std::string paint(const std::string& text, const char* colour);

}  // namespace deltaproof::cli

// cli/gate_command.hpp — `deltaproof gate list|run|check`.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltaproof::cli {

struct GateArguments {
  std::vector<std::string> patterns;
  std::string fixtures_dir;
  std::string report;
  int repeat = 1;
  int replay = 0;
  std::string fault;  // falsify build: one kernel fault switched on
  std::string fixture, candidate, precision = "f32";
  CLI::App* list = nullptr;
  CLI::App* run = nullptr;
  CLI::App* check = nullptr;
};

void add_gate_command(CLI::App& app, GateArguments& args);
int run_gate_command(const GateArguments& args, const std::string& command_line,
                     const std::string& self_exe);

// Colour codes only when stdout is a terminal.
std::string paint(const std::string& text, const char* colour);

}  // namespace deltaproof::cli

// cli/gen_command.hpp — `deltaproof gen`: one fixture, the canonical set
// (--all), or a byte-for-byte regeneration check of a folder (--check); with
// --reference gpu-f64 a reference computed in f64 on the GPU, and the
// production-shape set of them (--production).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace deltaproof::cli {

struct GenArguments {
  std::string op = "gdn2";
  int B = 1, T = 0, H = 2, K = 8, V = 8, chunk = 16;
  int HV = 0;                            // value heads; 0: as many as H
  std::vector<std::int64_t> cu_seqlens;  // packed sequences' offsets; empty: dense
  std::string regime = "default";
  std::string dtype = "f32";
  std::string h0 = "drawn";
  bool do_mask = false;  // dO zero at every third token (FixtureSpec::masked_do)
  std::uint64_t seed = 0;
  std::string out;
  std::string report;
  std::string check_dir;
  std::string inject_fault;
  std::string reference = "quad";  // or gpu-f64 (oracle/external.hpp)
  bool all = false;
  bool production = false;
  std::string only;  // --production: only the fixtures whose file matches this glob
  bool overwrite = false;
  bool force = false;
  int threads = 0;
};

void add_gen_command(CLI::App& app, GenArguments& args);
// Returns the process exit code: 0 ok, 1 a check failed, 2 usage or input error.
int run_gen(const GenArguments& args);

}  // namespace deltaproof::cli

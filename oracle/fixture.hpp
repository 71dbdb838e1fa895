// oracle/fixture.hpp — building a fixture: draw the inputs, run the quad
// oracle, run every self-check, and assemble the safetensors file (all F64,
// DESIGN.md section 4). Also the canonical fixture set and its manifest.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/safetensors.hpp"
#include "oracle/selfcheck.hpp"

namespace deltaproof::oracle {

inline constexpr const char* kGeneratorVersion = "deltaproof-oracle 0.1.0";

struct GenerateOptions {
  int threads = 0;
  SelfCheckOptions checks;
  // The file name recorded in the metadata's command (never a temp path).
  std::string file_name = "fixture.safetensors";
  std::function<void(const std::string&)> progress;
};

struct GeneratedFixture {
  SafetensorsFile file;
  SelfCheckReport report;
  // seconds per step and evaluation counts (external references), kept out of
  // the file
  nlohmann::json timings = nlohmann::json::object();
};

// The tensors of a fixture (no metadata): inputs and cotangents from the
// problem, outputs and gradients from `reference`, all F64.
SafetensorsFile fixture_tensors(const Problem& problem, const TensorMap& reference);
// Bytes in which two files' serialisations differ (the determinism check).
std::size_t differing_bytes(const SafetensorsFile& a, const SafetensorsFile& b);
// The metadata of a fixture: its spec, the names of its tensors, the loss,
// what the reference was computed in (`reference`), the self-checks and
// their verdict (status checked or failed), the command that regenerates it,
// and each tensor's sha256.
void set_fixture_metadata(const FixtureSpec& spec, double loss, const std::string& reference,
                          const std::string& command, GeneratedFixture& out);

// Never throws on a failed check: the caller decides (gen refuses, --force
// marks the file unchecked via mark_unchecked).
GeneratedFixture generate_fixture(const FixtureSpec& spec, const GenerateOptions& options);
void mark_unchecked(SafetensorsFile& file);

// `deltaproof gen ...` that regenerates this spec into `file_name` (gen_options).
std::string canonical_command(const FixtureSpec& spec, const std::string& file_name);

// A packed file's offsets: the I64 tensor cu_seqlens, [N + 1] (N from the
// metadata where it is given), a valid packing of B = 1 and T tokens; empty
// for a dense file. Throws InputError naming `source`, the tensor and the
// problem; both readers (spec_of_fixture, gates' job_from_file) use it.
std::vector<std::int64_t> read_cu_seqlens(const SafetensorsFile& file, const std::string& source,
                                          int B, int T);

// The spec of a fixture file: its metadata, and a packed fixture's
// cu_seqlens tensor (I64, N + 1 entries, a valid packing), then validated;
// throws InputError naming `source`, the key or tensor, and the problem.
FixtureSpec spec_of_fixture(const SafetensorsFile& file, const std::string& source);

struct CanonicalFixture {
  std::string file;  // relative to the fixtures folder, e.g. "gdn2/t32-c16.safetensors"
  FixtureSpec spec;
};
std::vector<CanonicalFixture> canonical_fixtures();

}  // namespace deltaproof::oracle

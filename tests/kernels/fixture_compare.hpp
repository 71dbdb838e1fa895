// tests/kernels/fixture_compare.hpp — runs a backend on a committed fixture
// and measures every term against the fixture's quad reference:
// rel = max|a - b| / max|b| (background/001: never a per-entry ratio).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/metric.hpp"
#include "core/safetensors.hpp"
#include "gates/fixture_io.hpp"

namespace deltaproof::testing {

inline std::filesystem::path source_dir() { return DELTAPROOF_SOURCE_DIR; }

// Every fixture listed in fixtures/manifest.json, relative to fixtures/.
inline std::vector<std::string> committed_fixtures() {
  std::ifstream in(source_dir() / "fixtures" / "manifest.json");
  const auto manifest = nlohmann::json::parse(in);
  std::vector<std::string> files;
  for (const auto& entry : manifest.at("fixtures")) files.push_back(entry.at("file"));
  return files;
}

struct TermError {
  std::string term;
  double rel = 0.0;       // max|a-b| / max|b|
  double abs_max = 0.0;   // max|a-b|
  double ref_amax = 0.0;  // max|b|
  long non_finite = 0;    // NaN/inf (e.g. unwritten) elements of the candidate
};

struct BackendRun {
  std::vector<TermError> terms;  // o, ht first, then the gradients
  kernels::ExecutionRecord record;
  const TermError& term(const std::string& name) const {
    for (const auto& t : terms)
      if (t.term == name) return t;
    throw std::runtime_error("no term " + name);
  }
};

inline TermError compare_term(const std::string& term, const std::vector<float>& candidate,
                              const std::vector<double>& reference) {
  const RelError error = rel_error(candidate, reference);
  return {term, error.rel(), error.abs_max, error.ref_amax, error.non_finite};
}

// Runs `backend_name` on fixtures/<file> (outputs poisoned with NaN first).
inline BackendRun run_on_fixture(const std::string& backend_name, const std::string& file,
                                 kernels::Phase phase, int chunk = 0) {
  const auto path = source_dir() / "fixtures" / file;
  const SafetensorsFile fixture = read_safetensors(path);
  const gates::KernelJob job = gates::job_from_file(fixture, path.string(), phase, chunk);
  kernels::Buffers out = kernels::allocate_outputs(job.shape, phase, NAN);
  BackendRun run;
  kernels::find_backend(backend_name).run(job.shape, job.inputs, phase, out, run.record);
  for (const auto& name : kernels::kernel_output_names(job.shape.op, phase))
    run.terms.push_back(compare_term(name, out.at(name), fixture.at(name).to_f64()));
  return run;
}

}  // namespace deltaproof::testing

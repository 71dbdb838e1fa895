// gates/kinds/oracle.cpp — the oracle gate: the backend against the fixture's reference, term by
// term at the family's bars, and bitwise the same over --repeat runs and
// --replay processes.
#include <algorithm>
#include <cstring>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/process.hpp"
#include "core/sha256.hpp"
#include "gates/instrument_faults.hpp"
#include "gates/kinds/kind.hpp"
#include "gates/noise.hpp"
#include "kernels/mutants.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/fixture.hpp"

namespace deltaproof::gates {
namespace fs = std::filesystem;

namespace {

// Instrument fault layout_swapped: every token tensor read as if it were
// head-first, [B, H, T, ...], instead of FLA's [B, T, H, ...].
void read_head_first(const KernelShape& s, std::map<std::string, std::vector<double>>& values) {
  for (auto& [name, v] : values) {
    const int width = kernels::tensor_width(s, name);
    if (width < 0) continue;
    const std::size_t w = width == 0 ? 1 : width;
    const int H = kernels::tensor_heads(s, name);
    std::vector<double> read(v.size());
    for (int b = 0; b < s.B; ++b)
      for (int t = 0; t < s.T; ++t)
        for (int h = 0; h < H; ++h)
          for (std::size_t i = 0; i < w; ++i)
            read[token_offset(s.T, H, width, b, t, h, static_cast<int>(i))] =
                v[((static_cast<std::size_t>(b) * H + h) * s.T + t) * w + i];
    v = std::move(read);
  }
}

// Instrument fault reference_other_seed: the reference is the f64 oracle on
// the inputs of the fixture's spec drawn with the next seed.
std::map<std::string, std::vector<double>> reference_of_other_seed(const SafetensorsFile& file,
                                                                   const std::string& source,
                                                                   Phase phase) {
  oracle::FixtureSpec spec = oracle::spec_of_fixture(file, source);
  spec.seed += 1;
  const oracle::OracleOutput other =
      oracle::evaluate<double>(oracle::draw_problem(spec), phase == Phase::bwd, 1);
  std::map<std::string, std::vector<double>> reference;
  for (const auto& [name, values] : other.tensors) reference[name] = values;
  return reference;
}

std::string index_text(const KernelShape& shape, const std::string& term, std::size_t flat) {
  return fmt::format("({})", fmt::join(unravel(shape, term, flat), ","));
}

// The first bitwise difference between two runs' outputs, or "".
std::string bitwise_difference(const KernelShape& shape, const Buffers& a, const Buffers& b) {
  for (const auto& [name, values] : a) {
    const auto& other = b.at(name);
    if (other.size() != values.size())
      return fmt::format("{} has {} elements vs {}", name, other.size(), values.size());
    for (std::size_t i = 0; i < values.size(); ++i)
      if (std::memcmp(&values[i], &other[i], sizeof(float)) != 0)
        return fmt::format("{} differs at ({}) = {}: {:.9g} vs {:.9g}", name,
                           index_names(shape, name), index_text(shape, name, i), values[i],
                           other[i]);
  }
  return "";
}

// Runs `deltaproof run` in a fresh process and reads its candidate back.
Buffers replay_once(const RunOptions& options, const Gate& gate, const fs::path& fixture,
                    const KernelShape& shape, int index) {
  const fs::path out =
      fs::temp_directory_path() / fmt::format("deltaproof-replay-{}-{}-{}.safetensors", ::getpid(),
                                              index, std::random_device{}());
  std::vector<std::string> args = {options.self_exe, "run",
                                   "--backend",      gate.family->backend,
                                   "--fixture",      fixture.string(),
                                   "--out",          out.string(),
                                   "--phase",        std::string(kernels::phase_name(gate.phase)),
                                   "--chunk",        std::to_string(shape.chunk)};
  if (!options.fault.empty()) {
    args.push_back("--fault");
    args.push_back(options.fault);
  }
  ProcessResult run;
  try {
    run = run_process(args);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--replay: {}", e.what()));
  }
  if (run.exit_code != 0)
    throw InputError(fmt::format("--replay: '{}' exited with status {}: {}", fmt::join(args, " "),
                                 run.exit_code, run.tail(4)));
  const SafetensorsFile candidate = read_safetensors(out);
  fs::remove(out);
  Buffers buffers;
  for (const auto& [name, tensor] : candidate.tensors) {
    const auto values = tensor.to_f64();
    buffers[name] = std::vector<float>(values.begin(), values.end());
  }
  return buffers;
}

// Every output's name and bytes, hashed: two runs whose digests agree wrote
// the same bits (a mutant with no effect on this fixture).
std::string outputs_digest(const Buffers& out) {
  std::vector<std::byte> bytes;
  for (const auto& [name, values] : out) {
    const auto* name_bytes = reinterpret_cast<const std::byte*>(name.data());
    bytes.insert(bytes.end(), name_bytes, name_bytes + name.size() + 1);
    const auto* data = reinterpret_cast<const std::byte*>(values.data());
    bytes.insert(bytes.end(), data, data + values.size() * sizeof(float));
  }
  return sha256_hex(bytes);
}

}  // namespace

void run_oracle(const KindContext& c, GateResult& r) {
  const Gate& gate = c.gate;
  const RunOptions& options = c.options;
  const LoadedFixture& f = c.fixture;
  const Buffers out = run_poisoned(c.backend, f.job.shape, f.job.inputs, gate.phase, r.record);
  if (options.digest_outputs) r.outputs_sha256 = outputs_digest(out);
  auto candidate = as_doubles(out);
  if (DELTAPROOF_INSTRUMENT_FAULT(layout_swapped)) read_head_first(f.job.shape, candidate);
  const auto reference = DELTAPROOF_INSTRUMENT_FAULT(reference_other_seed)
                             ? reference_of_other_seed(f.file, c.fixture_path.string(), gate.phase)
                             : f.reference;
  if (gate.family->noise_bars()) {
    // the class's noise on this fixture sets each term's bar and bias band,
    // measured against the fixture's own reference: its ensemble (cpu-chunk)
    // must see neither a kernel fault under test nor a reference the gate
    // itself got wrong (the instrument fault reference-other-seed)
    const NoiseModel noise = [&] {
      const kernels::FaultSuspended clean;
      const kernels::MutantSuspended no_mutant;
      return measure_noise(f.job.shape, f.job.inputs, gate.phase, f.reference,
                           gate.family->precision);
    }();
    r.terms = judge_against_noise(f.job.shape, gate.phase, noise, candidate, reference);
    r.bars = noise_bars_json(noise, r.terms);
  } else {
    r.terms =
        compare_terms(f.job.shape, gate.phase, candidate, reference, family_compare(*gate.family));
  }
  r.determinism.repeats = std::max(1, options.repeat);
  for (int i = 1; i < options.repeat && r.determinism.identical; ++i) {
    kernels::ExecutionRecord again;
    const Buffers other = run_poisoned(c.backend, f.job.shape, f.job.inputs, gate.phase, again);
    const std::string diff = bitwise_difference(f.job.shape, out, other);
    if (!diff.empty()) {
      r.determinism.identical = false;
      r.determinism.first_difference = fmt::format("repeat {} vs run 1: {}", i + 1, diff);
    }
  }
  r.determinism.replays = options.replay;
  for (int i = 0; i < options.replay && r.determinism.identical; ++i) {
    if (options.self_exe.empty())
      throw InputError("--replay needs the path of the deltaproof executable");
    const Buffers other = replay_once(options, gate, c.fixture_path, f.job.shape, i);
    const std::string diff = bitwise_difference(f.job.shape, out, other);
    if (!diff.empty()) {
      r.determinism.identical = false;
      r.determinism.first_difference = fmt::format("process {} vs this process: {}", i + 1, diff);
    }
  }
}

}  // namespace deltaproof::gates

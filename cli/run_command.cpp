// cli/run_command.cpp — `deltaproof run`. See run_command.hpp.
#include "cli/run_command.hpp"

#include "cli/gate_command.hpp"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/op.hpp"
#include "gates/fixture_io.hpp"
#include "kernels/faults.hpp"

namespace deltaproof::cli {

void add_run_command(CLI::App& app, RunArguments& a) {
  CLI::App* run = app.add_subcommand(
      "run", "Run a backend on a fixture's inputs and cotangents and write a candidate file");
  run->add_option("--backend", a.backend, "backend name (cpu-chunk, cpu-recurrent, ...)")
      ->required();
  run->add_option("--fixture", a.fixture,
                  "safetensors file with q k v g b w|beta h0 (and do dht for bwd)")
      ->required();
  run->add_option("--out", a.out, "candidate file to write (F32)")->required();
  // Checked here, not only in job_from_file: there 0 means "not given", so
  // --chunk 0 or -16 would otherwise fall back silently to the fixture's chunk.
  run->add_option(
         "--chunk", a.chunk,
         fmt::format("chunk size {} (default: the fixture's, else 64)", chunk_sizes_text()))
      ->check(CLI::Validator(
          [](std::string& text) {
            for (int size : kChunkSizes)
              if (text == std::to_string(size)) return std::string();
            return fmt::format("chunk size {} is not supported; pass --chunk {}", text,
                               chunk_sizes_text());
          },
          chunk_sizes_text("|")));
  run->add_option("--phase", a.phase, "fwd (o, ht) or bwd (also every gradient)")
      ->capture_default_str();
  run->add_option("--precision", a.precision,
                  "cpu-chunk and cuda-chunk: evaluate under this class's contract, rounding to "
                  "nearest even at every point the class allows (f32, tf32, bf16; "
                  "docs/PRECISION.md)")
      ->capture_default_str();
  if (kernels::kFaultsCompiledIn)
    run->add_option("--fault", a.fault, "falsify build: switch one kernel fault on by id");
}

int run_run(const RunArguments& a) {
  const std::optional<kernels::Phase> parsed = find_value(kernels::kPhaseNames, a.phase);
  if (!parsed)
    throw InputError(fmt::format("unknown phase '{}'; pass --phase fwd or --phase bwd.", a.phase));
  const kernels::Phase phase = *parsed;
  const kernels::Backend& backend = kernels::find_backend(a.backend);
  namespace fs = std::filesystem;
  fs::path folder = fs::path(a.out).parent_path();
  if (!folder.empty() && !fs::is_directory(folder))
    throw InputError(
        fmt::format("cannot write {}: the folder {} does not exist; create it or "
                    "choose another --out.",
                    a.out, folder.string()));
  std::error_code same_error;
  if (fs::exists(a.out) && fs::equivalent(a.out, a.fixture, same_error))
    throw InputError(
        fmt::format("--out {} is the fixture itself; choose another path for the "
                    "candidate.",
                    a.out));
#ifdef DELTAPROOF_FALSIFY
  kernels::set_active_fault(a.fault);
#endif
  const SafetensorsFile fixture = read_safetensors(a.fixture);
  const gates::KernelJob job = gates::job_from_file(fixture, a.fixture, phase, a.chunk);
  const kernels::Precision precision = precision_class(a.precision);
  kernels::KernelShape shape = job.shape;
  shape.contract.precision = precision;  // a backend that cannot emulate it says so
  kernels::Buffers outputs = kernels::allocate_outputs(shape, phase, std::nanf(""));
  kernels::ExecutionRecord record;
  const auto start = std::chrono::steady_clock::now();
  backend.run(shape, job.inputs, phase, outputs, record);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_safetensors(
      a.out, gates::candidate_file(job.shape, phase, outputs, record, backend.name(), a.fixture));
  std::string stages;
  for (const auto& [stage, times] : record.stages) stages += fmt::format(" {}x{}", stage, times);
  fmt::print(
      "{} {} {} B{} T{} H{} K{} V{} chunk{} -> {} ({:.3f} s; stages:{}){}\n", backend.name(),
      a.phase, op_name(job.shape.op), job.shape.B, job.shape.T, job.shape.H, job.shape.K,
      job.shape.V, job.shape.chunk, a.out, seconds, stages,
      precision == kernels::Precision::f32 ? "" : fmt::format(" [{} contract]", a.precision));
  return 0;
}

}  // namespace deltaproof::cli

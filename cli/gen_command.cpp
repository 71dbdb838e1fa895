// cli/gen_command.cpp — `deltaproof gen`. See gen_command.hpp.
#include "cli/gen_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/op.hpp"
#include "core/parallel.hpp"
#include "core/sha256.hpp"
#include "gates/registry.hpp"
#include "oracle/coverage.hpp"
#include "oracle/external.hpp"
#include "oracle/fixture.hpp"
#ifdef DELTAPROOF_GPU_REFERENCE
#include "kernels/backend.hpp"
#include "oracle/gpu_reference.hpp"
#endif

namespace deltaproof::cli {
namespace fs = std::filesystem;
using namespace deltaproof::oracle;

namespace {

bool stderr_is_terminal() { return ::isatty(STDERR_FILENO) == 1; }

// A one-line progress display on a terminal; silent when stderr is not a TTY.
class Progress {
 public:
  explicit Progress(std::string prefix)
      : prefix_(std::move(prefix)), enabled_(stderr_is_terminal()) {}
  ~Progress() { clear(); }
  void step(const std::string& what) {
    if (!enabled_) return;
    const double seconds = std::chrono::duration<double>(clock::now() - start_).count();
    fmt::print(stderr, "\r\033[K{} {} ({:.1f} s)", prefix_, what, seconds);
    std::fflush(stderr);
  }
  void clear() {
    if (enabled_) fmt::print(stderr, "\r\033[K");
  }

 private:
  using clock = std::chrono::steady_clock;
  std::string prefix_;
  bool enabled_;
  clock::time_point start_ = clock::now();
};

FixtureSpec spec_from(const GenArguments& a) {
  FixtureSpec s;
  const auto op = parse_op(a.op);
  if (!op) throw InputError(fmt::format("unknown op '{}'; pass --op gdn2, kda or gdn.", a.op));
  s.op = *op;
  const auto regime = parse_regime(a.regime);
  if (!regime)
    throw InputError(
        fmt::format("unknown regime '{}'; pass --regime default, mild, stress or edge.", a.regime));
  s.regime = *regime;
  const auto dtype = parse_input_dtype(a.dtype);
  if (!dtype)
    throw InputError(fmt::format("unknown dtype '{}'; pass --dtype f32 or --dtype bf16.", a.dtype));
  s.dtype = *dtype;
  if (a.h0 != "drawn" && a.h0 != "zero")
    throw InputError(fmt::format("unknown --h0 '{}'; pass --h0 drawn or --h0 zero.", a.h0));
  s.zero_h0 = a.h0 == "zero";
  s.masked_do = a.do_mask;
  s.B = a.B;
  // packed: T defaults to the last offset
  s.T = a.T == 0 && !a.cu_seqlens.empty() ? static_cast<int>(a.cu_seqlens.back()) : a.T;
  s.H = a.H;
  s.HV = a.HV;
  s.cu_seqlens = a.cu_seqlens;
  s.K = a.K;
  s.V = a.V;
  s.chunk = a.chunk;
  s.seed = a.seed;
  s.validate();
  return s;
}

GeneratorFaults faults_from(const std::string& name) {
  GeneratorFaults faults;
  if (name.empty()) return faults;
  if (name == "double-exp")
    faults.double_exp_in_reverse_decay = true;
  else if (name == "cut-carry")
    faults.cut_carry_every = -1;  // set to the chunk size below
  else
    throw InputError(
        fmt::format("unknown generator fault '{}'; pass double-exp or cut-carry.", name));
  return faults;
}

// Refuses, before any work, an output that exists (without --overwrite) or a
// folder that cannot be written.
void check_writable(const fs::path& path, bool overwrite, const char* flag) {
  if (fs::exists(path) && !overwrite)
    throw InputError(fmt::format("{} exists; pass --overwrite to replace it, or choose another {}.",
                                 path.string(), flag));
  fs::path folder = path.parent_path();
  if (folder.empty()) folder = ".";
  if (!fs::is_directory(folder))
    throw InputError(
        fmt::format("cannot write {}: the folder {} does not exist; create it or "
                    "choose another {}.",
                    path.string(), folder.string(), flag));
  if (::access(folder.c_str(), W_OK) != 0)
    throw InputError(
        fmt::format("cannot write {}: the folder {} is not writable; choose another "
                    "{}.",
                    path.string(), folder.string(), flag));
}

std::string format_figure(const CheckFigure& c) {
  if (!std::isfinite(c.figure)) return "n/a";
  if (c.check == "determinism") return fmt::format("{:.0f} B", c.figure);
  if (c.check == "taylor_remainder_order") return fmt::format("{:.3f}", c.figure);
  return fmt::format("{:.3e}", c.figure);
}

// A path's share, "-" where the recurrence has no such path, "!" when it is
// below the coverage threshold.
std::string path_cell(const PathShare& p) {
  if (!p.structural) return "-";
  if (!std::isfinite(p.share)) return "n/a!";
  return fmt::format("{:.2e}{}", p.share, p.covered ? "" : "!");
}

void print_check_table(const std::string& title, const SelfCheckReport& report) {
  fmt::print("{}\n", title);
  fmt::print("  {:<24} {:>11} {:>12}  {:<7} {}\n", "self-check", "figure", "bar", "verdict",
             "method");
  for (const auto& c : report.checks) {
    fmt::print("  {:<24} {:>11} {:>2} {:<9.3g}  {:<7} {}\n", c.check, format_figure(c),
               c.lower_is_better ? "<=" : ">=", c.bar,
               !std::isfinite(c.figure) && c.passed ? "n/a" : (c.passed ? "pass" : "FAIL"),
               c.method);
  }
  const PathLiveness& paths = report.paths;
  if (paths.paths.empty()) return;  // an external reference's checks have no path table
  fmt::print(
      "  path liveness: share of each gradient carried by one cotangent alone, "
      "max|g(c alone)|/max|g|; covered if >= {:.3g}\n",
      paths.threshold);
  std::vector<std::string> gradients;
  for (const auto& p : paths.paths)
    if (std::find(gradients.begin(), gradients.end(), p.gradient) == gradients.end())
      gradients.push_back(p.gradient);
  std::string header = fmt::format("  {:<6}", "");
  for (const auto& g : gradients) header += fmt::format(" {:>11}", g);
  fmt::print("{}\n", header);
  for (const char* cotangent : {"do", "dht"}) {
    std::string row = fmt::format("  {:<6}", cotangent);
    for (const auto& g : gradients)
      for (const auto& p : paths.paths)
        if (p.cotangent == cotangent && p.gradient == g)
          row += fmt::format(" {:>11}", path_cell(p));
    fmt::print("{}\n", row);
  }
  const auto uncovered = paths.uncovered();
  fmt::print("  paths covered: {} of {}{}{}\n", paths.covered().size(),
             paths.covered().size() + uncovered.size(),
             uncovered.empty() ? "" : "; not covered: ", fmt::join(uncovered, ", "));
}

// A set's fixture that failed a self-check, on stderr.
void say_not_written(const std::string& file, const SelfCheckReport& report) {
  const CheckFigure* failure = report.first_failure();
  fmt::print(stderr,
             "deltaproof gen: {}: self-check '{}' failed (figure {}, bar {:.3g}); not "
             "written.\n",
             file, failure->check, format_figure(*failure), failure->bar);
}

struct Generated {
  GeneratedFixture fixture;
  double seconds = 0.0;
};

// The f64 GPU evaluator, or a sentence why there is none here.
ExternalEvaluator gpu_evaluator() {
#ifdef DELTAPROOF_GPU_REFERENCE
  if (!kernels::gpu_available())
    throw InputError(
        "--reference gpu-f64 computes the reference on a CUDA GPU, and this machine has none; "
        "run it where one is, or leave --reference at quad.");
  return gpu_f64_evaluator();
#else
  throw InputError(
      "--reference gpu-f64 needs a build with the CUDA backends (nvcc found at configure time); "
      "this one has none. Leave --reference at quad, or rebuild where nvcc is.");
#endif
}

Generated generate_external(const FixtureSpec& spec, const GenArguments& args,
                            const std::string& file_name, const std::string& label) {
  if (!args.inject_fault.empty())
    throw InputError(
        "--inject-generator-fault is a fault of the quad oracle; it has no meaning "
        "with --reference gpu-f64.");
  ExternalOptions options;
  options.threads = args.threads;
  options.file_name = file_name;
  options.command = canonical_command(spec, file_name) + " --reference gpu-f64";
  Progress progress(label);
  options.progress = [&](const std::string& step) { progress.step(step); };
  const auto start = std::chrono::steady_clock::now();
  Generated out{generate_external_fixture(spec, gpu_evaluator(), options), 0.0};
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

Generated generate(const FixtureSpec& spec, const GenArguments& args, const std::string& file_name,
                   const std::string& label) {
  if (args.reference == "gpu-f64") return generate_external(spec, args, file_name, label);
  GenerateOptions options;
  options.threads = args.threads;
  options.file_name = file_name;
  options.checks.faults = faults_from(args.inject_fault);
  if (options.checks.faults.cut_carry_every < 0) options.checks.faults.cut_carry_every = spec.chunk;
  Progress progress(label);
  options.progress = [&](const std::string& step) { progress.step(step); };
  const auto start = std::chrono::steady_clock::now();
  Generated out{generate_fixture(spec, options), 0.0};
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!args.inject_fault.empty())
    out.fixture.file.metadata["injected_generator_fault"] = args.inject_fault;
  return out;
}

int run_one(const GenArguments& args) {
  if (args.out.empty())
    throw InputError("gen needs --out FILE (or --all --out DIR, or --check DIR).");
  if (args.T == 0 && args.cu_seqlens.empty())
    throw InputError("--T is 0 (or missing); pass --T N with N >= 1 tokens.");
  const FixtureSpec spec = spec_from(args);
  const fs::path out(args.out);
  check_writable(out, args.overwrite, "--out");
  if (!args.report.empty()) check_writable(args.report, true, "--report");

  Generated g = generate(spec, args, out.filename().string(), "[gen " + spec.describe() + "]");
  print_check_table(fmt::format("{} -> {} ({:.2f} s)", spec.describe(), out.string(), g.seconds),
                    g.fixture.report);
  const bool passed = g.fixture.report.passed();
  const bool write = passed || args.force;
  if (!passed) {
    const CheckFigure* failure = g.fixture.report.first_failure();
    fmt::print(stderr, "deltaproof gen: self-check '{}' failed: figure {} against bar {:.3g}{}.\n",
               failure->check, format_figure(*failure), failure->bar,
               args.force ? "; --force given, writing the fixture marked 'unchecked'"
                          : "; nothing written (pass --force to write it marked 'unchecked')");
    if (args.force) mark_unchecked(g.fixture.file);
  }
  if (write) write_safetensors(out, g.fixture.file);
  if (!args.report.empty()) {
    nlohmann::json report = {{"tool", kGeneratorVersion},
                             {"command", g.fixture.file.metadata["command"]},
                             {"spec", spec},
                             {"out", out.string()},
                             {"written", write},
                             {"status", g.fixture.file.metadata["status"]},
                             {"self_checks", g.fixture.report.to_json()},
                             {"seconds", g.seconds}};
    write_text_atomically(args.report, report.dump(2) + "\n");
  }
  return passed ? 0 : 1;
}

// The folder a fixture set is written into (`job`: --all, --production):
// refused when --out is missing or a file, or when one of the set's files
// exists there without --overwrite; created, with each file's subfolder.
fs::path set_folder(const GenArguments& args, const char* job,
                    const std::vector<CanonicalFixture>& fixtures) {
  if (args.out.empty())
    throw InputError(fmt::format("gen {} needs --out DIR, the folder to write into.", job));
  const fs::path dir(args.out);
  if (fs::exists(dir) && !fs::is_directory(dir))
    throw InputError(fmt::format("--out {} is a file; gen {} writes a folder.", dir.string(), job));
  fs::create_directories(dir);
  for (const auto& f : fixtures) {
    fs::create_directories((dir / f.file).parent_path());
    check_writable(dir / f.file, args.overwrite, "--out");
  }
  return dir;
}

int run_all(const GenArguments& args) {
  const auto fixtures = canonical_fixtures();
  const fs::path dir = set_folder(args, "--all", fixtures);
  nlohmann::json manifest = {{"format", "deltaproof-manifest/1"},
                             {"generator", kGeneratorVersion},
                             {"fixtures", nlohmann::json::array()}};
  std::vector<std::string> columns = {"reverse_vs_forward_mode",
                                      "fd_vs_forward_mode",
                                      "taylor_remainder_order",
                                      "f64_vs_quad",
                                      "liveness",
                                      "determinism"};
  fmt::print("{:<34} {:>10} {:>10} {:>7} {:>10} {:>10} {:>5} {:>7} {:>7} {:>9}\n", "fixture",
             "rev-fwd", "fd-fwd", "taylor", "f64-quad", "liveness", "det", "status", "seconds",
             "paths");
  // op -> path -> fixtures covering it (every structural path listed)
  std::map<std::string, std::map<std::string, std::vector<std::string>>> coverage;
  bool all_passed = true;
  for (std::size_t i = 0; i < fixtures.size(); ++i) {
    const auto& f = fixtures[i];
    Generated g = generate(f.spec, args, fs::path(f.file).filename().string(),
                           fmt::format("[{}/{}] {}", i + 1, fixtures.size(), f.file));
    const auto& report = g.fixture.report;
    std::map<std::string, std::string> cell;
    for (const auto& c : report.checks) cell[c.check] = format_figure(c) + (c.passed ? "" : "!");
    const bool passed = report.passed();
    all_passed = all_passed && passed;
    auto& by_path = coverage[std::string(op_name(f.spec.op))];
    for (const auto& p : report.paths.paths) {
      if (!p.structural) continue;
      auto& fixtures_covering = by_path[p.name()];
      if (p.covered) fixtures_covering.push_back(f.file);
    }
    fmt::print("{:<34} {:>10} {:>10} {:>7} {:>10} {:>10} {:>5} {:>7} {:>7.2f} {:>9}\n", f.file,
               cell[columns[0]], cell[columns[1]], cell[columns[2]], cell[columns[3]],
               cell[columns[4]], cell[columns[5]], passed ? "ok" : "FAIL", g.seconds,
               fmt::format("{}/{}", report.paths.covered().size(),
                           report.paths.covered().size() + report.paths.uncovered().size()));
    std::fflush(stdout);
    if (!passed) {
      say_not_written(f.file, report);
      continue;
    }
    write_safetensors(dir / f.file, g.fixture.file);
    const auto bytes = read_file_bytes(dir / f.file);
    manifest["fixtures"].push_back({{"file", f.file},
                                    {"spec", f.spec},
                                    {"command", g.fixture.file.metadata["command"]},
                                    {"sha256", sha256_hex(bytes)},
                                    {"bytes", bytes.size()},
                                    {"self_checks", report.to_json()},
                                    {"path_liveness", report.paths.to_json()}});
  }
  fmt::print("path coverage: fixtures per op whose share of the path is >= {:.3g}\n",
             SelfCheckBars::path_share);
  for (const auto& [op, by_path] : coverage) {
    std::vector<std::string> cells;
    for (const auto& [path, files] : by_path)
      cells.push_back(fmt::format("{} {}{}", path, files.size(), files.size() < 3 ? "!" : ""));
    fmt::print("  {:<5} {}\n", op, fmt::join(cells, ", "));
  }
  const oracle::Coverage matrix = oracle::coverage_of(oracle::canonical_fixtures());
  manifest["coverage"] = matrix.to_json();
  fmt::print("coverage matrix: {} cells declared, {} empty (gate coverage)\n", matrix.rows.size(),
             matrix.empty().size());
  if (all_passed) write_text_atomically(dir / "manifest.json", manifest.dump(2) + "\n");
  return all_passed ? 0 : 1;
}

std::vector<std::string> production_names() {
  std::vector<std::string> names;
  for (const auto& f : production_fixtures()) names.push_back(f.file);
  return names;
}

// The production-shape references (oracle/external.hpp), each computed in f64
// on the GPU and checked, and a manifest.json: `gate run --fixtures DIR`
// gates there.
int run_production(const GenArguments& args) {
  GenArguments gpu = args;
  gpu.reference = "gpu-f64";
  std::vector<CanonicalFixture> fixtures;
  for (const auto& f : production_fixtures())
    if (args.only.empty() || gates::glob_match(args.only, f.file)) fixtures.push_back(f);
  if (fixtures.empty())
    throw InputError(fmt::format("--only '{}' matches none of the production fixtures ({}).",
                                 args.only, fmt::join(production_names(), ", ")));
  gpu_evaluator();  // no GPU: refused before anything is written
  const fs::path dir = set_folder(args, "--production", fixtures);
  nlohmann::json manifest = {{"format", "deltaproof-manifest/1"},
                             {"generator", kGeneratorVersion},
                             {"reference", "gpu-f64"},
                             {"fixtures", nlohmann::json::array()}};
  bool all_passed = true;
  for (std::size_t i = 0; i < fixtures.size(); ++i) {
    const auto& f = fixtures[i];
    Generated g = generate(f.spec, gpu, fs::path(f.file).filename().string(),
                           fmt::format("[{}/{}] {}", i + 1, fixtures.size(), f.file));
    print_check_table(fmt::format("{} -> {} ({:.2f} s)", f.spec.describe(), f.file, g.seconds),
                      g.fixture.report);
    fmt::print("  seconds: {}\n", g.fixture.timings.dump());
    std::fflush(stdout);
    if (!g.fixture.report.passed()) {
      all_passed = false;
      say_not_written(f.file, g.fixture.report);
      continue;
    }
    write_safetensors(dir / f.file, g.fixture.file);
    manifest["fixtures"].push_back({{"file", f.file},
                                    {"spec", f.spec},
                                    {"command", g.fixture.file.metadata["command"]},
                                    {"reference", g.fixture.file.metadata["reference_precision"]},
                                    {"self_checks", g.fixture.report.to_json()},
                                    {"seconds", g.seconds},
                                    {"timings", g.fixture.timings}});
  }
  write_text_atomically(dir / "manifest.json", manifest.dump(2) + "\n");
  return all_passed ? 0 : 1;
}

// Names the first tensor (or metadata key) on which two fixture files differ.
std::string first_difference(const SafetensorsFile& committed, const SafetensorsFile& fresh) {
  for (const auto& [name, tensor] : committed.tensors) {
    if (!fresh.has(name)) return fmt::format("tensor '{}' is missing from the regeneration", name);
    const Tensor& other = fresh.tensors.at(name);
    if (tensor.shape() != other.shape())
      return fmt::format("tensor '{}' has shape {} committed but {} regenerated", name,
                         shape_string(tensor.shape()), shape_string(other.shape()));
    if (tensor.bytes().size() == other.bytes().size() && tensor == other) continue;
    const auto a = tensor.to_f64();
    const auto b = other.to_f64();
    std::size_t differing = 0, first = a.size();
    double worst = 0.0;
    for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
      if (a[i] == b[i] && std::signbit(a[i]) == std::signbit(b[i])) continue;
      ++differing;
      first = std::min(first, i);
      worst = std::max(worst, std::abs(a[i] - b[i]));
    }
    return fmt::format(
        "tensor '{}' differs in {} of {} elements (first at flat index {}, max "
        "|diff| {:.3e})",
        name, differing, a.size(), first, worst);
  }
  for (const auto& [name, tensor] : fresh.tensors)
    if (!committed.has(name)) return fmt::format("tensor '{}' is new in the regeneration", name);
  for (const auto& [key, value] : committed.metadata) {
    auto it = fresh.metadata.find(key);
    if (it == fresh.metadata.end())
      return fmt::format("metadata '{}' is missing from the regeneration", key);
    if (it->second != value) return fmt::format("metadata '{}' differs", key);
  }
  for (const auto& [key, value] : fresh.metadata)
    if (!committed.metadata.count(key))
      return fmt::format("metadata '{}' is new in the regeneration", key);
  return "the bytes differ (header layout)";
}

int run_check(const GenArguments& args) {
  const fs::path dir(args.check_dir);
  const fs::path manifest_path = dir / "manifest.json";
  if (!fs::is_regular_file(manifest_path))
    throw InputError(
        fmt::format("{} does not exist; gen --check needs a folder written by gen --all.",
                    manifest_path.string()));
  nlohmann::json manifest;
  try {
    const auto bytes = read_file_bytes(manifest_path);
    manifest = nlohmann::json::parse(
        std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{} is not valid JSON: {}", manifest_path.string(), e.what()));
  }
  if (!manifest.contains("fixtures") || !manifest["fixtures"].is_array())
    throw InputError(fmt::format("{} has no 'fixtures' array.", manifest_path.string()));

  const fs::path scratch =
      fs::temp_directory_path() /
      fmt::format("deltaproof-check-{}-{}", ::getpid(), std::random_device{}());
  fs::create_directories(scratch);
  struct Cleanup {
    fs::path path;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(path, ignored);
    }
  } cleanup{scratch};

  int failures = 0;
  const auto& entries = manifest["fixtures"];
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string file = entries[i].value("file", "");
    const fs::path committed_path = dir / file;
    if (file.empty() || !fs::is_regular_file(committed_path)) {
      fmt::print("FAIL {}: listed in the manifest but missing\n", committed_path.string());
      ++failures;
      continue;
    }
    const SafetensorsFile committed = read_safetensors(committed_path);
    const FixtureSpec spec = spec_of_fixture(committed, committed_path.string());
    GenArguments regen = args;
    regen.inject_fault.clear();
    if (manifest.value("reference", "quad") == "gpu-f64") regen.reference = "gpu-f64";
    Generated g = generate(spec, regen, committed_path.filename().string(),
                           fmt::format("[check {}/{}] {}", i + 1, entries.size(), file));
    const fs::path fresh_path = scratch / fmt::format("{}.safetensors", i);
    if (!g.fixture.report.passed()) {
      const CheckFigure* failure = g.fixture.report.first_failure();
      fmt::print("FAIL {}: regeneration fails self-check '{}' (figure {})\n", file, failure->check,
                 format_figure(*failure));
      ++failures;
      continue;
    }
    write_safetensors(fresh_path, g.fixture.file);
    const auto committed_bytes = read_file_bytes(committed_path);
    const auto fresh_bytes = read_file_bytes(fresh_path);
    if (committed_bytes == fresh_bytes) {
      fmt::print("ok   {} ({} bytes, sha256 {}, {:.2f} s)\n", file, fresh_bytes.size(),
                 sha256_hex(fresh_bytes).substr(0, 16), g.seconds);
    } else {
      fmt::print("FAIL {}: {}\n", file, first_difference(committed, g.fixture.file));
      ++failures;
    }
    std::fflush(stdout);
  }
  fmt::print("{} of {} fixtures regenerate byte for byte\n", entries.size() - failures,
             entries.size());
  return failures == 0 ? 0 : 1;
}

}  // namespace

void add_gen_command(CLI::App& app, GenArguments& a) {
  CLI::App* gen = app.add_subcommand(
      "gen", "Generate a fixture from the quad oracle, with self-checks (refuses on a failure)");
  gen->add_option("--op", a.op, "gdn2, kda or gdn")->capture_default_str();
  gen->add_option("--B", a.B, "batch size")->capture_default_str();
  gen->add_option("--T", a.T, "sequence length (tokens)");
  gen->add_option("--H", a.H, "heads (the key heads of q and k)")->capture_default_str();
  gen->add_option("--HV", a.HV,
                  "value heads (v, the gates, the states, o): a multiple of --H; value head hv "
                  "reads key head hv / (HV / H) (FLA's grouped value heads). Default: --H");
  gen->add_option("--cu-seqlens", a.cu_seqlens,
                  "packed sequences: offsets 0,...,T (comma-separated), sequence n the tokens "
                  "[cu[n], cu[n+1]) of batch 1 with its own h0 and ht (FLA's cu_seqlens); --T "
                  "defaults to the last")
      ->delimiter(',');
  gen->add_option("--K", a.K, "key dimension")->capture_default_str();
  gen->add_option("--V", a.V, "value dimension")->capture_default_str();
  gen->add_option("--chunk", a.chunk,
                  fmt::format("chunk size the fixture targets: {}", chunk_sizes_text()))
      ->capture_default_str();
  gen->add_option("--regime", a.regime, "default, mild, stress or edge")->capture_default_str();
  gen->add_option("--dtype", a.dtype, "kernel input dtype the inputs are rounded to: f32 or bf16")
      ->capture_default_str();
  gen->add_option("--seed", a.seed, "RNG seed")->capture_default_str();
  gen->add_option("--h0", a.h0, "the initial state: drawn (normal) or zero (edge: always zero)")
      ->capture_default_str();
  gen->add_flag("--do-mask", a.do_mask,
                "a loss mask: the cotangent dO zero at every token t with t mod 3 = 2");
  gen->add_option("--out", a.out, "output file (or folder with --all)");
  gen->add_option("--report", a.report, "also write a JSON report of the self-checks");
  gen->add_option("--threads", a.threads, "threads (0 = all cores)")->capture_default_str();
  gen->add_flag("--overwrite", a.overwrite, "replace an existing output");
  gen->add_flag("--force", a.force, "write even when a self-check fails, marked 'unchecked'");
  gen->add_flag("--all", a.all, "write the canonical fixture set and manifest.json into --out DIR");
  gen->add_option("--check", a.check_dir,
                  "regenerate every fixture in DIR/manifest.json and compare bytes");
  gen->add_option("--reference", a.reference,
                  "what computes the reference: quad (the CPU oracle) or gpu-f64 (f64 on a CUDA "
                  "GPU, checked against quad on sampled sequences: the production shapes)")
      ->capture_default_str();
  gen->add_flag("--production", a.production,
                "write the production-shape references (gpu-f64) and manifest.json into --out DIR");
  gen->add_option("--only", a.only,
                  "with --production: only the fixtures whose file matches this glob, e.g. "
                  "'*t32768*'");
  gen->add_option("--inject-generator-fault", a.inject_fault,
                  "falsification only: double-exp or cut-carry (the self-checks must refuse)");
}

int run_gen(const GenArguments& args) {
  if (args.reference != "quad" && args.reference != "gpu-f64")
    throw InputError(
        fmt::format("unknown --reference '{}'; pass quad or gpu-f64.", args.reference));
  if (int(args.all) + int(args.production) + int(!args.check_dir.empty()) > 1)
    throw InputError("--all, --production and --check are separate jobs; pass one of them.");
  if (args.production) return run_production(args);
  if (!args.check_dir.empty()) return run_check(args);
  if (args.all) return run_all(args);
  return run_one(args);
}

}  // namespace deltaproof::cli

// gates/runner.cpp — see runner.hpp.
#include "gates/runner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/safetensors.hpp"
#include "core/sha256.hpp"
#include "gates/fixture_io.hpp"
#include "gates/kinds/kind.hpp"
#include "gates/noise.hpp"
#include "oracle/op.hpp"

namespace deltaproof::gates {
namespace fs = std::filesystem;
using kernels::Buffers;
using kernels::KernelShape;
using kernels::Phase;

nlohmann::json bars_json(const PhaseBars& bars, Precision precision) {
  auto one = [](const Bar& b) {
    nlohmann::json j = {{"bar", b.value},
                        {"clean_worst", nullptr},
                        {"clean_where", b.clean_where},
                        {"smallest_fault", nullptr},
                        {"fault_where", b.fault_where}};
    if (b.clean_worst >= 0) j["clean_worst"] = b.clean_worst;
    if (b.smallest_fault >= 0) j["smallest_fault"] = b.smallest_fault;
    j["provisional"] = b.clean_worst < 0;
    return j;
  };
  return {{"precision", precision_name(precision)}, {"fwd", one(bars.fwd)}, {"bwd", one(bars.bwd)}};
}

nlohmann::json GateResult::to_json() const {
  nlohmann::json term_rows = nlohmann::json::array();
  for (const auto& t : terms) term_rows.push_back(t.to_json());
  nlohmann::json row = {{"name", name},
                        {"kind", kind},
                        {"op", op},
                        {"backend", backend},
                        {"phase", phase},
                        {"precision", precision},
                        {"verdict", verdict_name(verdict)},
                        {"reasons", reasons},
                        {"fixture", fixture},
                        {"bars", bars},
                        {"execution_record", record.stages},
                        {"required_stages", required_stages},
                        {"determinism",
                         {{"repeats", determinism.repeats},
                          {"replays", determinism.replays},
                          {"identical", determinism.identical},
                          {"first_difference", determinism.first_difference}}},
                        {"terms", term_rows},
                        {"gradients_compared", gradients_compared},
                        {"seconds", seconds}};
  if (!outputs_sha256.empty()) row["outputs_sha256"] = outputs_sha256;
  return row;
}

LoadedFixture load_fixture(const fs::path& path, Phase phase) {
  LoadedFixture f;
  const auto bytes = read_file_bytes(path);
  f.file = parse_safetensors(bytes, path.string());
  f.job = job_from_file(f.file, path.string(), phase, 0);
  for (const auto& name : kernels::kernel_output_names(f.job.shape.op, phase)) {
    if (!f.file.has(name))
      throw InputError(
          fmt::format("{}: the reference has no tensor '{}'; is this a fixture written "
                      "by deltaproof gen?",
                      path.string(), name));
    f.reference[name] = f.file.tensors.at(name).to_f64();
  }
  nlohmann::json spec = nlohmann::json::object();
  // the spec's metadata entries as the file holds them (oracle::spec_metadata
  // wrote them), less scale, which K gives; and whether its self-checks passed
  for (const std::string_view key : oracle::kSpecMetadataKeys)
    if (key != "scale")
      if (auto it = f.file.metadata.find(std::string(key)); it != f.file.metadata.end())
        spec[it->first] = it->second;
  if (auto it = f.file.metadata.find("status"); it != f.file.metadata.end())
    spec["status"] = it->second;
  if (f.job.shape.packed()) spec["cu_seqlens"] = f.job.shape.cu_seqlens;
  f.info = {{"path", path.string()}, {"sha256", sha256_hex(bytes)}, {"spec", spec}};
  // what computed the reference: the quad oracle, or f64 on a GPU (gen --reference gpu-f64)
  if (auto it = f.file.metadata.find("reference_precision"); it != f.file.metadata.end())
    f.info["reference"] = it->second;
  return f;
}

std::map<std::string, std::vector<double>> candidate_values(const SafetensorsFile& candidate,
                                                            const fs::path& path,
                                                            const KernelShape& shape, Phase phase) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& name : kernels::kernel_output_names(shape.op, phase)) {
    if (!candidate.has(name)) continue;  // reported as a missing term
    const Tensor& tensor = candidate.tensors.at(name);
    const Shape want = tensor_shape(shape, name);
    if (tensor.shape() != want)
      throw InputError(fmt::format("{}: tensor '{}' has shape {}, but the fixture needs {}.",
                                   path.string(), name, shape_string(tensor.shape()),
                                   shape_string(want)));
    if (!is_floating(tensor.dtype()))
      throw InputError(
          fmt::format("{}: tensor '{}' is {}; an output must be F64, F32, F16 or BF16.",
                      path.string(), name, dtype_name(tensor.dtype())));
    values[name] = tensor.to_f64();
  }
  return values;
}

namespace {

void finish(GateResult& r) {
  bool red = false;
  for (const auto& t : r.terms) {
    if (t.status == TermStatus::fail || t.status == TermStatus::missing ||
        t.status == TermStatus::not_compared || t.status == TermStatus::unresolvable) {
      red = true;
      r.reasons.push_back(t.message);
    }
  }
  for (const auto& stage : r.required_stages)
    if (!r.record.ran(stage)) {
      red = true;
      r.reasons.push_back(fmt::format("path evidence: stage '{}' never ran (the record holds {})",
                                      stage, nlohmann::json(r.record.stages).dump()));
    }
  if (!r.determinism.identical) {
    red = true;
    r.reasons.push_back("determinism: " + r.determinism.first_difference);
  }
  r.verdict = red ? Verdict::fail : Verdict::pass;
}

GateResult start_result(const Gate& gate) {
  GateResult r;
  r.name = gate.name;
  r.kind = kind_name(gate.kind);
  r.op = op_name(gate.op);
  r.backend = gate.family->backend;
  r.phase = kernels::phase_name(gate.phase);
  r.gradients_compared = gate.phase == Phase::bwd;
  r.precision = precision_name(gate.family->precision);
  r.bars = bars_json(gate.family->bars, gate.family->precision);
  if (gate.family->noise_bars()) {
    // no constant bar: an oracle gate replaces these with the fixture's noise
    // bars (noise_bars_json); a relation gate is bitwise and has none
    for (const char* phase : {"fwd", "bwd"}) {
      r.bars[phase]["bar"] = noise_tolerances(gate.family->precision).error_floor;
      r.bars[phase]["clean_where"] = fmt::format(
          "none: each term's bar comes from the {} class's noise on the fixture (at least this "
          "floor)",
          precision_name(gate.family->precision));
      r.bars[phase]["provisional"] = false;
    }
  }
  r.required_stages = gate.required_stages();
  return r;
}

}  // namespace

GateResult run_gate(const Gate& gate, const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  GateResult r = start_result(gate);
  if (gate.family->needs_gpu && !kernels::gpu_available()) {
    r.verdict = Verdict::skipped;
    r.reasons.push_back(
        fmt::format("backend {} needs a CUDA GPU and this machine has none: "
                    "skipped, not passed",
                    gate.family->backend));
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return r;
  }
  const fs::path fixture = options.fixtures_dir / gate.fixture;
  const LoadedFixture f = load_fixture(fixture, gate.phase);
  r.fixture = f.info;
  const kernels::Backend& backend =
      options.backend ? *options.backend : kernels::find_backend(gate.family->backend);
  const KindInfo& kind = kind_info(gate.kind);
  if (!kind.backward_stages) r.required_stages = gate.family->fwd_stages;
  kind.run({gate, options, backend, f, fixture}, r);
  finish(r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

GateResult check_candidate(const fs::path& fixture, const fs::path& candidate_path,
                           Precision precision, std::optional<Phase> phase_wanted) {
  const auto start = std::chrono::steady_clock::now();
  GateResult r =
      check_candidate(fixture, read_safetensors(candidate_path), candidate_path.filename().string(),
                      candidate_path.string(), precision, phase_wanted);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

GateResult check_candidate(const fs::path& fixture, const SafetensorsFile& candidate,
                           const std::string& name, const std::string& source, Precision precision,
                           std::optional<Phase> phase_wanted) {
  const auto start = std::chrono::steady_clock::now();
  // a candidate with no gradient is checked forward only, and says so
  bool has_gradients = false;
  for (Op op : {Op::gdn2, Op::kda})  // gdn's gradients are kda's
    for (const auto& name : kernels::kernel_output_names(op, Phase::bwd))
      has_gradients = has_gradients || (name != "o" && name != "ht" && candidate.has(name));
  const Phase phase = phase_wanted.value_or(has_gradients ? Phase::bwd : Phase::fwd);
  const LoadedFixture f = load_fixture(fixture, phase);
  GateResult r;
  r.name = fmt::format("check.{}.{}", op_name(f.job.shape.op), name);
  r.kind = "check";
  r.op = op_name(f.job.shape.op);
  auto backend = candidate.metadata.find("backend");
  r.backend = backend == candidate.metadata.end() ? "external" : backend->second;
  r.phase = kernels::phase_name(phase);
  r.gradients_compared = phase == Phase::bwd;
  r.precision = precision_name(precision);
  r.fixture = f.info;
  const auto values = candidate_values(candidate, source, f.job.shape, phase);
  // the bars of this fixture: its precision class's noise (gates/noise.hpp)
  const NoiseModel noise = measure_noise(f.job.shape, f.job.inputs, phase, f.reference, precision);
  r.terms = judge_against_noise(f.job.shape, phase, noise, values, f.reference);
  r.bars = noise_bars_json(noise, r.terms);
  if (phase == Phase::fwd)
    r.reasons.push_back(
        "forward only: o and ht compared; the candidate holds no gradient, so no gradient was "
        "compared");
  finish(r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

nlohmann::json noise_bars_json(const NoiseModel& noise, const std::vector<TermComparison>& terms) {
  // per phase: the loosest term bar, and the baseline's worst error beside it
  auto phase_bar = [&](bool forward) {
    double bar = 0.0, clean = 0.0;
    std::string where;
    for (const auto& t : terms)
      if (t.is_forward() == forward && t.noise.measured) {
        bar = std::max(bar, t.bar);
        if (t.noise.baseline_rel >= clean) {
          clean = t.noise.baseline_rel;
          where = t.term;
        }
      }
    return nlohmann::json{
        {"bar", bar > 0 ? bar : noise.tolerances.error_floor},
        {"clean_worst", clean},
        {"clean_where",
         fmt::format("{} baseline (cpu-chunk, {} contract) on this fixture, term {}; each "
                     "term's own bar is in its row",
                     precision_name(noise.precision), precision_name(noise.precision), where)},
        {"smallest_fault", nullptr},
        {"fault_where", ""},
        {"provisional", false}};
  };
  return {{"precision", precision_name(noise.precision)},
          {"fwd", phase_bar(true)},
          {"bwd", phase_bar(false)},
          {"noise", noise.to_json()}};
}

}  // namespace deltaproof::gates

// gates/runner.cpp — see runner.hpp.
#include "gates/runner.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/metric.hpp"
#include "core/safetensors.hpp"
#include "core/sha256.hpp"
#include "gates/fixture_io.hpp"
#include "gates/instrument_faults.hpp"
#include "gates/noise.hpp"
#include "oracle/evaluate.hpp"
#include "oracle/fixture.hpp"

extern char** environ;

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
  return {{"name", name},
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
  for (const char* key :
       {"op", "B", "T", "H", "K", "V", "chunk", "regime", "dtype", "seed", "h0", "status"})
    if (auto it = f.file.metadata.find(key); it != f.file.metadata.end()) spec[key] = it->second;
  f.info = {{"path", path.string()}, {"sha256", sha256_hex(bytes)}, {"spec", spec}};
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
    values[name] = tensor.to_f64();
  }
  return values;
}

namespace {

std::map<std::string, std::vector<double>> as_doubles(const Buffers& buffers) {
  std::map<std::string, std::vector<double>> out;
  for (const auto& [name, values] : buffers)
    out[name] = std::vector<double>(values.begin(), values.end());
  return out;
}

// Runs a backend with every output poisoned with NaN first.
Buffers run_poisoned(const kernels::Backend& backend, const KernelShape& shape,
                     const Buffers& inputs, Phase phase, kernels::ExecutionRecord& record) {
  Buffers out = kernels::allocate_outputs(shape, phase, std::nanf(""));
  backend.run(shape, inputs, phase, out, record);
  if (DELTAPROOF_INSTRUMENT_FAULT(output_not_copied_back)) {  // the copy back of one output is lost
    auto& lost = out.count("dv") ? out.at("dv") : out.at("ht");
    std::fill(lost.begin(), lost.end(), std::nanf(""));
  }
  return out;
}

// Instrument fault layout_swapped: every token tensor read as if it were
// head-first, [B, H, T, ...], instead of FLA's [B, T, H, ...].
void read_head_first(const KernelShape& s, std::map<std::string, std::vector<double>>& values) {
  for (auto& [name, v] : values) {
    const int width = kernels::tensor_width(s, name);
    if (width < 0) continue;
    const std::size_t w = width == 0 ? 1 : width;
    std::vector<double> read(v.size());
    for (int b = 0; b < s.B; ++b)
      for (int t = 0; t < s.T; ++t)
        for (int h = 0; h < s.H; ++h)
          for (std::size_t i = 0; i < w; ++i)
            read[token_offset(s.T, s.H, width, b, t, h, static_cast<int>(i))] =
                v[((static_cast<std::size_t>(b) * s.H + h) * s.T + t) * w + i];
    v = std::move(read);
  }
}

// Instrument fault reference_other_seed: the reference is the f64 oracle on
// the inputs of the fixture's spec drawn with the next seed.
std::map<std::string, std::vector<double>> reference_of_other_seed(const SafetensorsFile& file,
                                                                   const std::string& source,
                                                                   Phase phase) {
  oracle::FixtureSpec spec = oracle::spec_from_metadata(file.metadata, source);
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
                                   "--phase",        gate.phase == Phase::fwd ? "fwd" : "bwd",
                                   "--chunk",        std::to_string(shape.chunk)};
  if (!options.fault.empty()) {
    args.push_back("--fault");
    args.push_back(options.fault);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned =
      posix_spawn(&pid, options.self_exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw InputError(
        fmt::format("--replay: cannot start {}: {}", options.self_exe, std::strerror(spawned)));
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw InputError(fmt::format("--replay: '{}' exited with status {}", fmt::join(args, " "),
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  const SafetensorsFile candidate = read_safetensors(out);
  fs::remove(out);
  Buffers buffers;
  for (const auto& [name, tensor] : candidate.tensors) {
    const auto values = tensor.to_f64();
    buffers[name] = std::vector<float>(values.begin(), values.end());
  }
  return buffers;
}

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
  r.phase = gate.phase == Phase::fwd ? "fwd" : "bwd";
  r.gradients_compared = gate.phase == Phase::bwd;
  r.precision = precision_name(gate.family->precision);
  r.bars = bars_json(gate.family->bars, gate.family->precision);
  r.required_stages = gate.required_stages();
  return r;
}

// ---- metamorphic relations ---------------------------------------------

using Predicate = std::function<bool(const std::vector<std::int64_t>& index)>;

// A bitwise relation on one tensor, restricted to the elements `selected`
// picks: status pass iff every selected element has the same bits.
TermComparison bitwise_term(const std::string& label, const KernelShape& shape,
                            const std::string& name, const std::vector<float>& got,
                            const std::vector<float>& want, const Predicate& selected) {
  TermComparison c;
  c.term = label;
  c.bar = 0.0;
  c.index_names = index_names(shape, name);
  long differing = 0, compared = 0;
  const TermLayout layout(shape, name);
  RelError error;  // the figures beside the bitwise count, over the selected elements
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto index = layout.unravel(i);
    if (!selected(index)) continue;
    ++compared;
    error.add(got[i], want[i]);
    if (std::memcmp(&got[i], &want[i], sizeof(float)) == 0) continue;
    const bool new_worst = error.worst == error.count - 1;  // this element's |diff| is the largest
    if (differing == 0 || new_worst) c.worst_index = index;
    ++differing;
  }
  c.ref_amax = error.ref_amax;
  c.non_finite = error.non_finite;
  c.abs_max = error.non_finite ? INFINITY : error.abs_max;
  c.rel = error.rel();
  c.margin = differing ? 0.0 : INFINITY;
  c.status =
      differing == 0 && compared > 0 && c.non_finite == 0 ? TermStatus::pass : TermStatus::fail;
  if (compared == 0)
    c.message = fmt::format("{}: no element selected: the relation compared nothing", label);
  if (c.non_finite > 0 &&
      differing == 0)  // NaN equals NaN bitwise: a relation on it proves nothing
    c.message = fmt::format("{}: {} of {} elements are NaN or inf (unwritten outputs stay NaN)",
                            label, c.non_finite, compared);
  if (differing)
    c.message = fmt::format(
        "{}: {} of {} elements differ bitwise (max |diff| {:.3e}, first worst at ({}) = ({}))",
        label, differing, compared, c.abs_max, c.index_names, fmt::join(c.worst_index, ","));
  return c;
}

// The relation must be able to fail: the perturbed part must move.
TermComparison moved_term(const std::string& label, const KernelShape& shape,
                          const std::string& name, const std::vector<float>& got,
                          const std::vector<float>& base, const Predicate& selected) {
  TermComparison c = bitwise_term(label, shape, name, got, base, selected);
  const bool moved = c.status == TermStatus::fail && c.non_finite == 0;
  c.status = moved ? TermStatus::pass : TermStatus::fail;
  c.message = moved ? ""
                    : fmt::format(
                          "{}: the perturbation did not move these outputs, so the relation "
                          "could not have failed (instrument fault)",
                          label);
  return c;
}

Buffers perturb_tokens(const KernelShape& s, Buffers inputs, const Predicate& where) {
  for (auto& [name, values] : inputs) {
    const int width = kernels::tensor_width(s, name);
    if (width < 0 && name != "h0" && name != "dht") continue;
    const TermLayout layout(s, name);
    for (std::size_t i = 0; i < values.size(); ++i) {
      auto index = layout.unravel(i);
      // A state has no token: h0 sits before the first token (t = -1), dht after the last
      // (t = T), so causality never moves h0 and batch/head independence moves it per (b, h).
      if (width < 0) index = {index[0], name == "h0" ? -1 : s.T, index[1], index[2]};
      if (!where(index)) continue;
      // stays in range for every input: g <= 0, b/w/beta >= 0
      values[i] = name == "g" ? values[i] * 0.5f - 0.25f : values[i] * 0.75f + 0.125f;
    }
  }
  return inputs;
}

// Tokens [t0, t1) of every token tensor; states copied.
Buffers slice_time(const KernelShape& s, const Buffers& inputs, int t0, int t1,
                   KernelShape& sliced) {
  sliced = s;
  sliced.T = t1 - t0;
  Buffers out;
  for (const auto& [name, values] : inputs) {
    const int width = kernels::tensor_width(s, name);
    if (width < 0) {
      out[name] = values;
      continue;
    }
    const int w = width == 0 ? 1 : width;
    auto& cut = out[name];
    for (int b = 0; b < s.B; ++b)
      for (int t = t0; t < t1; ++t)
        for (int h = 0; h < s.H; ++h)
          for (int i = 0; i < w; ++i)
            cut.push_back(values[token_offset(s.T, s.H, width, b, t, h, i)]);
  }
  return out;
}

}  // namespace

std::vector<int> causality_points(int T, int chunk) {
  // in the first chunk: its middle and its last row; across the boundary: the
  // second chunk's first row, its middle and its last; inside a partial tail:
  // its first row and its middle
  const int C = chunk, tail = T % C, tail_start = T - tail;
  std::vector<int> points = {C / 2, C - 1, C, C + C / 2, 2 * C - 1};
  if (tail > 0) points.insert(points.end(), {tail_start, tail_start + tail / 2});
  std::vector<int> out;
  for (int p : points)
    if (p >= 1 && p < T && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<SplitPoint> split_points(int T, int chunk) {
  const int C = chunk;
  std::vector<SplitPoint> out;
  for (const SplitPoint p : {SplitPoint{1, false}, SplitPoint{C / 2, false}, SplitPoint{C, true},
                             SplitPoint{2 * C, true}, SplitPoint{T - 1, T > 1 && (T - 1) % C == 0}})
    if (p.at >= 1 && p.at < T &&
        std::none_of(out.begin(), out.end(), [&](const SplitPoint& q) { return q.at == p.at; }))
      out.push_back(p);
  std::sort(out.begin(), out.end(),
            [](const SplitPoint& a, const SplitPoint& b) { return a.at < b.at; });
  return out;
}

namespace {

void run_causality(const kernels::Backend& backend, const LoadedFixture& f, GateResult& r) {
  const KernelShape& s = f.job.shape;
  const Buffers clean = run_poisoned(backend, s, f.job.inputs, Phase::fwd, r.record);
  for (const int P : causality_points(s.T, s.chunk)) {
    const Buffers nudged_inputs =
        perturb_tokens(s, f.job.inputs, [&](const auto& idx) { return idx[1] >= P; });
    const Buffers nudged = run_poisoned(backend, s, nudged_inputs, Phase::fwd, r.record);
    auto before = [&](const auto& idx) { return idx[1] < P; };
    auto after = [&](const auto& idx) { return idx[1] >= P; };
    r.terms.push_back(bitwise_term(fmt::format("o[t<{}] unchanged", P), s, "o", nudged.at("o"),
                                   clean.at("o"), before));
    r.terms.push_back(
        moved_term(fmt::format("o[t>={}] moved", P), s, "o", nudged.at("o"), clean.at("o"), after));
  }
}

// An oracle comparison at the family's bars.
CompareOptions family_compare(const Family& family) {
  CompareOptions compare;
  compare.fwd_bar = family.bars.fwd.value;
  compare.bwd_bar = family.bars.bwd.value;
  return compare;
}

// One split of T at P: the two calls' outputs re-assembled in the whole
// call's layout.
Buffers split_call(const kernels::Backend& backend, const KernelShape& s, const Buffers& inputs,
                   int P, kernels::ExecutionRecord& record) {
  KernelShape head_shape, tail_shape;
  Buffers head = slice_time(s, inputs, 0, P, head_shape);
  Buffers tail = slice_time(s, inputs, P, s.T, tail_shape);
  // forward of the first call hands its final state to the second
  const Buffers first_fwd = run_poisoned(backend, head_shape, head, Phase::fwd, record);
  tail["h0"] = first_fwd.at("ht");
  const Buffers second = run_poisoned(backend, tail_shape, tail, Phase::bwd, record);
  // the second call's dh0 is the first call's dht
  head["dht"] = second.at("dh0");
  const Buffers first = run_poisoned(backend, head_shape, head, Phase::bwd, record);
  Buffers joined;
  for (const auto& name : kernels::kernel_output_names(s.op, Phase::bwd)) {
    if (name == "ht") {
      joined[name] = second.at("ht");
    } else if (name == "dh0") {
      joined[name] = first.at("dh0");
    } else {
      // re-assemble [B,T,H,w] from the two calls' token ranges
      const int width = kernels::tensor_width(s, name);
      const int w = width == 0 ? 1 : width;
      auto& out = joined[name];
      out.resize(first.at(name).size() + second.at(name).size());
      for (int b = 0; b < s.B; ++b)
        for (int t = 0; t < s.T; ++t)
          for (int h = 0; h < s.H; ++h)
            for (int i = 0; i < w; ++i)
              out[token_offset(s.T, s.H, width, b, t, h, i)] =
                  t < P ? first.at(name)[token_offset(P, s.H, width, b, t, h, i)]
                        : second.at(name)[token_offset(s.T - P, s.H, width, b, t - P, h, i)];
    }
  }
  return joined;
}

void run_split_call(const kernels::Backend& backend, const Gate& gate, const LoadedFixture& f,
                    GateResult& r) {
  const KernelShape& s = f.job.shape;
  const Buffers whole = run_poisoned(backend, s, f.job.inputs, Phase::bwd, r.record);
  auto all = [](const auto&) { return true; };
  const CompareOptions compare = family_compare(*gate.family);
  for (const SplitPoint& point : split_points(s.T, s.chunk)) {
    const Buffers joined = split_call(backend, s, f.job.inputs, point.at, r.record);
    if (point.boundary) {
      for (const auto& name : kernels::kernel_output_names(s.op, Phase::bwd))
        r.terms.push_back(bitwise_term(fmt::format("{} split at t={}", name, point.at), s, name,
                                       joined.at(name), whole.at(name), all));
      continue;
    }
    for (TermComparison& t :
         compare_terms(s, Phase::bwd, as_doubles(joined), f.reference, compare)) {
      const std::string label = fmt::format("{} split at t={} vs oracle", t.term, point.at);
      if (!t.message.empty()) t.message = fmt::format("{}: {}", label, t.message);
      t.term = label;
      r.terms.push_back(std::move(t));
    }
  }
}

void run_batch_head(const kernels::Backend& backend, const LoadedFixture& f, GateResult& r) {
  const KernelShape& s = f.job.shape;
  const Buffers clean = run_poisoned(backend, s, f.job.inputs, Phase::bwd, r.record);
  const auto names = kernels::kernel_output_names(s.op, Phase::bwd);
  // Perturbs every head (or sequence) but `kept`: its results keep their bits
  // and, where there are others, the others' o moves. `index_of` reads the
  // head or sequence from an index, (b, t, h, i) or a state's (b, h, i, j).
  auto keep_one = [&](const char* unit, const char* units, int count, int kept, auto index_of) {
    const Buffers perturbed =
        run_poisoned(backend, s,
                     perturb_tokens(s, f.job.inputs,
                                    [&](const auto& idx) { return index_of(idx, false) != kept; }),
                     Phase::bwd, r.record);
    for (const auto& name : names) {
      const bool state = TermLayout(s, name).state;
      r.terms.push_back(bitwise_term(
          fmt::format("{} {} {} unchanged", name, unit, kept), s, name, perturbed.at(name),
          clean.at(name), [&](const auto& idx) { return index_of(idx, state) == kept; }));
      if (count > 1 && name == "o")
        r.terms.push_back(moved_term(
            fmt::format("o {} but {} moved", units, kept), s, name, perturbed.at(name),
            clean.at(name), [&](const auto& idx) { return index_of(idx, state) != kept; }));
    }
  };
  auto head_of = [](const auto& idx, bool state) { return state ? idx[1] : idx[2]; };
  auto batch_of = [](const auto& idx, bool) { return idx[0]; };
  // the first head, then the last: a head that reads another's inputs shows on one
  keep_one("head", "heads", s.H, 0, head_of);
  if (s.H > 1) keep_one("head", "heads", s.H, s.H - 1, head_of);
  // the same with a kept sequence, where there are several
  if (s.B > 1) {
    keep_one("batch", "batches", s.B, 0, batch_of);
    keep_one("batch", "batches", s.B, s.B - 1, batch_of);
  }
  // the batch size: append a perturbed copy of every sequence; the first B keep their bits
  KernelShape doubled = s;
  doubled.B = 2 * s.B;
  Buffers stacked = f.job.inputs;
  const Buffers copy = perturb_tokens(s, f.job.inputs, [](const auto&) { return true; });
  for (auto& [name, values] : stacked)
    values.insert(values.end(), copy.at(name).begin(), copy.at(name).end());
  const Buffers batched = run_poisoned(backend, doubled, stacked, Phase::bwd, r.record);
  for (const auto& name : names) {
    std::vector<float> first(batched.at(name).begin(),
                             batched.at(name).begin() + clean.at(name).size());
    r.terms.push_back(bitwise_term(fmt::format("{} unchanged with B doubled", name), s, name, first,
                                   clean.at(name), [](const auto&) { return true; }));
  }
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
  if (gate.kind == GateKind::oracle) {
    const Buffers out = run_poisoned(backend, f.job.shape, f.job.inputs, gate.phase, r.record);
    auto candidate = as_doubles(out);
    if (DELTAPROOF_INSTRUMENT_FAULT(layout_swapped)) read_head_first(f.job.shape, candidate);
    const auto reference = DELTAPROOF_INSTRUMENT_FAULT(reference_other_seed)
                               ? reference_of_other_seed(f.file, fixture.string(), gate.phase)
                               : f.reference;
    r.terms =
        compare_terms(f.job.shape, gate.phase, candidate, reference, family_compare(*gate.family));
    r.determinism.repeats = std::max(1, options.repeat);
    for (int i = 1; i < options.repeat && r.determinism.identical; ++i) {
      kernels::ExecutionRecord again;
      const Buffers other = run_poisoned(backend, f.job.shape, f.job.inputs, gate.phase, again);
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
      const Buffers other = replay_once(options, gate, fixture, f.job.shape, i);
      const std::string diff = bitwise_difference(f.job.shape, out, other);
      if (!diff.empty()) {
        r.determinism.identical = false;
        r.determinism.first_difference = fmt::format("process {} vs this process: {}", i + 1, diff);
      }
    }
  } else {
    r.required_stages = gate.family->fwd_stages;
    if (gate.kind == GateKind::causality) run_causality(backend, f, r);
    if (gate.kind == GateKind::split_call) run_split_call(backend, gate, f, r);
    if (gate.kind == GateKind::batch_head) run_batch_head(backend, f, r);
  }
  finish(r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

GateResult check_candidate(const fs::path& fixture, const fs::path& candidate_path,
                           Precision precision, std::optional<Phase> phase_wanted) {
  const auto start = std::chrono::steady_clock::now();
  const SafetensorsFile candidate = read_safetensors(candidate_path);
  // a candidate with no gradient is checked forward only, and says so
  bool has_gradients = false;
  for (Op op : {Op::gdn2, Op::kda})  // gdn's gradients are kda's
    for (const auto& name : kernels::kernel_output_names(op, Phase::bwd))
      has_gradients = has_gradients || (name != "o" && name != "ht" && candidate.has(name));
  const Phase phase = phase_wanted.value_or(has_gradients ? Phase::bwd : Phase::fwd);
  const LoadedFixture f = load_fixture(fixture, phase);
  GateResult r;
  r.name = fmt::format("check.{}.{}", op_name(f.job.shape.op), candidate_path.filename().string());
  r.kind = "check";
  r.op = op_name(f.job.shape.op);
  auto backend = candidate.metadata.find("backend");
  r.backend = backend == candidate.metadata.end() ? "external" : backend->second;
  r.phase = phase == Phase::bwd ? "bwd" : "fwd";
  r.gradients_compared = phase == Phase::bwd;
  r.precision = precision_name(precision);
  r.fixture = f.info;
  const auto values = candidate_values(candidate, candidate_path, f.job.shape, phase);
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

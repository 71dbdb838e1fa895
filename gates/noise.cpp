// gates/noise.cpp — see noise.hpp.
#include "gates/noise.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "core/files.hpp"
#include "core/metric.hpp"
#include "core/parallel.hpp"
#include "core/rng.hpp"
#include "core/sha256.hpp"
#include "kernels/cpu/backends.hpp"

namespace deltaproof::gates {
using kernels::Buffers;
using kernels::KernelShape;
using kernels::Phase;
using kernels::PrecisionContract;
using kernels::Rounding;

const NoiseTolerances& noise_tolerances(Precision precision) {
  // Evidence for each figure: docs/PRECISION.md (FLA on the H200 against
  // these ensembles, and the graded faults each class must kill).
  static const NoiseTolerances f32{24.0, 1e-6, 4.0, 4e-6, 3.0};
  static const NoiseTolerances tf32{2.0, 2.5e-4, 2.0, 2.5e-4, 3.0};
  static const NoiseTolerances bf16{2.0, 2e-3, 6.0, 1e-3, 3.0};
  switch (precision) {
    case Precision::tf32:
      return tf32;
    case Precision::bf16:
      return bf16;
    default:
      return f32;
  }
}

std::vector<EnsembleMember> ensemble_members(Precision precision, int chunk) {
  // another chunk size: the same function, other sums (FLA's sub-chunks are 16)
  const int other_chunk = chunk >= 32 ? chunk / 2 : chunk * 2;
  auto contract = [precision](Rounding rule, std::uint64_t seed = 0) {
    PrecisionContract c;
    c.precision = precision;
    c.rounding = rule;
    c.seed = seed;
    return c;
  };
  const PrecisionContract nearest = contract(Rounding::nearest_even);
  std::vector<EnsembleMember> members = {
      {"baseline (nearest-even)", nearest, chunk, false},
      {"channels reversed", nearest, chunk, true},
      {fmt::format("chunk {}", other_chunk), nearest, other_chunk, false},
  };
  if (precision == Precision::f32) {
    members.push_back(
        {fmt::format("chunk {}, channels reversed", other_chunk), nearest, other_chunk, true});
    return members;
  }
  members.push_back({"stochastic rounding, stream 1", contract(Rounding::stochastic, 1), chunk});
  members.push_back({"stochastic rounding, stream 2", contract(Rounding::stochastic, 2), chunk});
  if (precision == Precision::tf32) {
    // Hopper's tensor cores read an f32 register as TF32 by dropping its low bits
    members.push_back({"toward zero (TF32 truncation)", contract(Rounding::toward_zero), chunk});
    members.push_back({fmt::format("toward zero, chunk {}", other_chunk),
                       contract(Rounding::toward_zero), other_chunk});
  } else {
    PrecisionContract f32_intermediates = nearest;
    f32_intermediates.intermediates = false;
    members.push_back({"intermediates kept f32", f32_intermediates, chunk});
    PrecisionContract f32_outputs = nearest;
    f32_outputs.outputs = false;
    members.push_back({"outputs kept f32", f32_outputs, chunk});
    // an f32 fixture's inputs read in bf16, and the problem's sensitivity to
    // them at that precision (on a bf16 fixture, each the baseline)
    members.push_back({"inputs read in bf16", nearest, chunk, false, Rounding::nearest_even});
    for (std::uint64_t stream : {1, 2})
      members.push_back({fmt::format("inputs stochastically rounded to bf16, stream {}", stream),
                         nearest, chunk, false, Rounding::stochastic, stream});
  }
  return members;
}

nlohmann::json NoiseModel::to_json() const {
  nlohmann::json names = nlohmann::json::array();
  for (const auto& m : members) names.push_back(m.name);
  return {{"precision", kernels::precision_name(precision)},
          {"source", "cpu-chunk under the class's precision contract (docs/PRECISION.md)"},
          {"members", names},
          {"kappa_error", tolerances.kappa_error},
          {"error_floor", tolerances.error_floor},
          {"kappa_bias", tolerances.kappa_bias},
          {"bias_floor", tolerances.bias_floor},
          {"grain_z", tolerances.grain_z},
          {"seconds", seconds}};
}

namespace {

// Reverses the K and V channels of a named tensor (its own inverse).
template <class T>
void reverse_channels(const KernelShape& s, const std::string& name, std::vector<T>& values) {
  using kernels::ChannelAxis;
  const ChannelAxis axis = kernels::channel_axis(s, name);
  if (axis == ChannelAxis::none) return;
  if (axis == ChannelAxis::state) {
    std::vector<T> out(values.size());
    const std::size_t plane = static_cast<std::size_t>(s.K) * s.V;
    for (std::size_t base = 0; base < values.size(); base += plane)
      for (int i = 0; i < s.K; ++i)
        for (int j = 0; j < s.V; ++j)
          out[base + static_cast<std::size_t>(i) * s.V + j] =
              values[base + static_cast<std::size_t>(s.K - 1 - i) * s.V + (s.V - 1 - j)];
    values = std::move(out);
    return;
  }
  const std::size_t width = axis == ChannelAxis::k ? s.K : s.V;
  for (std::size_t row = 0; row < values.size(); row += width)
    std::reverse(values.begin() + static_cast<std::ptrdiff_t>(row),
                 values.begin() + static_cast<std::ptrdiff_t>(row + width));
}

// The tensors a member with inputs_in_bf16 rounds, in stream order (g and the
// states stay f32, as FLA takes them).
constexpr const char* kBf16InputNames[] = {"q", "k", "v", "b", "w", "beta", "do"};

Buffers run_member(const KernelShape& shape, const Buffers& inputs, Phase phase,
                   const EnsembleMember& member) {
  KernelShape s = shape;
  s.contract = member.contract;
  s.chunk = member.chunk;
  Buffers in = inputs;
  if (member.channels_reversed)
    for (auto& [name, values] : in) reverse_channels(s, name, values);
  if (member.inputs_in_bf16) {
    std::uint64_t tensor = 0;
    for (const char* name : kBf16InputNames) {
      ++tensor;
      auto it = in.find(name);
      if (it == in.end()) continue;
      Rng bits(member.inputs_stream, tensor);  // one stream per member and tensor
      for (float& x : it->second)
        x = kernels::round_float(x, Precision::bf16, *member.inputs_in_bf16,
                                 static_cast<std::uint32_t>(bits.next_u64() >> 32));
    }
  }
  Buffers out = kernels::allocate_outputs(s, phase, 0.0f);
  kernels::ExecutionRecord record;
  kernels::cpu::chunk_backend().run(s, in, phase, out, record);
  if (member.channels_reversed)
    for (auto& [name, values] : out) reverse_channels(s, name, values);
  return out;
}

// Whether every token input a member may round to bf16 (run_member) is exact
// in bf16 already: then no rounding rule changes any of them.
bool inputs_exact_in_bf16(const Buffers& inputs) {
  for (const char* name : kBf16InputNames) {
    auto it = inputs.find(name);
    if (it == inputs.end()) continue;
    for (float x : it->second)
      if (kernels::round_float(x, Precision::bf16, Rounding::toward_zero, 0) != x) return false;
  }
  return true;
}

// Two members that, on inputs their rounding leaves alone, compute the same.
bool same_run(const EnsembleMember& a, const EnsembleMember& b) {
  const PrecisionContract &x = a.contract, &y = b.contract;
  return x.precision == y.precision && x.rounding == y.rounding && x.seed == y.seed &&
         x.operands == y.operands && x.intermediates == y.intermediates && x.outputs == y.outputs &&
         a.chunk == b.chunk && a.channels_reversed == b.channels_reversed;
}

double max_abs(const std::vector<double>& v) {
  double m = 0.0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

Band band_of(const std::vector<double>& xs) {
  Band b{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  bool any = false;
  for (double x : xs)
    if (std::isfinite(x)) {
      b.lo = std::min(b.lo, x);
      b.hi = std::max(b.hi, x);
      any = true;
    }
  if (!any) b = {NAN, NAN};
  return b;
}

// How far a group's alpha may lie from its band's mid-point: kappa_bias x
// the ensemble's half-range, plus the floor, plus grain_z x the group's
// rounding grain.
double allowed_half(const Band& band, const NoiseTolerances& tol, double grain) {
  return tol.kappa_bias * band.half() + tol.bias_floor + tol.grain_z * grain;
}

// The largest |alpha - mid| / allowed half-width over one kind of group.
struct Excess {
  double ratio = 0.0;
  std::size_t group = 0;
};
Excess worst_excess(const std::vector<double>& alpha, const std::vector<Band>& bands,
                    const std::vector<double>& grains, const NoiseTolerances& tol) {
  Excess worst;
  for (std::size_t g = 0; g < alpha.size() && g < bands.size(); ++g) {
    if (!std::isfinite(alpha[g]) || !std::isfinite(bands[g].lo)) continue;
    const double allowed = allowed_half(bands[g], tol, grains[g]);
    const double ratio = std::abs(alpha[g] - bands[g].mid()) / allowed;
    if (ratio > worst.ratio) worst = {ratio, g};
  }
  return worst;
}

}  // namespace

namespace {

// One pass over a term: each group's sums for the slopes (with a candidate)
// and the grains (with digits > 0, the output format's significant bits).
Slopes group_sums(const KernelShape& s, const std::string& term, const double* candidate,
                  const std::vector<double>& reference, int digits) {
  const TermGroups groups(s, term);
  const std::size_t chunks = groups.chunks(), heads = groups.heads();
  std::vector<double> chunk_cross(chunks, 0.0), chunk_ref(chunks, 0.0), chunk_flip(chunks, 0.0);
  std::vector<double> head_cross(heads, 0.0), head_ref(heads, 0.0), head_flip(heads, 0.0);
  double cross = 0.0, ref2 = 0.0, err2 = 0.0;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double r = reference[i];
    const TermGroups::Of at = groups.of(i);
    double e = 0.0, moved = 0.0;
    if (candidate != nullptr) {
      e = (candidate[i] - r) * r;
      err2 += (candidate[i] - r) * (candidate[i] - r);
    }
    if (digits > 0 && r != 0.0 && std::isfinite(r))
      moved = std::ldexp(1.0, std::ilogb(r) - (digits - 1)) * r;  // ulp(r) r
    cross += e;
    ref2 += r * r;
    head_cross[at.head] += e;
    head_ref[at.head] += r * r;
    head_flip[at.head] += moved * moved;
    if (chunks > 0) {
      chunk_cross[at.chunk] += e;
      chunk_ref[at.chunk] += r * r;
      chunk_flip[at.chunk] += moved * moved;
    }
  }
  auto slope = [](double c, double r2) { return r2 > 0.0 ? c / r2 : NAN; };
  auto grain = [](double f, double r2) { return r2 > 0.0 ? std::sqrt(f) / r2 : 0.0; };
  Slopes out;
  if (candidate != nullptr) {
    out.whole = slope(cross, ref2);
    out.correlation = err2 > 0 && ref2 > 0 ? cross / std::sqrt(err2 * ref2) : 0.0;
    for (std::size_t c = 0; c < chunks; ++c)
      out.chunk.push_back(slope(chunk_cross[c], chunk_ref[c]));
    for (std::size_t h = 0; h < heads; ++h) out.head.push_back(slope(head_cross[h], head_ref[h]));
  }
  if (digits > 0) {
    for (std::size_t c = 0; c < chunks; ++c)
      out.grains.chunk.push_back(grain(chunk_flip[c], chunk_ref[c]));
    for (std::size_t h = 0; h < heads; ++h)
      out.grains.head.push_back(grain(head_flip[h], head_ref[h]));
  }
  return out;
}

int output_digits(Precision precision) { return precision == Precision::bf16 ? 8 : 24; }

}  // namespace

Slopes regression_slopes(const KernelShape& s, const std::string& term,
                         const std::vector<double>& candidate, const std::vector<double>& reference,
                         std::optional<Precision> grains_of) {
  return group_sums(s, term, candidate.data(), reference,
                    grains_of ? output_digits(*grains_of) : 0);
}

Grains rounding_grains(const KernelShape& s, const std::string& term,
                       const std::vector<double>& reference, Precision precision) {
  return group_sums(s, term, nullptr, reference, output_digits(precision)).grains;
}

namespace {

std::filesystem::path& noise_cache_folder() {
  static std::filesystem::path folder;
  return folder;
}

// sha256 over the cache format, the shape, phase and class, and each input
// and reference tensor's own sha256 (those in parallel: 4 GB of a
// production-shape fixture in seconds).
std::string noise_key(const KernelShape& shape, const Buffers& inputs, Phase phase,
                      const std::map<std::string, std::vector<double>>& reference,
                      Precision precision) {
  struct Part {
    std::string label;
    std::span<const std::byte> bytes;
    std::string hash;
  };
  std::vector<Part> parts;
  for (const auto& [name, values] : inputs)
    parts.push_back({"input " + name, std::as_bytes(std::span(values)), ""});
  for (const auto& [name, values] : reference)
    parts.push_back({"reference " + name, std::as_bytes(std::span(values)), ""});
  parallel_for(static_cast<int>(parts.size()), 0, [&](int i) {
    Part& part = parts[static_cast<std::size_t>(i)];
    part.hash = sha256_hex(part.bytes);
  });
  std::string text = fmt::format(
      "{} {} B{} T{} H{} K{} V{} chunk{} scale{:a} bf16_inputs{} {} {}\n", kNoiseCacheFormat,
      op_name(shape.op), shape.B, shape.T, shape.H, shape.K, shape.V, shape.chunk, shape.scale,
      shape.bf16_inputs, kernels::phase_name(phase), kernels::precision_name(precision));
  for (const Part& part : parts) text += part.label + " " + part.hash + "\n";
  return sha256_hex(std::as_bytes(std::span(text.data(), text.size())));
}

nlohmann::json number(double x) { return std::isnan(x) ? nlohmann::json() : nlohmann::json(x); }
double number(const nlohmann::json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}
nlohmann::json numbers(const std::vector<double>& xs) {
  nlohmann::json out = nlohmann::json::array();
  for (double x : xs) out.push_back(number(x));
  return out;
}
std::vector<double> numbers(const nlohmann::json& j) {
  std::vector<double> out;
  for (const auto& x : j) out.push_back(number(x));
  return out;
}
nlohmann::json bands(const std::vector<Band>& bs) {
  nlohmann::json out = nlohmann::json::array();
  for (const Band& b : bs) out.push_back({number(b.lo), number(b.hi)});
  return out;
}
std::vector<Band> bands(const nlohmann::json& j) {
  std::vector<Band> out;
  for (const auto& b : j) out.push_back({number(b.at(0)), number(b.at(1))});
  return out;
}

NoiseModel measure_uncached(const KernelShape& shape, const Buffers& inputs, Phase phase,
                            const std::map<std::string, std::vector<double>>& reference,
                            Precision precision);

// A model with what follows from the class and the chunk size alone: the
// tolerances and the members; its terms still to fill.
NoiseModel model_of(Precision precision, int chunk) {
  NoiseModel model;
  model.precision = precision;
  model.tolerances = noise_tolerances(precision);
  model.members = ensemble_members(precision, chunk);
  return model;
}

}  // namespace

void set_noise_cache(const std::filesystem::path& folder) { noise_cache_folder() = folder; }

nlohmann::json terms_to_json(const NoiseModel& model) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [term, n] : model.terms)
    out[term] = {{"baseline_rel", number(n.baseline_rel)},
                 {"worst_rel", number(n.worst_rel)},
                 {"member_rel", numbers(n.member_rel)},
                 {"member_alpha", numbers(n.member_alpha)},
                 {"chunk_worst_rel", numbers(n.chunk_worst_rel)},
                 {"alpha", bands({n.alpha})},
                 {"chunk_alpha", bands(n.chunk_alpha)},
                 {"head_alpha", bands(n.head_alpha)},
                 {"alpha_mean", number(n.alpha_mean)},
                 {"alpha_sigma", number(n.alpha_sigma)}};
  return out;
}

void terms_from_json(const nlohmann::json& json, NoiseModel& model) {
  model.terms.clear();
  for (const auto& [term, j] : json.items()) {
    TermNoise& n = model.terms[term];
    n.baseline_rel = number(j.at("baseline_rel"));
    n.worst_rel = number(j.at("worst_rel"));
    n.member_rel = numbers(j.at("member_rel"));
    n.member_alpha = numbers(j.at("member_alpha"));
    n.chunk_worst_rel = numbers(j.at("chunk_worst_rel"));
    n.alpha = bands(j.at("alpha")).at(0);
    n.chunk_alpha = bands(j.at("chunk_alpha"));
    n.head_alpha = bands(j.at("head_alpha"));
    n.alpha_mean = number(j.at("alpha_mean"));
    n.alpha_sigma = number(j.at("alpha_sigma"));
  }
}

NoiseModel measure_noise(const KernelShape& shape, const Buffers& inputs, Phase phase,
                         const std::map<std::string, std::vector<double>>& reference,
                         Precision precision) {
  const std::filesystem::path& folder = noise_cache_folder();
  if (folder.empty()) return measure_uncached(shape, inputs, phase, reference, precision);
  const auto start = std::chrono::steady_clock::now();
  const std::filesystem::path file =
      folder / (noise_key(shape, inputs, phase, reference, precision) + ".json");
  if (std::filesystem::is_regular_file(file)) {
    try {
      const auto bytes = read_file_bytes(file);
      const auto json = nlohmann::json::parse(
          std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      NoiseModel model = model_of(precision, shape.chunk);
      terms_from_json(json.at("terms"), model);
      model.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return model;
    } catch (const std::exception& e) {  // a damaged entry: measured again and replaced
      fmt::print(stderr,
                 "deltaproof: the noise cache entry {} cannot be read ({}); measuring "
                 "the noise again.\n",
                 file.string(), e.what());
    }
  }
  NoiseModel model = measure_uncached(shape, inputs, phase, reference, precision);
  std::filesystem::create_directories(folder);
  write_text_atomically(file, nlohmann::json{{"format", kNoiseCacheFormat},
                                             {"precision", kernels::precision_name(precision)},
                                             {"seconds", model.seconds},
                                             {"terms", terms_to_json(model)}}
                                      .dump() +
                                  "\n");
  return model;
}

namespace {

NoiseModel measure_uncached(const KernelShape& shape, const Buffers& inputs, Phase phase,
                            const std::map<std::string, std::vector<double>>& reference,
                            Precision precision) {
  const auto start = std::chrono::steady_clock::now();
  NoiseModel model = model_of(precision, shape.chunk);
  // per term: each member's slopes, rel and per-chunk error
  std::map<std::string, std::vector<Slopes>> slopes;
  // A member whose rounding of the inputs changes none of them (a bf16
  // fixture's inputs are exact in bf16) runs exactly what an earlier member
  // with the same contract, chunk and channel order ran: its outputs are that
  // member's, not run again.
  const std::size_t count = model.members.size();
  const bool exact_in_bf16 = inputs_exact_in_bf16(inputs);
  auto leaves_inputs = [&](const EnsembleMember& m) { return !m.inputs_in_bf16 || exact_in_bf16; };
  std::vector<std::size_t> runs_as(count);
  for (std::size_t m = 0; m < count; ++m) {
    runs_as[m] = m;
    if (!leaves_inputs(model.members[m])) continue;
    for (std::size_t e = 0; e < m; ++e)
      if (runs_as[e] == e && leaves_inputs(model.members[e]) &&
          same_run(model.members[m], model.members[e])) {
        runs_as[m] = e;
        break;
      }
  }
  // The members that run, at once when the fixture has fewer sequences than
  // there are threads (cpu-chunk runs one thread per sequence: a one-sequence
  // T 32768 fixture would leave all but one idle), else one after another.
  std::vector<std::size_t> distinct;
  for (std::size_t m = 0; m < count; ++m)
    if (runs_as[m] == m) distinct.push_back(m);
  std::vector<Buffers> outputs(count);
  const bool few_sequences = shape.B * shape.H < resolve_threads(0);
  parallel_for(static_cast<int>(distinct.size()), few_sequences ? 0 : 1, [&](int i) {
    const std::size_t m = distinct[static_cast<std::size_t>(i)];
    outputs[m] = run_member(shape, inputs, phase, model.members[m]);
  });
  // Each run's error on each term, (run, term) pairs in parallel: at the
  // production shape a term is 33 M elements and these passes, one after
  // another, took longer than the runs.
  const std::vector<std::string> names = kernels::kernel_output_names(shape.op, phase);
  struct Measured {
    double rel = 0.0;
    std::vector<double> chunk_worst_rel;
    Slopes slopes;
  };
  std::vector<Measured> measured(distinct.size() * names.size());
  parallel_for(static_cast<int>(measured.size()), 0, [&](int n) {
    const std::size_t run = distinct[static_cast<std::size_t>(n) / names.size()];
    const std::string& term = names[static_cast<std::size_t>(n) % names.size()];
    const std::vector<double>& ref = reference.at(term);
    const std::vector<double> got(outputs[run].at(term).begin(), outputs[run].at(term).end());
    const double amax = max_abs(ref);
    const TermGroups groups(shape, term);
    const std::size_t chunks = groups.chunks();
    Measured& out = measured[static_cast<std::size_t>(n)];
    out.chunk_worst_rel.assign(chunks, 0.0);
    RelError error;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double diff = error.add(got[i], ref[i]);
      if (chunks > 0) {
        double& slot = out.chunk_worst_rel[groups.of(i).chunk];
        slot = std::max(slot, amax > 0 ? diff / amax : 0.0);
      }
    }
    // (a zero reference: no figure to hold the candidate to)
    out.rel = amax > 0 ? error.rel() : 0.0;
    out.slopes = regression_slopes(shape, term, got, ref);
  });
  // folded in member order: a member that ran as an earlier one has its figures
  for (std::size_t m = 0; m < count; ++m) {
    const auto run = static_cast<std::size_t>(
        std::find(distinct.begin(), distinct.end(), runs_as[m]) - distinct.begin());
    for (std::size_t j = 0; j < names.size(); ++j) {
      const Measured& got = measured[run * names.size() + j];
      TermNoise& noise = model.terms[names[j]];
      noise.chunk_worst_rel.resize(got.chunk_worst_rel.size(), 0.0);
      for (std::size_t c = 0; c < got.chunk_worst_rel.size(); ++c)
        noise.chunk_worst_rel[c] = std::max(noise.chunk_worst_rel[c], got.chunk_worst_rel[c]);
      noise.member_rel.push_back(got.rel);
      slopes[names[j]].push_back(got.slopes);
    }
  }
  for (auto& [term, noise] : model.terms) {
    noise.baseline_rel = noise.member_rel.front();
    noise.worst_rel = *std::max_element(noise.member_rel.begin(), noise.member_rel.end());
    const auto& each = slopes.at(term);
    std::vector<double> whole;
    for (const auto& s : each) whole.push_back(s.whole);
    noise.alpha = band_of(whole);
    noise.member_alpha = whole;
    double mean = 0.0, var = 0.0;
    for (double a : whole) mean += a / static_cast<double>(whole.size());
    for (double a : whole) var += (a - mean) * (a - mean) / static_cast<double>(whole.size() - 1);
    noise.alpha_sigma = std::sqrt(var);
    noise.alpha_mean = mean;
    auto bands = [&each](auto field) {
      std::vector<Band> out;
      for (std::size_t g = 0; g < (each.front().*field).size(); ++g) {
        std::vector<double> xs;
        for (const auto& s : each) xs.push_back((s.*field)[g]);
        out.push_back(band_of(xs));
      }
      return out;
    };
    noise.chunk_alpha = bands(&Slopes::chunk);
    noise.head_alpha = bands(&Slopes::head);
  }
  model.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return model;
}

}  // namespace

std::map<std::string, double> noise_bars(const NoiseModel& model) {
  std::map<std::string, double> bars;
  for (const auto& [term, noise] : model.terms)
    bars[term] =
        std::max(model.tolerances.kappa_error * noise.worst_rel, model.tolerances.error_floor);
  return bars;
}

void judge_bias(const KernelShape& shape, const NoiseModel& model,
                const std::map<std::string, std::vector<double>>& candidate,
                const std::map<std::string, std::vector<double>>& reference,
                std::vector<TermComparison>& terms) {
  const NoiseTolerances& tol = model.tolerances;
  // the candidate's slopes of every term it has, terms in parallel (33 M
  // elements a term at the production shape)
  std::vector<std::optional<Slopes>> slopes(terms.size());
  std::vector<Grains> grains(terms.size());
  parallel_for(static_cast<int>(terms.size()), 0, [&](int i) {
    const auto k = static_cast<std::size_t>(i);
    const TermComparison& t = terms[k];
    if (model.terms.count(t.term) == 0) return;
    const auto& want = reference.at(t.term);
    const auto got = candidate.find(t.term);
    if (got != candidate.end() && got->second.size() == want.size()) {
      slopes[k] = regression_slopes(shape, t.term, got->second, want, model.precision);
      grains[k] = slopes[k]->grains;
    } else {
      grains[k] = rounding_grains(shape, t.term, want, model.precision);
    }
  });
  bool forward_passed = true;
  for (std::size_t k = 0; k < terms.size(); ++k) {
    TermComparison& t = terms[k];
    const auto found = model.terms.find(t.term);
    if (found == model.terms.end()) continue;
    const TermNoise& noise = found->second;
    auto& n = t.noise;
    n.measured = true;
    n.baseline_rel = noise.baseline_rel;
    n.worst_rel = noise.worst_rel;
    n.chunk_worst_rel = noise.chunk_worst_rel;
    n.member_rel = noise.member_rel;
    n.member_alpha = noise.member_alpha;
    // the whole term's band takes no grain: its slope is what a uniform bias
    // moves, and in a term of few elements (gdn's dg) a grain would hide a 1%
    // scaling; a chunk or a head is where few elements make the slope noisy
    const Grains& grain = grains[k];
    const double allowed = allowed_half(noise.alpha, tol, 0.0);
    n.alpha_lo = noise.alpha.mid() - allowed;
    n.alpha_hi = noise.alpha.mid() + allowed;
    // a uniform scaling by 1 + s has rel |s| and alpha s in every group (the term, each
    // chunk, each head): red past the bar or past the narrowest group's band
    n.mde = std::min(t.bar, allowed + std::abs(noise.alpha.mid()));
    for (const auto& [groups, group_grains] :
         {std::pair{&noise.chunk_alpha, &grain.chunk}, std::pair{&noise.head_alpha, &grain.head}})
      for (std::size_t g = 0; g < groups->size() && g < group_grains->size(); ++g)
        if (std::isfinite((*groups)[g].lo))
          n.mde = std::min(n.mde, allowed_half((*groups)[g], tol, (*group_grains)[g]) +
                                      std::abs((*groups)[g].mid()));
    if (!t.is_forward() && !forward_passed && t.status != TermStatus::missing &&
        t.status != TermStatus::not_compared)
      t.set_not_compared();
    if (t.status == TermStatus::not_compared || t.status == TermStatus::missing ||
        t.status == TermStatus::unresolvable || t.non_finite > 0) {
      n.alpha = n.alpha_z = n.bias_excess = n.correlation = NAN;
      if (t.is_forward() && t.status != TermStatus::pass) forward_passed = false;
      continue;
    }
    const Slopes& got = slopes[k].value();
    n.alpha = got.whole;
    n.correlation = got.correlation;
    n.chunk_alpha = got.chunk;
    n.head_alpha = got.head;
    auto limits = [&tol](const std::vector<Band>& groups, const std::vector<double>& grains) {
      std::vector<std::array<double, 2>> out;
      for (std::size_t g = 0; g < groups.size(); ++g) {
        const double half = allowed_half(groups[g], tol, g < grains.size() ? grains[g] : 0.0);
        out.push_back({groups[g].mid() - half, groups[g].mid() + half});
      }
      return out;
    };
    n.chunk_band = limits(noise.chunk_alpha, grain.chunk);
    n.head_band = limits(noise.head_alpha, grain.head);
    n.alpha_z = noise.alpha_sigma > 0 ? (got.whole - noise.alpha_mean) / noise.alpha_sigma
                                      : std::numeric_limits<double>::infinity();
    // the most biased group: the whole term, a chunk, a head
    const Excess whole = worst_excess({got.whole}, {noise.alpha}, {0.0}, tol);
    const Excess chunk = worst_excess(got.chunk, noise.chunk_alpha, grain.chunk, tol);
    const Excess head = worst_excess(got.head, noise.head_alpha, grain.head, tol);
    n.bias_excess = whole.ratio;
    n.bias_where = "term";
    const TermGroups groups(shape, t.term);  // names the worst chunk or head
    double group_alpha = got.whole, group_grain = 0.0;
    Band group_band = noise.alpha;
    if (chunk.ratio > n.bias_excess) {
      n.bias_excess = chunk.ratio;
      n.bias_where = groups.chunk_name(chunk.group);
      group_alpha = got.chunk[chunk.group];
      group_band = noise.chunk_alpha[chunk.group];
      group_grain = grain.chunk[chunk.group];
    }
    if (head.ratio > n.bias_excess) {
      n.bias_excess = head.ratio;
      n.bias_where = groups.head_name(head.group);
      group_alpha = got.head[head.group];
      group_band = noise.head_alpha[head.group];
      group_grain = grain.head[head.group];
    }
    if (n.bias_excess > 1.0 && t.status == TermStatus::pass) {
      t.status = TermStatus::fail;
      const double half = allowed_half(group_band, tol, group_grain);
      const std::string grain_part =
          group_grain > 0.0 ? fmt::format(", of which {:.2e} is the outputs' rounding grain",
                                          tol.grain_z * group_grain)
                            : "";
      t.message = fmt::format(
          "{}: biased: the error's regression slope on the reference in {} is {:+.3e}, outside "
          "the {} class's band [{:+.3e}, {:+.3e}] ({:.1f}x its half-width{}; rel {:.3e} is "
          "under bar {:.3e})",
          t.term, n.bias_where, group_alpha, kernels::precision_name(model.precision),
          group_band.mid() - half, group_band.mid() + half, n.bias_excess, grain_part, t.rel,
          t.bar);
    }
    if (t.is_forward() && t.status != TermStatus::pass) forward_passed = false;
  }
}

std::vector<TermComparison> judge_against_noise(
    const KernelShape& shape, Phase phase, const NoiseModel& model,
    const std::map<std::string, std::vector<double>>& candidate,
    const std::map<std::string, std::vector<double>>& reference) {
  CompareOptions options;
  options.term_bars = noise_bars(model);
  auto terms = compare_terms(shape, phase, candidate, reference, options);
  judge_bias(shape, model, candidate, reference, terms);
  return terms;
}

}  // namespace deltaproof::gates

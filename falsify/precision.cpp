// falsify/precision.cpp — see precision.hpp.
#include "falsify/precision.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/names.hpp"
#include "core/safetensors.hpp"
#include "falsify/campaign.hpp"
#include "gates/fixture_io.hpp"
#include "gates/noise.hpp"
#include "gates/report.hpp"
#include "gates/runner.hpp"
#include "kernels/backend.hpp"
#include "kernels/faults.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using gates::TermComparison;
using gates::TermStatus;
using kernels::KernelShape;
using kernels::Phase;
using kernels::Precision;
using Values = std::map<std::string, std::vector<double>>;

double required_scaling(Precision precision) { return precision == Precision::bf16 ? 0.01 : 0.005; }

namespace {

constexpr std::pair<PrecisionFaultKind, std::string_view> kKindNames[] = {
    {PrecisionFaultKind::clean, "clean"},
    {PrecisionFaultKind::graded, "graded"},
    {PrecisionFaultKind::catalog, "catalog"},
};
std::string_view kind_name(PrecisionFaultKind kind) { return name_of(kKindNames, kind); }

// A fault applied to a candidate's outputs.
struct GradedFault {
  std::string id, term;
  double size = 0.0;
  std::function<void(const KernelShape&, Values&)> apply;
};

// Row t of (b, h) of a token tensor (its first element), and a row's width.
double* row_of(const KernelShape& s, const std::string& term, Values& values, int b, int t, int h) {
  return &values.at(term)[token_offset(s.T, s.H, kernels::tensor_width(s, term), b, t, h, 0)];
}
int row_width(const KernelShape& s, const std::string& term) {
  return std::max(1, kernels::tensor_width(s, term));
}

std::vector<GradedFault> graded_faults(const KernelShape& s) {
  std::vector<GradedFault> faults;
  for (const auto& term : kernels::kernel_output_names(s.op, Phase::bwd))
    for (double size : {0.005, 0.01, 0.02, 0.05})
      for (double sign : {1.0, -1.0}) {
        const double factor = 1.0 + sign * size;
        faults.push_back({fmt::format("{}-x{:.3f}", term, factor), term, size,
                          [term, factor](const KernelShape&, Values& v) {
                            for (double& x : v.at(term)) x *= factor;
                          }});
      }
  const int chunks = (s.T + s.chunk - 1) / s.chunk;
  const int c = chunks / 2;  // a middle chunk (chunk 0 of a one-chunk fixture)
  const int start = c * s.chunk, end = std::min(s.T, start + s.chunk);
  faults.push_back({fmt::format("dg-sign-flipped-in-chunk-{}", c), "dg", 0.0,
                    [start, end](const KernelShape& shape, Values& v) {
                      const int width = row_width(shape, "dg");
                      for (int b = 0; b < shape.B; ++b)
                        for (int h = 0; h < shape.H; ++h)
                          for (int t = start; t < end; ++t) {
                            double* row = row_of(shape, "dg", v, b, t, h);
                            for (int i = 0; i < width; ++i) row[i] = -row[i];
                          }
                    }});
  for (const char* term : {"o", "dk"}) {
    const std::string name = term;
    faults.push_back({fmt::format("{}-rows-shifted-in-chunk-{}", name, c), name, 0.0,
                      [name, start, end](const KernelShape& shape, Values& v) {
                        // row t takes row t-1's values, from the chunk's end down to its second row
                        const int width = row_width(shape, name);
                        for (int b = 0; b < shape.B; ++b)
                          for (int h = 0; h < shape.H; ++h)
                            for (int t = end - 1; t > start; --t)
                              std::copy_n(row_of(shape, name, v, b, t - 1, h), width,
                                          row_of(shape, name, v, b, t, h));
                      }});
  }
  return faults;
}

using Fixture = gates::LoadedFixture;

// A twin under the class's baseline contract (nearest-even at every allowed point).
Values contract_run(const kernels::Backend& twin, const Fixture& f, Precision precision) {
  KernelShape s = f.job.shape;
  s.contract.precision = precision;
  kernels::Buffers out = kernels::allocate_outputs(s, Phase::bwd, std::nanf(""));
  kernels::ExecutionRecord record;
  twin.run(s, f.job.inputs, Phase::bwd, out, record);
  Values values;
  for (const auto& [name, v] : out) values[name] = std::vector<double>(v.begin(), v.end());
  return values;
}

// A term's distance past its bar or band: > 1 is red.
double excess(const TermComparison& t) {
  if (t.non_finite > 0) return std::numeric_limits<double>::infinity();
  const double by_rel = std::isfinite(t.rel) && t.bar > 0 ? t.rel / t.bar : 0.0;
  const double by_bias = std::isfinite(t.noise.bias_excess) ? t.noise.bias_excess : 0.0;
  return std::max(by_rel, by_bias);
}

void judge(const std::vector<TermComparison>& terms, PrecisionOutcome& o) {
  o.killed = false;
  o.margin = 0.0;
  for (const auto& t : terms) {
    const bool red = t.status == TermStatus::fail || t.status == TermStatus::missing ||
                     t.status == TermStatus::unresolvable;
    if (t.term == o.term) o.mde = t.noise.mde;
    if (red && t.term == o.term) o.killer_is_term = true;
    if (red && !o.killed) {
      o.killed = true;
      const bool biased = t.noise.bias_excess > 1.0 && !(t.rel > t.bar);
      if (biased)
        o.killer = fmt::format("{}: bias in {}", t.term, t.noise.bias_where);
      else if (t.non_finite > 0)
        o.killer = fmt::format("{}: {} non-finite", t.term, t.non_finite);
      else if (t.status == TermStatus::fail)
        o.killer = t.term + ": rel";
      else
        o.killer = fmt::format("{}: {}", t.term, gates::status_name(t.status));
      o.margin = excess(t);
    }
    if (!o.killed) o.margin = std::max(o.margin, excess(t));
  }
}

}  // namespace

PrecisionCampaign run_precision_campaign(const PrecisionCampaignOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  if (!options.candidates.empty() && options.candidates.size() != options.fixtures.size())
    throw InputError(fmt::format(
        "{} candidates for {} fixtures: give one --candidate per --fixture, in the same order.",
        options.candidates.size(), options.fixtures.size()));
  PrecisionCampaign campaign;
  campaign.precision = options.precision;
  campaign.required_scaling = required_scaling(options.precision);
  const bool external = !options.candidates.empty();
  if (options.backend != "cpu-chunk" && options.backend != "cuda-chunk")
    throw InputError(fmt::format(
        "--backend {}: a precision campaign's twin is cpu-chunk or cuda-chunk (the backends "
        "that round under a contract).",
        options.backend));
  const kernels::Backend& twin = kernels::find_backend(options.backend);
  [[maybe_unused]] const bool on_gpu = options.backend == "cuda-chunk";
  if (on_gpu && !kernels::gpu_available())
    throw InputError("--backend cuda-chunk needs a CUDA GPU and this machine has none.");
  campaign.candidate_source =
      external ? "external candidates (one per fixture)"
               : fmt::format("{} under the {} contract (nearest-even at every allowed point)",
                             options.backend, kernels::precision_name(options.precision));
  [[maybe_unused]] const bool with_catalog =
      options.catalog_faults && !external && kernels::kFaultsCompiledIn;
  auto note = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  std::map<std::string, int> catalog_kills;

  for (std::size_t i = 0; i < options.fixtures.size(); ++i) {
    const Fixture f = gates::load_fixture(options.fixtures[i], Phase::bwd);
    const std::string name = options.fixtures[i].string();
    const KernelShape& shape = f.job.shape;
    note(fmt::format("{} ({} of {}): the {} noise model", name, i + 1, options.fixtures.size(),
                     kernels::precision_name(options.precision)));
    const gates::NoiseModel model =
        gates::measure_noise(shape, f.job.inputs, Phase::bwd, f.reference, options.precision);
    const Values clean = external
                             ? gates::candidate_values(read_safetensors(options.candidates[i]),
                                                       options.candidates[i], shape, Phase::bwd)
                             : contract_run(twin, f, options.precision);
    auto judged = [&](const Values& candidate, PrecisionOutcome o) {
      judge(gates::judge_against_noise(shape, Phase::bwd, model, candidate, f.reference), o);
      return o;
    };
    PrecisionOutcome base;
    base.fixture = name;
    base.fault = "clean";
    base.kind = PrecisionFaultKind::clean;
    campaign.outcomes.push_back(judged(clean, base));
    if (campaign.outcomes.back().killed)
      campaign.unmet.push_back(fmt::format("{}: the clean candidate is red ({})", name,
                                           campaign.outcomes.back().killer));

    for (const GradedFault& fault : graded_faults(shape)) {
      if (!f.reference.count(fault.term)) continue;
      Values candidate = clean;
      if (!candidate.count(fault.term)) continue;  // the candidate lacks it: nothing to break
      fault.apply(shape, candidate);
      PrecisionOutcome o;
      o.fixture = name;
      o.fault = fault.id;
      o.term = fault.term;
      o.size = fault.size;
      o.required = options.require_graded &&
                   (fault.size == 0.0 || fault.size >= campaign.required_scaling - 1e-12);
      o = judged(candidate, o);
      if (o.required && !o.killed)
        campaign.unmet.push_back(fmt::format("{}: graded fault {} survived (largest excess {:.2f})",
                                             name, fault.id, o.margin));
      else if (o.required && !o.killer_is_term)
        campaign.unmet.push_back(
            fmt::format("{}: graded fault {} was killed by {}, not by the term it touched", name,
                        fault.id, o.killer));
      campaign.outcomes.push_back(o);
    }

#ifdef DELTAPROOF_FALSIFY
    if (with_catalog) {
      for (const auto& info : kernels::fault_catalog()) {
        if ((info.cuda_only() && !on_gpu) || info.cpu_only()) continue;
        kernels::set_active_fault(info.id);
        Values candidate;
        try {
          candidate = contract_run(twin, f, options.precision);
        } catch (...) {
          kernels::set_active_fault("");
          throw;
        }
        kernels::set_active_fault("");
        PrecisionOutcome o;
        o.fixture = name;
        o.fault = std::string(info.id);
        o.kind = PrecisionFaultKind::catalog;
        o.required = !info.sanitizer_only();
        o = judged(candidate, o);
        if (o.required) catalog_kills[o.fault] += o.killed ? 1 : 0;
        campaign.outcomes.push_back(o);
      }
    }
#endif
  }
  for (const auto& [fault, kills] : catalog_kills)
    if (kills == 0)
      campaign.unmet.push_back(
          fmt::format("catalog fault {} survived on every fixture of the campaign", fault));
  campaign.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return campaign;
}

nlohmann::json PrecisionCampaign::to_json(const std::string& command) const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& o : outcomes)
    rows.push_back(
        {{"fixture", o.fixture},
         {"fault", o.fault},
         {"kind", kind_name(o.kind)},
         {"term", o.term},
         {"size", o.size},
         {"required", o.required},
         {"status", o.kind == PrecisionFaultKind::clean
                        ? (o.killed ? "FalseAlarm" : "Green")
                        : status_name(o.killed ? FaultStatus::killed : FaultStatus::survived)},
         {"killer", o.killer},
         {"killer_is_term", o.killer_is_term},
         {"margin", std::isfinite(o.margin) ? nlohmann::json(o.margin) : nullptr},
         {"min_detectable_scaling", o.mde}});
  return {{"schema", "deltaproof-precision-campaign/1"},
          {"tool", gates::kToolVersion},
          {"git_commit", gates::git_commit()},
          {"command", command},
          {"precision", kernels::precision_name(precision)},
          {"required_scaling", required_scaling},
          {"candidates", candidate_source},
          {"requirements_met", requirements_met()},
          {"unmet", unmet},
          {"seconds", seconds},
          {"outcomes", rows}};
}

}  // namespace deltaproof::falsify

// gates/compare.cpp — see compare.hpp.
#include "gates/compare.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/metric.hpp"
#include "core/names.hpp"
#include "core/parallel.hpp"
#include "gates/instrument_faults.hpp"

namespace deltaproof::gates {

namespace {

constexpr std::pair<TermStatus, std::string_view> kTermStatusNames[] = {
    {TermStatus::pass, "pass"},
    {TermStatus::fail, "fail"},
    {TermStatus::unresolvable, "unresolvable"},
    {TermStatus::not_compared, "not-compared"},
    {TermStatus::missing, "missing"}};

constexpr std::pair<Verdict, std::string_view> kVerdictNames[] = {
    {Verdict::pass, "pass"}, {Verdict::fail, "fail"}, {Verdict::skipped, "skipped"}};

}  // namespace

std::string_view status_name(TermStatus status) { return name_of(kTermStatusNames, status); }
TermStatus parse_term_status(std::string_view name) {
  return value_of(kTermStatusNames, name, "term status");
}
std::string_view verdict_name(Verdict verdict) { return name_of(kVerdictNames, verdict); }
Verdict parse_verdict(std::string_view name) { return value_of(kVerdictNames, name, "verdict"); }

namespace {
nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json();
}
}  // namespace

nlohmann::json TermComparison::to_json() const {
  auto figures = [](const std::vector<double>& xs) {
    nlohmann::json out = nlohmann::json::array();
    for (double x : xs) out.push_back(finite_or_null(x));
    return out;
  };
  auto bands = [](const std::vector<std::array<double, 2>>& xs) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [lo, hi] : xs) out.push_back({finite_or_null(lo), finite_or_null(hi)});
    return out;
  };
  nlohmann::json row = {{"term", term},
                        {"status", status_name(status)},
                        {"rel", finite_or_null(rel)},
                        {"rms_rel", finite_or_null(rms_rel)},
                        {"abs_max", finite_or_null(abs_max)},
                        {"ref_amax", ref_amax},
                        {"worst_index", worst_index},
                        {"index_names", index_names},
                        {"per_chunk_rel", figures(chunk_rel)},
                        {"non_finite", non_finite},
                        {"bar", bar},
                        {"margin", finite_or_null(margin)},
                        {"message", message}};
  if (diagnosis.made)
    row["diagnosis"] = {{"status", status_name(diagnosis.status)},
                        {"rel", finite_or_null(diagnosis.rel)},
                        {"bar", diagnosis.bar},
                        {"margin", finite_or_null(diagnosis.margin)},
                        {"worst_index", diagnosis.worst_index},
                        {"per_chunk_rel", figures(diagnosis.chunk_rel)},
                        {"non_finite", diagnosis.non_finite}};
  if (noise.measured) {
    row["noise"] = {
        {"baseline_rel", finite_or_null(noise.baseline_rel)},
        {"ensemble_worst_rel", finite_or_null(noise.worst_rel)},
        {"alpha", finite_or_null(noise.alpha)},
        {"alpha_band", {finite_or_null(noise.alpha_lo), finite_or_null(noise.alpha_hi)}},
        {"alpha_z", finite_or_null(noise.alpha_z)},
        {"correlation", finite_or_null(noise.correlation)},
        {"bias_where", noise.bias_where},
        {"bias_excess", finite_or_null(noise.bias_excess)},
        {"min_detectable_scaling", finite_or_null(noise.mde)},
        {"ensemble_rel", figures(noise.member_rel)},
        {"ensemble_alpha", figures(noise.member_alpha)},
        {"per_chunk_ensemble_worst_rel", figures(noise.chunk_worst_rel)},
        {"per_chunk_alpha", figures(noise.chunk_alpha)},
        {"per_chunk_alpha_band", bands(noise.chunk_band)},
        {"per_head_alpha", figures(noise.head_alpha)},
        {"per_head_alpha_band", bands(noise.head_band)}};
  }
  return row;
}

TermLayout::TermLayout(const kernels::KernelShape& s, const std::string& term)
    : T(s.T), H(kernels::tensor_heads(s, term)), K(s.K), V(s.V) {
  const int w = kernels::tensor_width(s, term);
  state = w < 0;
  width = w <= 0 ? 1 : static_cast<std::size_t>(w);
}

std::array<std::int64_t, 4> TermLayout::unravel(std::size_t flat) const {
  if (state) {
    const auto j = static_cast<std::int64_t>(flat % V);
    flat /= V;
    const auto i = static_cast<std::int64_t>(flat % K);
    flat /= K;
    return {static_cast<std::int64_t>(flat / H), static_cast<std::int64_t>(flat % H), i, j};
  }
  const auto i = static_cast<std::int64_t>(flat % width);
  flat /= width;
  const auto h = static_cast<std::int64_t>(flat % H);
  flat /= H;
  return {static_cast<std::int64_t>(flat / T), static_cast<std::int64_t>(flat % T), h, i};
}

TermGroups::TermGroups(const kernels::KernelShape& s, const std::string& term)
    : layout_(s, term), packed_(s.packed()) {
  heads_ = static_cast<std::size_t>(s.states()) * static_cast<std::size_t>(layout_.H);
  if (layout_.state) return;
  token_chunk_.resize(static_cast<std::size_t>(s.T));
  if (!packed_) {
    for (int t = 0; t < s.T; ++t) token_chunk_[static_cast<std::size_t>(t)] = t / s.chunk;
    chunks_ = static_cast<std::size_t>((s.T + s.chunk - 1) / s.chunk);
    return;
  }
  token_sequence_ = s.token_sequences();
  for (std::size_t n = 0; n + 1 < s.cu_seqlens.size(); ++n) {
    first_chunk_.push_back(chunks_);
    const auto begin = static_cast<std::size_t>(s.cu_seqlens[n]);
    const auto end = static_cast<std::size_t>(s.cu_seqlens[n + 1]);
    for (std::size_t t = begin; t < end; ++t)
      token_chunk_[t] = chunks_ + (t - begin) / static_cast<std::size_t>(s.chunk);
    const std::size_t count = (end - begin + static_cast<std::size_t>(s.chunk) - 1) / s.chunk;
    chunks_ += count;
    chunk_sequence_.insert(chunk_sequence_.end(), count, n);
  }
}

std::string TermGroups::chunk_name(std::size_t group) const {
  if (!packed_) return fmt::format("chunk {}", group);
  const std::size_t n = chunk_sequence_.at(group);
  return fmt::format("sequence {} chunk {}", n, group - first_chunk_[n]);
}

std::string TermGroups::head_name(std::size_t group) const {
  const auto H = static_cast<std::size_t>(layout_.H);
  if (!packed_) return fmt::format("head ({},{})", group / H, group % H);
  return fmt::format("sequence {} head {}", group / H, group % H);
}

std::vector<std::int64_t> unravel(const kernels::KernelShape& s, const std::string& term,
                                  std::size_t flat) {
  const auto index = TermLayout(s, term).unravel(flat);
  return {index.begin(), index.end()};
}

std::string figure_text(double x) {
  return std::isfinite(x) ? fmt::format("{:.2e}", x) : (std::isnan(x) ? "-" : "inf");
}

const char* index_names(const kernels::KernelShape& shape, const std::string& term) {
  if (kernels::tensor_width(shape, term) >= 0) return "b,t,h,i";
  return shape.packed() ? "n,h,i,j" : "b,h,i,j";  // a packed state's first index: the sequence
}

namespace {

TermComparison compare_one(const kernels::KernelShape& s, const std::string& term,
                           const std::vector<double>& a, const std::vector<double>& b, double bar,
                           double floor) {
  TermComparison c;
  c.term = term;
  c.bar = bar;
  const TermGroups groups(s, term);
  c.index_names = index_names(s, term);
  const std::size_t chunks = groups.chunks();
  std::vector<double> chunk_abs(chunks, 0.0);
  double sum_diff2 = 0.0, sum_ref2 = 0.0;
  RelError error;
  for (std::size_t i = 0; i < b.size(); ++i) {
    sum_ref2 += b[i] * b[i];
    const double diff = error.add(a[i], b[i]);
    if (std::isnan(diff)) continue;  // a is not finite: counted
    sum_diff2 += diff * diff;
    if (chunks > 0) {
      auto& slot = chunk_abs[groups.of(i).chunk];
      slot = std::max(slot, diff);
    }
  }
  c.abs_max = error.abs_max;
  c.ref_amax = error.ref_amax;
  c.non_finite = error.non_finite;
  c.worst_index = unravel(s, term, error.worst);
  if (c.non_finite > 0) {
    c.status = TermStatus::fail;
    c.rel = c.rms_rel = c.margin = std::numeric_limits<double>::infinity();
    c.message = fmt::format("{}: {} of {} elements are NaN or inf (unwritten outputs stay NaN)",
                            term, c.non_finite, a.size());
    for (std::size_t ch = 0; ch < chunk_abs.size(); ++ch) c.chunk_rel.push_back(NAN);
    return c;
  }
  if (c.ref_amax <= floor) {
    c.status = TermStatus::unresolvable;
    c.rel = c.rms_rel = c.margin = NAN;
    c.message = fmt::format(
        "{}: the reference's amax is {:.3g}, at or below the resolution floor "
        "{:.3g}: nothing to measure a relative error against",
        term, c.ref_amax, floor);
    for (std::size_t ch = 0; ch < chunk_abs.size(); ++ch) c.chunk_rel.push_back(NAN);
    return c;
  }
  c.rel = error.rel();
  // the metric background/001 rejects
  if (DELTAPROOF_INSTRUMENT_FAULT(per_entry_relative_metric)) {
    c.rel = 0.0;
    for (std::size_t i = 0; i < b.size(); ++i)
      if (b[i] != 0.0) c.rel = std::max(c.rel, std::abs(a[i] - b[i]) / std::abs(b[i]));
  }
  c.rms_rel = sum_ref2 > 0 ? std::sqrt(sum_diff2 / sum_ref2) : NAN;
  for (double x : chunk_abs) c.chunk_rel.push_back(x / c.ref_amax);
  c.margin = c.rel == 0.0 ? std::numeric_limits<double>::infinity() : bar / c.rel;
  c.status = c.rel <= bar ? TermStatus::pass : TermStatus::fail;
  if (c.status == TermStatus::fail) {
    std::string where;
    if (chunks > 0) {
      // name the chunks above the bar: one chunk points at BK1, growth across chunks at BK2
      std::string red;
      for (std::size_t ch = 0; ch < c.chunk_rel.size(); ++ch)
        if (c.chunk_rel[ch] > bar)
          red +=
              (red.empty() ? "" : ",") + (s.packed() ? groups.chunk_name(ch) : std::to_string(ch));
      where = fmt::format("; chunks above the bar: {} of {}", red, chunks);
    }
    c.message = fmt::format(
        "{}: rel {:.3e} above bar {:.3e} (abs {:.3e}, ref amax {:.3e}) worst at "
        "({}) = ({}){}",
        term, c.rel, bar, c.abs_max, c.ref_amax, c.index_names, fmt::join(c.worst_index, ","),
        where);
  }
  return c;
}

}  // namespace

void TermComparison::set_not_compared() {
  if (status != TermStatus::not_compared && status != TermStatus::missing && !diagnosis.made) {
    diagnosis.made = true;
    diagnosis.status = status;
    diagnosis.rel = rel;
    diagnosis.bar = bar;
    diagnosis.margin = margin;
    diagnosis.worst_index = worst_index;
    diagnosis.chunk_rel = chunk_rel;
    diagnosis.non_finite = non_finite;
  }
  // the verdict's figures: nothing compared
  status = TermStatus::not_compared;
  rel = margin = NAN;
  rms_rel = abs_max = ref_amax = 0.0;
  worst_index.clear();
  chunk_rel.clear();
  non_finite = 0;
  message = fmt::format("{}: not compared, the forward (o, ht) did not pass", term);
  if (diagnosis.made)
    message += fmt::format(" (diagnosis only: rel {} / bar {:.1e}, it would {})",
                           figure_text(diagnosis.rel), diagnosis.bar,
                           diagnosis.status == TermStatus::pass ? "pass" : "not pass");
}

std::vector<TermComparison> compare_terms(
    const kernels::KernelShape& shape, kernels::Phase phase,
    const std::map<std::string, std::vector<double>>& candidate,
    const std::map<std::string, std::vector<double>>& reference, const CompareOptions& options) {
  const std::vector<std::string> names = kernels::kernel_output_names(shape.op, phase);
  auto bar_of = [&](const std::string& term) {
    const auto own_bar = options.term_bars.find(term);
    return own_bar != options.term_bars.end() ? own_bar->second
           : term == "o" || term == "ht"      ? options.fwd_bar
                                              : options.bwd_bar;
  };
  auto comparable = [&](const std::string& term) {
    const auto found = candidate.find(term);
    return found != candidate.end() && found->second.size() == reference.at(term).size();
  };
  // the terms compared in parallel (33 M elements a term at the production shape)
  std::vector<TermComparison> compared(names.size());
  parallel_for(static_cast<int>(names.size()), 0, [&](int i) {
    const std::string& term = names[static_cast<std::size_t>(i)];
    if (comparable(term))
      compared[static_cast<std::size_t>(i)] =
          compare_one(shape, term, candidate.at(term), reference.at(term), bar_of(term),
                      options.resolution_floor);
  });
  std::vector<TermComparison> out;
  bool forward_passed = true;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& term = names[i];
    const bool forward = term == "o" || term == "ht";
    const double bar = bar_of(term);
    const auto found = candidate.find(term);
    if (!comparable(term)) {
      TermComparison c;
      c.term = term;
      c.bar = bar;
      c.status = TermStatus::missing;
      c.rel = c.margin = NAN;
      c.message = found == candidate.end()
                      ? fmt::format("{}: the candidate has no such tensor", term)
                      : fmt::format("{}: the candidate has {} elements, the reference {}", term,
                                    found->second.size(), reference.at(term).size());
      out.push_back(c);
      if (forward) forward_passed = false;
      continue;
    }
    out.push_back(std::move(compared[i]));
    if (!forward && !forward_passed) out.back().set_not_compared();
    if (forward && out.back().status != TermStatus::pass) forward_passed = false;
  }
  return out;
}

}  // namespace deltaproof::gates

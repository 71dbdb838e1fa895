// gates/compare.hpp — the comparison every gate shares (DESIGN.md section 5):
// forward first; per term rel = max|a-b|/max|b|, RMS-relative error, abs max
// diff, the reference's amax, the worst index, the error in each chunk; a zero
// or unresolvable reference is reported as such, never as agreement; NaN/inf
// in the candidate (poison left unwritten) fails with a count.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/backend.hpp"

namespace deltaproof::gates {

// A term's verdict. not_compared: a gradient whose forward did not pass.
enum class TermStatus { pass, fail, unresolvable, not_compared, missing };
// Each status's one name, as reports write it ("not-compared"), and back
// (throws InputError naming the text on an unknown name).
std::string_view status_name(TermStatus status);
TermStatus parse_term_status(std::string_view name);

// A gate's verdict, and its one name ("pass", "fail", "skipped") and back.
enum class Verdict { pass, fail, skipped };
std::string_view verdict_name(Verdict verdict);
Verdict parse_verdict(std::string_view name);

struct TermComparison {
  std::string term;
  TermStatus status = TermStatus::missing;
  double rel = 0.0;                       // max|a-b| / max|b|
  double rms_rel = 0.0;                   // sqrt(mean (a-b)^2) / sqrt(mean b^2)
  double abs_max = 0.0;                   // max|a-b|
  double ref_amax = 0.0;                  // max|b|
  std::vector<std::int64_t> worst_index;  // (b, t, h, i), or (b, h, i, j) for states
  std::string index_names;                // "b,t,h,i" or "b,h,i,j"
  std::vector<double> chunk_rel;          // per chunk: max|a-b| in the chunk / max|b| of the term
  long non_finite = 0;                    // NaN or inf elements in the candidate
  double bar = 0.0;
  double margin = 0.0;  // bar / rel (inf when rel is 0)
  std::string message;  // one sentence for a red or unresolvable term
  // Set where the bars come from a precision class's noise (gates/noise.hpp).
  struct Noise {
    bool measured = false;
    double baseline_rel = 0.0;  // the class's same-precision baseline against the reference
    double worst_rel = 0.0;     // the ensemble's worst
    double alpha = 0.0;         // the candidate's regression slope of error on reference
    double alpha_lo = 0.0, alpha_hi = 0.0;  // the band it must lie in
    double alpha_z = 0.0;      // (alpha - the members' mean) / their standard deviation
    double correlation = 0.0;  // of the error with the reference: 1 a scaled term, ~0 noise
    std::string bias_where;    // the most biased group: "term", "chunk 3", "head (0,1)"
    double bias_excess = 0.0;  // that group's |alpha - mid| / its allowed half-width (> 1: red)
    double mde = 0.0;          // the smallest uniform scaling of the term that is red
    std::vector<double> member_rel, member_alpha;   // each ensemble member's rel and slope
    std::vector<double> chunk_worst_rel;            // per chunk, the ensemble's worst error
    std::vector<double> chunk_alpha;                // per chunk, the candidate's slope
    std::vector<std::array<double, 2>> chunk_band;  // per chunk, where it must lie
    std::vector<double> head_alpha;                 // per (b, h), b-major, the candidate's slope
    std::vector<std::array<double, 2>> head_band;   // per (b, h), where it must lie
  } noise;
  // A not_compared gradient compared all the same, after a red forward, so
  // that a report names every term a fault touched (issue 11). Never part of
  // the verdict, which is the forward's.
  struct Diagnosis {
    bool made = false;
    TermStatus status = TermStatus::missing;  // what the term would be: pass, fail, unresolvable
    double rel = 0.0, bar = 0.0, margin = 0.0;
    std::vector<std::int64_t> worst_index;
    std::vector<double> chunk_rel;
    long non_finite = 0;
  } diagnosis;
  // Sets status not_compared (the forward did not pass), keeping what the
  // comparison found as the diagnosis; rel and margin become NaN.
  void set_not_compared();
  bool is_forward() const { return term == "o" || term == "ht"; }
  nlohmann::json to_json() const;
};

struct CompareOptions {
  double fwd_bar = 0.0;
  double bwd_bar = 0.0;
  // A reference whose amax is at or below this is unresolvable: there is
  // nothing to measure a relative error against.
  double resolution_floor = 1e-30;
  // A bar per term (noise-calibrated classes); a term not named here takes
  // fwd_bar or bwd_bar.
  std::map<std::string, double> term_bars;
};

// Compares every term of kernel_output_names(op, phase), forward first.
// `candidate` and `reference` hold doubles in FLA layout; a term absent from
// the candidate is `missing` (red). After a red forward each gradient is
// not_compared, its comparison kept as the diagnosis.
std::vector<TermComparison> compare_terms(
    const kernels::KernelShape& shape, kernels::Phase phase,
    const std::map<std::string, std::vector<double>>& candidate,
    const std::map<std::string, std::vector<double>>& reference, const CompareOptions& options);

// A figure as the tools print it: "1.23e-04", "-" for NaN (nothing
// measured), "inf".
std::string figure_text(double x);

// A named tensor's layout, looked up once per term (the op table, core/op.hpp):
// its flat indices unravel to (b, t, h, i), or (b, h, i, j) for a state.
struct TermLayout {
  bool state = false;
  std::size_t width = 1;  // per-token channels (1 for a scalar per token and head)
  int T = 1, H = 1, K = 1, V = 1;
  TermLayout(const kernels::KernelShape& shape, const std::string& term);
  // (b, t, h, i) or (b, h, i, j); no allocation: called once an element on
  // tensors of 33 M elements
  std::array<std::int64_t, 4> unravel(std::size_t flat) const;
};
// The groups a term's per-chunk and per-head statistics are taken over
// (docs/VARLEN.md). Chunks: dense, chunk c is tokens [c chunk, (c + 1) chunk)
// of every row and head; packed, each sequence's own chunks from its first
// token, numbered sequence after sequence. Heads: (b, h) dense, (n, h) packed
// (sequence n), h over the term's own heads (H for q, k, dq, dk; HV
// otherwise). A state has heads and no chunks.
class TermGroups {
 public:
  TermGroups(const kernels::KernelShape& shape, const std::string& term);
  std::size_t chunks() const { return chunks_; }
  std::size_t heads() const { return heads_; }
  struct Of {
    std::size_t chunk = 0, head = 0;  // chunk: meaningless for a state
  };
  Of of(std::size_t flat) const {
    const auto index = layout_.unravel(flat);
    if (layout_.state)
      return {0,
              static_cast<std::size_t>(index[0]) * layout_.H + static_cast<std::size_t>(index[1])};
    const auto t = static_cast<std::size_t>(index[1]);
    const auto row = static_cast<std::size_t>(packed_ ? token_sequence_[t] : index[0]);
    return {token_chunk_[t], row * layout_.H + static_cast<std::size_t>(index[2])};
  }
  std::string chunk_name(std::size_t group) const;  // "chunk 3", "sequence 2 chunk 1"
  std::string head_name(std::size_t group) const;   // "head (0,1)", "sequence 2 head 1"

 private:
  TermLayout layout_;
  bool packed_ = false;
  std::size_t chunks_ = 0, heads_ = 0;
  std::vector<std::size_t> token_chunk_;                   // per token t
  std::vector<std::int64_t> token_sequence_;               // packed: per token t
  std::vector<std::size_t> chunk_sequence_, first_chunk_;  // packed: per chunk, per sequence
};

// The (b, t, h, i) or (b, h, i, j) of a flat index of a named tensor.
std::vector<std::int64_t> unravel(const kernels::KernelShape& shape, const std::string& term,
                                  std::size_t flat);
// How unravel's index of a named tensor reads: "b,h,i,j" for a state ("n,h,i,j"
// packed: sequence n), "b,t,h,i" otherwise.
const char* index_names(const kernels::KernelShape& shape, const std::string& term);

}  // namespace deltaproof::gates

// oracle/sampled.hpp — a reference computed elsewhere (in f64 on a GPU, at a
// shape whose whole quad oracle would take hours on a CPU) checked against the
// quad oracle on sampled (batch, head) sequences. The sequences of a problem
// are independent, so each is cut out as a problem of its own (B = H = 1), run
// in quad, and compared term by term with the reference's slice of it.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "oracle/problem.hpp"

namespace deltaproof::oracle {

// The sequence (b, h) of a problem as a problem of its own: B = H = 1, every
// input and cotangent sliced.
Problem head_problem(const Problem& p, int b, int h);

// The quad oracle of one sequence (B = H = 1) split over `groups` slices of
// its V columns, run on `threads` threads. The recurrence keeps each column of
// the state apart (S_t's column j reads only column j of v, w, h0 and do), so
// a slice is a problem of its own: o, ht, dv, dw and dh0 are its columns of
// the whole, and the gradients of the tensors every column reads (dq dk dg db
// dbeta) are the sum of the slices' in f64, in slice order: within a few ulps
// of each slice's largest, so within ~1e-15 of quad. What makes a T 32768,
// K=V=128 sequence take minutes, not hours.
TensorMap evaluate_quad_by_columns(const Problem& one, bool with_gradients, int groups,
                                   int threads);

// The slice (b, h) of a problem's outputs and gradients (o, ht, "d" + each
// input; FLA layout) in head_problem's layout. Tensors of other names are left
// out.
TensorMap head_slice(const FixtureSpec& spec, const TensorMap& tensors, int b, int h);

// One term of one sampled sequence: max|reference - quad| / max|quad| (0 where
// the quad term is all zeros and the reference too; infinite where only the
// reference is not).
struct SampledTerm {
  std::string term;
  double rel = 0.0;
};
struct SampledHead {
  int b = 0, h = 0;
  std::vector<SampledTerm> terms;
  const SampledTerm& worst() const;
};

// The reference's o, ht and (with_gradients) every gradient, FLA layout, at
// the sequences `heads`, each against the quad oracle of head_problem (split
// over columns: evaluate_quad_by_columns, one slice per thread). Throws
// InputError naming a missing or mis-sized tensor, or a sequence out of range.
std::vector<SampledHead> check_heads_against_quad(const Problem& p, const TensorMap& reference,
                                                  const std::vector<std::pair<int, int>>& heads,
                                                  bool with_gradients, int threads);

}  // namespace deltaproof::oracle

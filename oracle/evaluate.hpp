// oracle/evaluate.hpp — the oracle over a whole problem: every (batch, head)
// sequence through forward and reverse sweep in scalar type S (double or quad),
// results rounded to double in FLA layout. Deterministic for any thread count.
#pragma once

#include "oracle/problem.hpp"

namespace deltaproof::oracle {

struct OracleOutput {
  TensorMap tensors;  // o, ht and every gradient: dq dk dv dg db dw | dbeta, dh0
  double loss = 0.0;  // L = <o, do> + <ht, dht>, summed in S, rounded once
};

// S is double or quad (boost::multiprecision::float128).
template <class S>
OracleOutput evaluate(const Problem& problem, bool with_gradients, int threads,
                      const GeneratorFaults& faults = {});
extern template OracleOutput evaluate<double>(const Problem&, bool, int, const GeneratorFaults&);

OracleOutput evaluate_quad(const Problem& problem, bool with_gradients, int threads,
                           const GeneratorFaults& faults = {});

// L in double, forward only: the function finite differences differentiate.
double loss_f64(const Problem& problem, int threads, const GeneratorFaults& faults = {});

// loss_f64 of the problem with input `tensor` moved by step x direction
// (selfcheck.hpp: moved), at each of `steps`, bit for bit, in one pass over
// the sequences: each sequence is cut from its own displaced slice, so no
// step copies the whole problem (the finite-difference and Taylor checks ask
// for some 170 such losses).
std::vector<double> loss_f64_along(const Problem& problem, const std::string& tensor,
                                   const std::vector<double>& direction,
                                   const std::vector<double>& steps, int threads,
                                   const GeneratorFaults& faults = {});

// The names of the output and gradient tensors of a spec, in report order:
// o ht dq dk dv dg db dw (dbeta) dh0.
std::vector<std::string> output_names(const FixtureSpec& spec);
std::vector<std::string> gradient_names(const FixtureSpec& spec);

}  // namespace deltaproof::oracle

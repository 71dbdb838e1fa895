// oracle/gpu_reference.hpp — the f64 GPU reference (oracle/reference64)
// as an evaluator of oracle/external.hpp: `gen --reference gpu-f64` and the
// production set (`gen --production`). Built only where nvcc is (library
// deltaproof_gpu_reference); it runs where a GPU is.
#pragma once

#include "oracle/external.hpp"

namespace deltaproof::oracle {

// o, ht and every gradient of a problem from the GPU, folded back to the op's
// own form (kda's and gdn's dbeta, gdn's scalar dg), FLA layout.
TensorMap evaluate_on_gpu(const Problem& problem, bool with_gradients);

// The evaluator: evaluate_on_gpu, and a loss_along that keeps the problem's
// inputs in gdn2 form between calls and moves only the tensor asked for.
ExternalEvaluator gpu_f64_evaluator();

}  // namespace deltaproof::oracle

// kernels/cuda/backends.hpp — cuda-chunk, cuda-recurrent and cuda-tc behind the backend
// interface (kernels/backend.hpp). Built only when nvcc is found; then
// DELTAPROOF_HAVE_CUDA_BACKENDS is defined and the registry lists them.
#pragma once

#include "kernels/backend.hpp"

namespace deltaproof::kernels::cuda {

const Backend& chunk_backend();
const Backend& recurrent_backend();
const Backend& tc_backend();

}  // namespace deltaproof::kernels::cuda

// kernels/cuda/chunk.cu — placeholder until the kernels land.
#include <stdexcept>

#include "kernels/cuda/common.cuh"

namespace deltaproof::kernels::cuda {

void run_chunk(const DeviceProblem& p, bool, LaunchLog&) {
  throw std::runtime_error("cuda-chunk is not implemented yet (" + describe(p) + ")");
}

}  // namespace deltaproof::kernels::cuda

// kernels/cuda/recurrent.cu — placeholder until the kernels land.
#include <stdexcept>

#include "kernels/cuda/common.cuh"

namespace deltaproof::kernels::cuda {

void run_recurrent(const DeviceProblem& p, bool, LaunchLog&) {
  throw std::runtime_error("cuda-recurrent is not implemented yet (" + describe(p) + ")");
}

}  // namespace deltaproof::kernels::cuda

// kernels/cuda/common.cuh — what every CUDA file of the kernels shares: the
// checked call and launch macros (an error names the kernel and the shape),
// the fault switch, core's FLA-layout offsets and a device scratch buffer.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "core/op.hpp"
#include "kernels/cuda/device_problem.hpp"

namespace deltaproof::kernels::cuda {

// DP_FAULT(p.faults, name): the fault is on (its bit, kernels::fault_bit, is
// set in the mask). False at compile time in a normal build, so the faulty
// branch compiles to nothing.
#ifdef DELTAPROOF_FALSIFY
#define DP_FAULT(faults, id) \
  ((((faults).mask >> (static_cast<int>(::deltaproof::kernels::Fault::id) - 1)) & 1ull) != 0)
#else
#define DP_FAULT(faults, id) false
#endif

[[noreturn]] inline void cuda_fail(cudaError_t error, const char* what, const DeviceProblem& p) {
  throw std::runtime_error(std::string("CUDA error in ") + what + " (" + describe(p) +
                           "): " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

// CUDA_CHECK(call, what, problem): throws naming `what` (the kernel or call).
#define CUDA_CHECK(call, what, problem)                                 \
  do {                                                                  \
    const cudaError_t dp_error_ = (call);                               \
    if (dp_error_ != cudaSuccess)                                       \
      ::deltaproof::kernels::cuda::cuda_fail(dp_error_, what, problem); \
  } while (0)

// After a launch: the launch error now, and (synchronously) the kernel's.
#define CUDA_CHECK_LAUNCH(what, problem)                \
  do {                                                  \
    CUDA_CHECK(cudaGetLastError(), what, problem);      \
    CUDA_CHECK(cudaDeviceSynchronize(), what, problem); \
  } while (0)

// Token tensor [B,T,H,width] and state [B,H,K,V] offsets: core/op.hpp's.
using deltaproof::state_offset;
using deltaproof::token_offset;

// A device allocation freed on scope exit (errors name the kernel it is for).
class DeviceBuffer {
 public:
  DeviceBuffer(std::size_t floats, const char* what, const DeviceProblem& p) : size_(floats) {
    if (floats) CUDA_CHECK(cudaMalloc(&data_, floats * sizeof(float)), what, p);
  }
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  float* get() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace deltaproof::kernels::cuda

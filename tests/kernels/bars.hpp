// tests/kernels/bars.hpp — the CPU kernels' bars (rel = max|a-b|/max|b|
// against the quad reference), each with the clean kernels' measured worst
// error beside it (every committed fixture, every term; `ctest -R Kernel`
// prints the measurements). A bar sits at least 3x above the clean error.
#pragma once

namespace deltaproof::testing {

struct CpuBars {
  // cpu-recurrent, f32 token by token: worst clean 1.1e-7 fwd, 4.4e-7 bwd
  static constexpr double recurrent_fwd = 5e-6;
  static constexpr double recurrent_bwd = 5e-6;
  // cpu-chunk, f32 WY chunks: worst clean 1.0e-6 fwd (kda t200-c64 o),
  // 8.1e-6 bwd (kda t64-c64 dg)
  static constexpr double chunk_fwd = 3e-5;
  static constexpr double chunk_bwd = 5e-5;
};

inline double fwd_bar(const std::string& backend) {
  return backend == "cpu-chunk" ? CpuBars::chunk_fwd : CpuBars::recurrent_fwd;
}
inline double bwd_bar(const std::string& backend) {
  return backend == "cpu-chunk" ? CpuBars::chunk_bwd : CpuBars::recurrent_bwd;
}

}  // namespace deltaproof::testing

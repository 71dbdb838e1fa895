// bench/kernels_bench.cpp — the CPU backends at B1 H2 T1024 K=V=64 (gdn2, kda;
// chunk 64), forward and forward+backward. docs/PERFORMANCE.md reports each as
// a ratio to cpu-recurrent's forward in the same run.
// Run: build/bin/kernels_bench --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cmath>

#include "gates/fixture_io.hpp"
#include "kernels/backend.hpp"
#include "oracle/problem.hpp"

namespace {

using namespace deltaproof;

struct Case {
  kernels::KernelShape shape;
  kernels::Buffers inputs;
};

Case make_case(Op op) {
  oracle::FixtureSpec s;
  s.op = op;
  s.T = 1024;
  s.K = 64;
  s.V = 64;
  s.chunk = 64;
  const oracle::Problem p = oracle::draw_problem(s);
  Case c{gates::kernel_shape(s), gates::kernel_inputs(p)};
  return c;
}

void run_backend(benchmark::State& state, const char* backend, Op op, kernels::Phase phase) {
  const Case c = make_case(op);
  const kernels::Backend& b = kernels::find_backend(backend);
  kernels::Buffers out = kernels::allocate_outputs(c.shape, phase, NAN);
  for (auto _ : state) {
    kernels::ExecutionRecord record;
    b.run(c.shape, c.inputs, phase, out, record);
    benchmark::DoNotOptimize(out);
  }
}

}  // namespace

BENCHMARK_CAPTURE(run_backend, recurrent_gdn2_fwd, "cpu-recurrent", Op::gdn2, kernels::Phase::fwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, recurrent_gdn2_fwdbwd, "cpu-recurrent", Op::gdn2,
                  kernels::Phase::bwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, chunk_gdn2_fwd, "cpu-chunk", Op::gdn2, kernels::Phase::fwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, chunk_gdn2_fwdbwd, "cpu-chunk", Op::gdn2, kernels::Phase::bwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, recurrent_kda_fwd, "cpu-recurrent", Op::kda, kernels::Phase::fwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, recurrent_kda_fwdbwd, "cpu-recurrent", Op::kda, kernels::Phase::bwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, chunk_kda_fwd, "cpu-chunk", Op::kda, kernels::Phase::fwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(run_backend, chunk_kda_fwdbwd, "cpu-chunk", Op::kda, kernels::Phase::bwd)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_MAIN();

// bench/oracle_bench.cpp — how long the oracle takes to generate a certified
// fixture (docs/PERFORMANCE.md). Run: build/bin/oracle_bench
//   BM_SeedFixture: gdn2 B1 H2 T32 K=V=8, every self-check (every coordinate),
//                   f64 and quad, determinism — the goal is under 1 s.
//   BM_LargeFixture: gdn2 B1 H2 T1024 K=V=128 chunk 64, certified by random
//                   directions — the goal is under 5 minutes on 2 cores.
//   BM_QuadOracle / BM_F64Oracle: the forward + reverse sweep alone, the
//                   baseline the ratios in PERFORMANCE.md are taken against.
#include <benchmark/benchmark.h>

#include "oracle/fixture.hpp"

namespace {

using namespace deltaproof::oracle;

FixtureSpec seed_spec() {
  FixtureSpec s;
  s.op = Op::gdn2;
  s.T = 32;
  return s;
}

FixtureSpec large_spec() {
  FixtureSpec s;
  s.op = Op::gdn2;
  s.T = 1024;
  s.K = 128;
  s.V = 128;
  s.chunk = 64;
  return s;
}

void run_fixture(benchmark::State& state, const FixtureSpec& spec) {
  GenerateOptions options;
  for (auto _ : state) {
    GeneratedFixture fixture = generate_fixture(spec, options);
    if (!fixture.report.passed()) state.SkipWithError("a self-check failed");
    benchmark::DoNotOptimize(fixture);
  }
}

void BM_SeedFixture(benchmark::State& state) { run_fixture(state, seed_spec()); }
void BM_LargeFixture(benchmark::State& state) { run_fixture(state, large_spec()); }

void BM_F64Oracle(benchmark::State& state) {
  const Problem p = draw_problem(seed_spec());
  for (auto _ : state) benchmark::DoNotOptimize(evaluate<double>(p, true, 0));
}

void BM_QuadOracle(benchmark::State& state) {
  const Problem p = draw_problem(seed_spec());
  for (auto _ : state) benchmark::DoNotOptimize(evaluate_quad(p, true, 0));
}

}  // namespace

BENCHMARK(BM_F64Oracle)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_QuadOracle)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SeedFixture)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LargeFixture)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK_MAIN();

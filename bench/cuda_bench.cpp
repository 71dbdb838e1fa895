// bench/cuda_bench.cpp — the CUDA kernels' speed at B4 T4096 H16 K=V=128
// (chunk 64): cuda-chunk and cuda-recurrent, gdn2 and kda, fwd and fwd+bwd,
// f32 and bf16 inputs. CUDA events around each call, 2 warm-up calls, the median of 10,
// alternating between two input sets (each input tensor alone is larger than
// the H200's 60 MB L2). Prints a table and writes the figures as JSON.
//
// Achieved bandwidth counts the fewest bytes a call must move (each input
// read once, each output written once, in the gdn2 form the kernels take);
// the FLOP rate counts the chunked algorithm's nominal matrix work (below),
// for both backends, so the two rates compare like with like.
//
// Usage: cuda_bench [--repeats N] [--backend cuda-chunk|cuda-recurrent|cuda-tc] [--json FILE]
// (cuda-tc: forward and forward+backward, its scratch allocated in each call as cuda-chunk's is;
// scripts/tc_vs_fla.py times it without that, beside FLA)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/files.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "kernels/cuda/device_problem.hpp"
#include "kernels/cuda/tc.hpp"

namespace {

using deltaproof::kernels::cuda::DeviceProblem;
using deltaproof::kernels::cuda::InputType;
using deltaproof::kernels::cuda::LaunchLog;

void check(cudaError_t error, const char* what) {
  if (error != cudaSuccess)
    throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(error)));
}

struct DeviceArray {
  float* data = nullptr;
  std::size_t size = 0;
  explicit DeviceArray(const std::vector<float>& host) : size(host.size()) {
    check(cudaMalloc(&data, size * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(data, host.data(), size * sizeof(float), cudaMemcpyHostToDevice), "upload");
  }
  explicit DeviceArray(std::size_t n) : size(n) {
    check(cudaMalloc(&data, size * sizeof(float)), "cudaMalloc");
  }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
};

constexpr int B = 4, T = 4096, H = 16, K = 128, V = 128, C = 64;

// One input set in gdn2 form: kda's beta is broadcast into b and w.
struct InputSet {
  std::vector<std::unique_ptr<DeviceArray>> arrays;
  DeviceProblem p;
  const float* add(std::vector<float> host) {
    arrays.push_back(std::make_unique<DeviceArray>(host));
    return arrays.back()->data;
  }
  // An input tensor in the input type: bf16 keeps the top 16 bits (the values
  // are rounded to bf16 first, so nothing is lost).
  const void* add_input(std::vector<float> host) {
    if (p.input == InputType::f32) return add(std::move(host));
    for (float& x : host) x = static_cast<float>(deltaproof::round_to_bf16(x));
    std::vector<float> packed;
    deltaproof::kernels::cuda::pack_bf16(host, packed);  // exact: every value is bf16 now
    return add(std::move(packed));
  }
  InputSet(bool kda, bool bf16, std::uint64_t seed) {
    p.input = bf16 ? InputType::bf16 : InputType::f32;
    deltaproof::Rng rng(seed);
    const std::size_t tk = std::size_t{B} * T * H * K, tv = std::size_t{B} * T * H * V,
                      state = std::size_t{B} * H * K * V;
    auto normal = [&](std::size_t n, double sigma) {
      std::vector<float> x(n);
      for (auto& v : x) v = static_cast<float>(sigma * rng.normal());
      return x;
    };
    auto uniform = [&](std::size_t n, double lo, double hi) {
      std::vector<float> x(n);
      for (auto& v : x) v = static_cast<float>(rng.uniform(lo, hi));
      return x;
    };
    p.B = B, p.T = T, p.H = H, p.K = K, p.V = V, p.chunk = C;
    p.scale = 1.0f / std::sqrt(static_cast<float>(K));
    p.q = add_input(normal(tk, 1.0 / std::sqrt(K)));
    p.k = add_input(normal(tk, 1.0 / std::sqrt(K)));
    p.v = add_input(normal(tv, 1.0));
    p.g = add_input(uniform(tk, -0.1, -0.001));
    if (kda) {
      const auto beta = uniform(std::size_t{B} * T * H, 0.05, 0.95);
      std::vector<float> b(tk), w(tv);
      for (std::size_t r = 0; r < beta.size(); ++r) {
        std::fill_n(b.begin() + r * K, K, beta[r]);
        std::fill_n(w.begin() + r * V, V, beta[r]);
      }
      p.b = add_input(b);
      p.w = add_input(w);
    } else {
      p.b = add_input(uniform(tk, 0.05, 0.95));
      p.w = add_input(uniform(tv, 0.05, 0.95));
    }
    p.h0 = add(normal(state, 0.1));
    p.d_o = add(normal(tv, 1.0));
    p.dht = add(normal(state, 0.1));
  }
};

// Outputs, shared by both input sets.
struct Outputs {
  DeviceArray o{std::size_t{B} * T * H * V}, ht{std::size_t{B} * H * K * V};
  DeviceArray dq{std::size_t{B} * T * H * K}, dk{std::size_t{B} * T * H * K},
      dg{std::size_t{B} * T * H * K}, db{std::size_t{B} * T * H * K};
  DeviceArray dv{std::size_t{B} * T * H * V}, dw{std::size_t{B} * T * H * V};
  DeviceArray dh0{std::size_t{B} * H * K * V};
  void attach(DeviceProblem& p) {
    p.o = o.data, p.ht = ht.data, p.dq = dq.data, p.dk = dk.data, p.dg = dg.data;
    p.db = db.data, p.dv = dv.data, p.dw = dw.data, p.dh0 = dh0.data;
  }
};

// Nominal FLOPs of the chunked algorithm per (b, h) and chunk (2 per
// multiply-add): the forward's A and M (C^2 K each), the solve (C^3 / 3), Ut
// and Wt (C^2 V + C^2 K), U (C K V), O (C K V + C^2 V), S_end (C K V); the
// backward counted as twice the forward.
double nominal_flops(bool backward) {
  const double c = C, k = K, v = V;
  const double fwd =
      2 * (c * c * k * 2 + c * c * c / 3 + c * c * (v + k) + c * k * v * 3 + c * c * v);
  const double per_chunk = backward ? 3 * fwd : fwd;
  return per_chunk * B * H * (T / C);
}

double minimum_bytes(bool backward, bool bf16) {
  const double tk = 1.0 * B * T * H * K, tv = 1.0 * B * T * H * V, state = 1.0 * B * H * K * V;
  const double input_bytes = bf16 ? 2 : 4;
  double bytes = input_bytes * (4 * tk + 2 * tv) + 4 * (state + tv + state);  // -> o, ht
  if (backward) bytes += 4 * (tv + state + 4 * tk + 2 * tv + state);          // do dht -> gradients
  return bytes;
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 10;
  std::string json_path, only_backend;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--repeats" && i + 1 < argc)
      repeats = std::atoi(argv[++i]);
    else if (arg == "--backend" && i + 1 < argc)
      only_backend = argv[++i];
    else if (arg == "--json" && i + 1 < argc)
      json_path = argv[++i];
    else {
      std::fprintf(stderr, "usage: cuda_bench [--repeats N] [--backend NAME] [--json FILE]\n");
      return 2;
    }
  }
  try {
    cudaDeviceProp props{};
    check(cudaGetDeviceProperties(&props, 0), "cudaGetDeviceProperties");
    std::printf("device: %s, %d SMs, L2 %d MB\n", props.name, props.multiProcessorCount,
                props.l2CacheSize >> 20);
    nlohmann::json rows = nlohmann::json::array();
    std::printf("%-15s %-5s %-6s %-8s %10s %10s %10s\n", "backend", "op", "inputs", "phase",
                "median ms", "GB/s", "GFLOP/s");
    for (const char* op : {"gdn2", "kda"}) {
      const bool kda = std::string(op) == "kda";
      for (const bool bf16 : {false, true}) {
        const char* inputs = bf16 ? "bf16" : "f32";
        InputSet sets[2] = {InputSet(kda, bf16, 1), InputSet(kda, bf16, 2)};
        Outputs out;
        for (auto& s : sets) out.attach(s.p);
        for (const char* backend : {"cuda-chunk", "cuda-recurrent", "cuda-tc"}) {
          if (!only_backend.empty() && only_backend != backend) continue;
          const bool chunked = std::string(backend) == "cuda-chunk";
          const bool tensor_cores = std::string(backend) == "cuda-tc";
          for (bool backward : {false, true}) {
            cudaEvent_t start, stop;
            check(cudaEventCreate(&start), "cudaEventCreate");
            check(cudaEventCreate(&stop), "cudaEventCreate");
            std::vector<float> times;
            for (int i = 0; i < repeats + 2; ++i) {
              LaunchLog log;
              const DeviceProblem& p = sets[i % 2].p;
              check(cudaEventRecord(start), "cudaEventRecord");
              if (tensor_cores)
                deltaproof::kernels::cuda::run_tc(p, backward, log);
              else if (chunked)
                deltaproof::kernels::cuda::run_chunk(p, backward, log);
              else
                deltaproof::kernels::cuda::run_recurrent(p, backward, log);
              check(cudaEventRecord(stop), "cudaEventRecord");
              check(cudaEventSynchronize(stop), "cudaEventSynchronize");
              float ms = 0;
              check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
              if (i >= 2) times.push_back(ms);  // two warm-up calls
            }
            cudaEventDestroy(start);
            cudaEventDestroy(stop);
            std::sort(times.begin(), times.end());
            const double median = times[times.size() / 2];
            const double gbs = minimum_bytes(backward, bf16) / (median * 1e-3) / 1e9;
            const double gflops = nominal_flops(backward) / (median * 1e-3) / 1e9;
            const char* phase = backward ? "fwd+bwd" : "fwd";
            std::printf("%-15s %-5s %-6s %-8s %10.3f %10.1f %10.1f\n", backend, op, inputs, phase,
                        median, gbs, gflops);
            std::fflush(stdout);
            rows.push_back({{"backend", backend},
                            {"op", op},
                            {"inputs", inputs},
                            {"phase", phase},
                            {"median_ms", median},
                            {"min_ms", times.front()},
                            {"max_ms", times.back()},
                            {"repeats", repeats},
                            {"achieved_GBps", gbs},
                            {"nominal_GFLOPs", gflops},
                            {"shape", "B4 T4096 H16 K128 V128 chunk64"}});
          }
        }
      }
    }
    if (!json_path.empty())
      deltaproof::write_text_atomically(
          json_path, nlohmann::json({{"device", props.name}, {"rows", rows}}).dump(2) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

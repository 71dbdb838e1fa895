// oracle/reference64.cu — see reference64.hpp. The twin of
// core/recurrence.hpp (forward() and reverse()) in double, one block per
// sequence (b, h), the whole K x V state in shared memory (row stride V + 1).
// Forward, per token t:
//   a = exp(g_t);  P = Diag(a) S_{t-1};  u = w_t * v_t - P^T (b_t * k_t)
//   S_t = P + k_t u^T;  o_t = scale S_t^T q_t
// Reverse sweep from t = T down to 1, dS = dht first:
//   dS += scale q_t do_t^T          dq_t = scale S_t do_t
//   du = dS^T k_t                   dk_t = dS u + dbk * b_t
//   dbk = -P du                     db_t = dbk * k_t
//   dw_t = du * v_t                 dv_t = du * w_t
//   dP = dS - (b_t * k_t) du^T      dg_t = a * rowsum(dP .* S_{t-1})
//   dS = Diag(a) dP;  dh0 = dS at the end.
// The forward stores the state every kSegment tokens; the reverse sweep
// recomputes a segment's states from its checkpoint into a global buffer and
// walks it back. Each sum is one thread's loop in index order: no atomics,
// the same bits run to run. Speed is not the point: a sequence of T 4096 at
// K=V=128 takes a block a fraction of a second.
#include "oracle/reference64.hpp"

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/op.hpp"

namespace deltaproof::oracle {
namespace {

using Config = Reference64Config;

struct Problem64 {
  int B, T, H, K, V;
  double scale;
  const double *q, *k, *g, *b, *v, *w, *h0, *d_o, *dht;
  double *o, *ht, *dq, *dk, *dg, *db, *dv, *dw, *dh0;
};

// The shared memory of a block: the state (or dS) at row stride V + 1, and the
// token's vectors.
struct Shared {
  double *S, *a, *k, *bk, *q, *u, *wv, *col;
  static std::size_t doubles(int K, int V) {
    return static_cast<std::size_t>(K) * (V + 1) + 4 * K + 3 * V;
  }
};
__device__ Shared carve(double* base, int K, int V) {
  Shared s;
  s.S = base;
  s.a = s.S + K * (V + 1);
  s.k = s.a + K;
  s.bk = s.k + K;
  s.q = s.bk + K;
  s.u = s.q + K;
  s.wv = s.u + V;
  s.col = s.wv + V;
  return s;
}

// Token t's K-vectors and w * v into shared memory.
__device__ void load_token(const Problem64& p, const Shared& s, int b, int h, int t) {
  for (int i = threadIdx.x; i < p.K; i += blockDim.x) {
    const std::size_t at = token_offset(p.T, p.H, p.K, b, t, h, i);
    s.a[i] = exp(p.g[at]);
    s.k[i] = p.k[at];
    s.bk[i] = p.b[at] * p.k[at];
    s.q[i] = p.q[at];
  }
  for (int j = threadIdx.x; j < p.V; j += blockDim.x) {
    const std::size_t at = token_offset(p.T, p.H, p.V, b, t, h, j);
    s.wv[j] = p.w[at] * p.v[at];
  }
}

// One forward step on the state in shared memory (the token's vectors loaded):
// S <- Diag(a) S + k u^T, u = w v - (Diag(a) S)^T bk.
__device__ void step(const Problem64& p, const Shared& s) {
  const int K = p.K, V = p.V, ld = V + 1;
  for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
    s.S[idx / V * ld + idx % V] *= s.a[idx / V];
  __syncthreads();
  for (int j = threadIdx.x; j < V; j += blockDim.x) {
    double e = 0.0;
    for (int i = 0; i < K; ++i) e += s.S[i * ld + j] * s.bk[i];
    s.u[j] = s.wv[j] - e;
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
    s.S[idx / V * ld + idx % V] += s.k[idx / V] * s.u[idx % V];
  __syncthreads();
}

// A K x V state between shared memory (stride V + 1) and a dense global one.
__device__ void store_state(const Problem64& p, const double* S, double* to) {
  for (int idx = threadIdx.x; idx < p.K * p.V; idx += blockDim.x)
    to[idx] = S[idx / p.V * (p.V + 1) + idx % p.V];
}
__device__ void load_state(const Problem64& p, const double* from, double* S) {
  for (int idx = threadIdx.x; idx < p.K * p.V; idx += blockDim.x)
    S[idx / p.V * (p.V + 1) + idx % p.V] = from[idx];
}

__global__ void __launch_bounds__(Config::kThreads)
    reference64_forward(Problem64 p, double* checkpoints, int segments) {
  extern __shared__ double shared[];
  const Shared s = carve(shared, p.K, p.V);
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H, K = p.K, V = p.V, ld = V + 1;
  for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
    s.S[idx / V * ld + idx % V] = p.h0[state_offset(p.H, K, V, b, h, idx / V, idx % V)];
  __syncthreads();
  for (int t = 0; t < p.T; ++t) {
    if (checkpoints && t % Config::kSegment == 0)
      store_state(
          p, s.S,
          checkpoints + (static_cast<std::size_t>(bh) * segments + t / Config::kSegment) * K * V);
    load_token(p, s, b, h, t);
    __syncthreads();
    step(p, s);
    for (int j = threadIdx.x; j < V; j += blockDim.x) {
      double o = 0.0;
      for (int i = 0; i < K; ++i) o += s.S[i * ld + j] * s.q[i];
      p.o[token_offset(p.T, p.H, V, b, t, h, j)] = p.scale * o;
    }
    __syncthreads();
  }
  for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
    p.ht[state_offset(p.H, K, V, b, h, idx / V, idx % V)] = s.S[idx / V * ld + idx % V];
}

// states: per block, kSegment + 2 dense K x V matrices: a segment's states
// S_{t0} .. S_{t1}, and dS while the segment is recomputed. The one K x V
// region of shared memory holds the state while a segment is recomputed and
// dS while it is walked back.
__global__ void __launch_bounds__(Config::kThreads)
    reference64_reverse(Problem64 p, const double* checkpoints, int segments, double* states) {
  extern __shared__ double shared[];
  const int K = p.K, V = p.V, ld = V + 1;
  const Shared s = carve(shared, K, V);
  double* dS = s.S;  // while a segment is walked back
  double* du = s.col + V;
  double* d_o = du + V;
  const int bh = blockIdx.x, b = bh / p.H, h = bh % p.H;
  const std::size_t KV = static_cast<std::size_t>(K) * V;
  double* mine = states + static_cast<std::size_t>(bh) * (Config::kSegment + 2) * KV;
  double* stash = mine + (Config::kSegment + 1) * KV;  // dS while a segment is recomputed

  for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
    dS[idx / V * ld + idx % V] = p.dht[state_offset(p.H, K, V, b, h, idx / V, idx % V)];
  for (int seg = segments - 1; seg >= 0; --seg) {
    const int t0 = seg * Config::kSegment, t1 = min(p.T, t0 + Config::kSegment);
    // the segment's states S_{t0} .. S_{t1}, from its checkpoint, dS set aside
    __syncthreads();
    store_state(p, dS, stash);
    __syncthreads();
    load_state(p, checkpoints + (static_cast<std::size_t>(bh) * segments + seg) * KV, s.S);
    __syncthreads();
    store_state(p, s.S, mine);
    for (int t = t0; t < t1; ++t) {
      __syncthreads();
      load_token(p, s, b, h, t);
      __syncthreads();
      step(p, s);
      store_state(p, s.S, mine + (t - t0 + 1) * KV);
    }
    // walk it back
    __syncthreads();
    load_state(p, stash, dS);
    for (int t = t1 - 1; t >= t0; --t) {
      const double* previous = mine + (t - t0) * KV;
      const double* current = mine + (t - t0 + 1) * KV;
      __syncthreads();
      load_token(p, s, b, h, t);
      for (int j = threadIdx.x; j < V; j += blockDim.x)
        d_o[j] = p.d_o[token_offset(p.T, p.H, V, b, t, h, j)];
      __syncthreads();
      // u = w v - P^T bk (P recomputed from S_{t-1}); dS += scale q do^T
      for (int j = threadIdx.x; j < V; j += blockDim.x) {
        double e = 0.0;
        for (int i = 0; i < K; ++i) e += s.a[i] * previous[i * V + j] * s.bk[i];
        s.u[j] = s.wv[j] - e;
      }
      for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
        dS[idx / V * ld + idx % V] += p.scale * s.q[idx / V] * d_o[idx % V];
      __syncthreads();
      // dq = scale S_t do; du = dS^T k
      for (int i = threadIdx.x; i < K; i += blockDim.x) {
        double sum = 0.0;
        for (int j = 0; j < V; ++j) sum += current[i * V + j] * d_o[j];
        p.dq[token_offset(p.T, p.H, K, b, t, h, i)] = p.scale * sum;
      }
      for (int j = threadIdx.x; j < V; j += blockDim.x) {
        double sum = 0.0;
        for (int i = 0; i < K; ++i) sum += dS[i * ld + j] * s.k[i];
        du[j] = sum;
      }
      __syncthreads();
      // dk = dS u + dbk b, dbk = -P du, db = dbk k; dw = du v, dv = du w
      for (int i = threadIdx.x; i < K; i += blockDim.x) {
        double dsu = 0.0, pdu = 0.0;
        for (int j = 0; j < V; ++j) {
          dsu += dS[i * ld + j] * s.u[j];
          pdu += s.a[i] * previous[i * V + j] * du[j];
        }
        const std::size_t at = token_offset(p.T, p.H, K, b, t, h, i);
        const double dbk = -pdu;
        p.dk[at] = dsu + dbk * p.b[at];
        p.db[at] = dbk * p.k[at];
      }
      for (int j = threadIdx.x; j < V; j += blockDim.x) {
        const std::size_t at = token_offset(p.T, p.H, V, b, t, h, j);
        p.dw[at] = du[j] * p.v[at];
        p.dv[at] = du[j] * p.w[at];
      }
      __syncthreads();
      // dP = dS - bk du^T (in place)
      for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
        dS[idx / V * ld + idx % V] -= s.bk[idx / V] * du[idx % V];
      __syncthreads();
      // dg = a rowsum(dP .* S_{t-1}); dS = Diag(a) dP
      for (int i = threadIdx.x; i < K; i += blockDim.x) {
        double sum = 0.0;
        for (int j = 0; j < V; ++j) sum += dS[i * ld + j] * previous[i * V + j];
        p.dg[token_offset(p.T, p.H, K, b, t, h, i)] = s.a[i] * sum;
      }
      __syncthreads();
      for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
        dS[idx / V * ld + idx % V] *= s.a[idx / V];
    }
  }
  __syncthreads();
  for (int idx = threadIdx.x; idx < K * V; idx += blockDim.x)
    p.dh0[state_offset(p.H, K, V, b, h, idx / V, idx % V)] = dS[idx / V * ld + idx % V];
}

// ---------------------------------------------------------------------------
// Host side

std::string shape_of(const Reference64Input& in) {
  return "B=" + std::to_string(in.B) + " T=" + std::to_string(in.T) + " H=" + std::to_string(in.H) +
         " K=" + std::to_string(in.K) + " V=" + std::to_string(in.V);
}

void check(cudaError_t error, const char* what, const Reference64Input& in) {
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("reference64: CUDA error in ") + what + " (" +
                             shape_of(in) + "): " + cudaGetErrorName(error) + ": " +
                             cudaGetErrorString(error));
}

// A device array of doubles, freed on scope exit.
class Doubles {
 public:
  Doubles(std::size_t n, const char* what, const Reference64Input& in) : n_(n) {
    if (n) check(cudaMalloc(&data_, n * sizeof(double)), what, in);
  }
  ~Doubles() {
    if (data_) cudaFree(data_);
  }
  Doubles(const Doubles&) = delete;
  Doubles& operator=(const Doubles&) = delete;
  double* get() const { return data_; }
  std::size_t size() const { return n_; }

 private:
  double* data_ = nullptr;
  std::size_t n_ = 0;
};

// Refuses a shape the one-block-per-sequence layout cannot run, or inputs
// whose sizes do not match it.
void validate(const Reference64Input& in, bool backward) {
  auto fail = [&](const std::string& why) {
    throw std::runtime_error("reference64: " + why + " (" + shape_of(in) + ")");
  };
  if (in.B < 1 || in.T < 1 || in.H < 1 || in.K < 1 || in.V < 1)
    fail("B, T, H, K and V must be at least 1");
  if (in.K > Config::kMaxDim || in.V > Config::kMaxDim)
    fail("K and V must be at most " + std::to_string(Config::kMaxDim));
  const std::size_t heads = static_cast<std::size_t>(in.B) * in.H;
  const std::size_t tk = heads * in.T * in.K, tv = heads * in.T * in.V, kv = heads * in.K * in.V;
  auto expect = [&](const std::vector<double>& x, std::size_t n, const char* name) {
    if (x.size() != n)
      fail(std::string(name) + " holds " + std::to_string(x.size()) + " values, not " +
           std::to_string(n));
  };
  expect(in.q, tk, "q"), expect(in.k, tk, "k"), expect(in.g, tk, "g"), expect(in.b, tk, "b");
  expect(in.v, tv, "v"), expect(in.w, tv, "w"), expect(in.h0, kv, "h0");
  if (backward) expect(in.d_o, tv, "do"), expect(in.dht, kv, "dht");
}

// Copies host values into a device array of their size.
void upload_into(Doubles& d, const std::vector<double>& x, const char* name,
                 const Reference64Input& in) {
  check(cudaMemcpy(d.get(), x.data(), x.size() * sizeof(double), cudaMemcpyHostToDevice), name, in);
}

// The forward's launch: o and ht of p, and (checkpoints not null) the state
// at the start of every segment for the reverse sweep.
void launch_forward(const Problem64& p, const Reference64Input& in, double* checkpoints,
                    int segments) {
  const std::size_t forward_bytes = Shared::doubles(in.K, in.V) * sizeof(double);
  check(cudaFuncSetAttribute(reference64_forward, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(forward_bytes)),
        "reference64_forward (shared memory)", in);
  reference64_forward<<<static_cast<unsigned>(in.B * in.H), Config::kThreads, forward_bytes>>>(
      p, checkpoints, segments);
  check(cudaGetLastError(), "reference64_forward", in);
  check(cudaDeviceSynchronize(), "reference64_forward", in);
}

}  // namespace

Reference64Output run_reference64(const Reference64Input& in, bool backward) {
  validate(in, backward);
  const std::size_t heads = static_cast<std::size_t>(in.B) * in.H;
  const std::size_t tk = heads * in.T * in.K, tv = heads * in.T * in.V, kv = heads * in.K * in.V;
  auto upload = [&](const std::vector<double>& x, const char* name) {
    auto d = std::make_unique<Doubles>(x.size(), name, in);
    upload_into(*d, x, name, in);
    return d;
  };
  const auto q = upload(in.q, "q"), k = upload(in.k, "k"), g = upload(in.g, "g"),
             b = upload(in.b, "b"), v = upload(in.v, "v"), w = upload(in.w, "w"),
             h0 = upload(in.h0, "h0");
  const auto d_o = upload(backward ? in.d_o : std::vector<double>{}, "do");
  const auto dht = upload(backward ? in.dht : std::vector<double>{}, "dht");
  Doubles o(tv, "o", in), ht(kv, "ht", in);
  const std::size_t grad = backward ? 1 : 0;
  Doubles dq(grad * tk, "dq", in), dk(grad * tk, "dk", in), dg(grad * tk, "dg", in),
      db(grad * tk, "db", in), dv(grad * tv, "dv", in), dw(grad * tv, "dw", in),
      dh0(grad * kv, "dh0", in);
  const int segments = (in.T + Config::kSegment - 1) / Config::kSegment;
  Doubles checkpoints(grad * heads * segments * in.K * in.V, "checkpoints", in);
  Doubles states(grad * heads * (Config::kSegment + 2) * in.K * in.V, "segment states", in);

  const Problem64 p{in.B,      in.T,       in.H,       in.K,     in.V,     in.scale,
                    q->get(),  k->get(),   g->get(),   b->get(), v->get(), w->get(),
                    h0->get(), d_o->get(), dht->get(), o.get(),  ht.get(), dq.get(),
                    dk.get(),  dg.get(),   db.get(),   dv.get(), dw.get(), dh0.get()};
  launch_forward(p, in, backward ? checkpoints.get() : nullptr, segments);
  if (backward) {
    const std::size_t reverse_bytes =
        (Shared::doubles(in.K, in.V) + 2 * in.V) * sizeof(double);  // + du, do
    check(cudaFuncSetAttribute(reference64_reverse, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(reverse_bytes)),
          "reference64_reverse (shared memory)", in);
    reference64_reverse<<<static_cast<unsigned>(heads), Config::kThreads, reverse_bytes>>>(
        p, checkpoints.get(), segments, states.get());
    check(cudaGetLastError(), "reference64_reverse", in);
    check(cudaDeviceSynchronize(), "reference64_reverse", in);
  }

  auto download = [&](const Doubles& d, const char* name) {
    std::vector<double> x(d.size());
    check(cudaMemcpy(x.data(), d.get(), x.size() * sizeof(double), cudaMemcpyDeviceToHost), name,
          in);
    return x;
  };
  Reference64Output out;
  out.o = download(o, "o"), out.ht = download(ht, "ht");
  if (backward) {
    out.dq = download(dq, "dq"), out.dk = download(dk, "dk"), out.dg = download(dg, "dg");
    out.db = download(db, "db"), out.dv = download(dv, "dv"), out.dw = download(dw, "dw");
    out.dh0 = download(dh0, "dh0");
  }
  return out;
}

struct Reference64Session::Device {
  Reference64Input shape;  // B T H K V and scale only: the values live on the device
  std::map<std::string, std::unique_ptr<Doubles>> inputs, scratch;
  std::unique_ptr<Doubles> o, ht;
};

Reference64Session::Reference64Session(const Reference64Input& in) : device_(new Device) {
  validate(in, false);
  Device& d = *device_;
  d.shape.B = in.B, d.shape.T = in.T, d.shape.H = in.H, d.shape.K = in.K, d.shape.V = in.V;
  d.shape.scale = in.scale;
  for (const auto& [name, values] : {std::pair{"q", &in.q},
                                     {"k", &in.k},
                                     {"g", &in.g},
                                     {"b", &in.b},
                                     {"v", &in.v},
                                     {"w", &in.w},
                                     {"h0", &in.h0}}) {
    auto buffer = std::make_unique<Doubles>(values->size(), name, d.shape);
    upload_into(*buffer, *values, name, d.shape);
    d.inputs[name] = std::move(buffer);
  }
  d.o = std::make_unique<Doubles>(in.v.size(), "o", d.shape);
  d.ht = std::make_unique<Doubles>(in.h0.size(), "ht", d.shape);
}

Reference64Session::~Reference64Session() = default;

std::size_t Reference64Session::size(const std::string& name) const {
  const auto found = device_->inputs.find(name);
  if (found == device_->inputs.end())
    throw std::invalid_argument("reference64: no input named " + name);
  return found->second->size();
}

void Reference64Session::forward(const std::vector<Replacement>& replaced, std::vector<double>& o,
                                 std::vector<double>& ht) {
  Device& d = *device_;
  const Reference64Input& in = d.shape;
  std::map<std::string, const double*> at;
  for (const auto& [name, buffer] : d.inputs) at[name] = buffer->get();
  for (const Replacement& r : replaced) {
    const auto base = d.inputs.find(r.name);
    if (base == d.inputs.end())
      throw std::invalid_argument(std::string("reference64: no input named ") + r.name);
    if (r.values->size() != base->second->size())
      throw std::invalid_argument(std::string("reference64: the replacement of ") + r.name +
                                  " holds " + std::to_string(r.values->size()) + " values, not " +
                                  std::to_string(base->second->size()));
    auto& buffer = d.scratch[r.name];
    if (!buffer) buffer = std::make_unique<Doubles>(r.values->size(), r.name, in);
    upload_into(*buffer, *r.values, r.name, in);
    at[r.name] = buffer->get();
  }
  const Problem64 p{in.B,        in.T,    in.H,    in.K,    in.V,     in.scale, at["q"], at["k"],
                    at["g"],     at["b"], at["v"], at["w"], at["h0"], nullptr,  nullptr, d.o->get(),
                    d.ht->get(), nullptr, nullptr, nullptr, nullptr,  nullptr,  nullptr, nullptr};
  launch_forward(p, in, nullptr, 0);
  o.resize(d.o->size());
  ht.resize(d.ht->size());
  check(cudaMemcpy(o.data(), d.o->get(), o.size() * sizeof(double), cudaMemcpyDeviceToHost), "o",
        in);
  check(cudaMemcpy(ht.data(), d.ht->get(), ht.size() * sizeof(double), cudaMemcpyDeviceToHost),
        "ht", in);
}

}  // namespace deltaproof::oracle

// kernels/cuda/backends.cu — cuda-chunk and cuda-recurrent behind the backend
// interface: bring every op into gdn2 form on the host (kda's beta into b and
// w, gdn's scalar g over K: core/gdn2_form.hpp), upload, run the kernels,
// download and fold the gradients back (kernels/backend.hpp). Output buffers
// are uploaded as handed in (a gate poisons them with NaN) and kda's and gdn's
// gdn2-form gradients are poisoned with NaN, so an element no kernel writes
// arrives as NaN.
#include "kernels/cuda/backends.hpp"

#include <cuda_runtime.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "core/error.hpp"
#include "core/gdn2_form.hpp"
#include "kernels/cuda/common.cuh"
#include "kernels/cuda/tc.hpp"
#include "kernels/cuda/traits.cuh"
#include "kernels/faults.hpp"

namespace deltaproof::kernels {

bool gpu_available() {
  static const bool available = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return available;
}

std::string device_name() {
  if (!gpu_available()) return "cpu";
  cudaDeviceProp props{};
  int driver = 0;
  if (cudaGetDeviceProperties(&props, 0) != cudaSuccess) return "cuda (unreadable properties)";
  cudaDriverGetVersion(&driver);
  return fmt::format("{} (sm_{}{}, driver CUDA {}.{})", props.name, props.major, props.minor,
                     driver / 1000, driver % 1000 / 10);
}

namespace cuda {

CudaFaults active_faults() {
  CudaFaults f;
#ifdef DELTAPROOF_FALSIFY
  f.mask = fault_bit(active_fault());
#endif
  return f;
}

namespace {

// One device buffer per named tensor, uploaded from host floats.
struct Device {
  DeviceProblem p;
  std::map<std::string, std::unique_ptr<DeviceBuffer>> buffers;
  float* upload(const std::string& name, const std::vector<float>& host) {
    auto& slot = buffers[name];
    slot = std::make_unique<DeviceBuffer>(host.size(), "cudaMalloc", p);
    CUDA_CHECK(
        cudaMemcpy(slot->get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
        ("upload of " + name).c_str(), p);
    return slot->get();
  }
  // The same values as bf16 bit patterns (exact: a bf16 job's inputs are bf16 values).
  const void* upload_bf16(const std::string& name, const std::vector<float>& host) {
    std::vector<float> packed;
    if (const std::size_t bad = pack_bf16(host, packed); bad < host.size())
      throw InputError("input '" + name + "' holds " + std::to_string(host[bad]) +
                       ", which bf16 cannot represent (a bf16 job needs bf16 values)");
    return upload(name, packed);
  }
  // Ints (a packed batch's sequence starts), in a buffer of as many floats.
  const int* upload_ints(const std::string& name, const std::vector<int>& host) {
    auto& slot = buffers[name];
    slot = std::make_unique<DeviceBuffer>(host.size(), "cudaMalloc", p);
    static_assert(sizeof(int) == sizeof(float), "an int a float's slot");
    CUDA_CHECK(
        cudaMemcpy(slot->get(), host.data(), host.size() * sizeof(int), cudaMemcpyHostToDevice),
        ("upload of " + name).c_str(), p);
    return reinterpret_cast<const int*>(slot->get());
  }
  const void* upload_input(const std::string& name, const std::vector<float>& host) {
    return p.input == InputType::bf16 ? upload_bf16(name, host) : upload(name, host);
  }
  std::vector<float> download(const std::string& name) {
    const auto& slot = buffers.at(name);
    std::vector<float> host(slot->size());
    CUDA_CHECK(
        cudaMemcpy(host.data(), slot->get(), host.size() * sizeof(float), cudaMemcpyDeviceToHost),
        ("download of " + name).c_str(), p);
    return host;
  }
};

using Runner = void (*)(const DeviceProblem&, bool, LaunchLog&);

// Packed sequences and grouped value heads (issue 14, docs/VARLEN.md) as
// cuda-chunk and cuda-recurrent take them (cuda-tc takes packed sequences as
// they are, and grouped heads so): a dense batch of one row per sequence, each row padded
// after its last token to the longest sequence's length, and one head per
// value head (q and k repeated over each key head's group). A padded token
// has k = q = v = b = w = 0 and g = 0 (decay 1), so it adds exact zeros and
// leaves the state as it is: each row's results are, bit for bit, those of
// its sequence run alone, and its chunks start at its first token.
struct PaddedDense {
  KernelShape dense;
  std::vector<SequenceRef> refs;  // the packed shape's sequences, in row-major order
};

PaddedDense padded_dense(const KernelShape& s) {
  PaddedDense p;
  p.refs = s.sequences();
  p.dense = s;
  p.dense.B = s.states();
  p.dense.H = s.value_heads();
  p.dense.HV = 0;
  p.dense.cu_seqlens.clear();
  p.dense.T = 0;
  for (const SequenceRef& r : p.refs) p.dense.T = std::max(p.dense.T, r.length());
  return p;
}

// Moves every token of a named tensor between the packed layout and the
// padded dense one (state tensors: the same layout). `to_dense`: packed ->
// dense (padding stays as `dense` holds it); else dense -> packed, where dq
// and dk, per value head in the dense layout, are summed over each key
// head's group in ascending value head.
void move_tokens(const KernelShape& s, const PaddedDense& p, const std::string& name,
                 std::vector<float>& packed, std::vector<float>& dense, bool to_dense) {
  const int width = tensor_width(s, name);
  if (width < 0) {  // [N, HV, K, V] both ways
    if (to_dense)
      dense = packed;
    else
      packed = dense;
    return;
  }
  const int w = width == 0 ? 1 : width;
  const bool key = on_key_heads(name);
  const int heads = key ? s.H : s.value_heads(), group = s.value_heads() / s.H;
  const KernelShape& d = p.dense;
  for (const SequenceRef& r : p.refs) {
    const int head = key ? r.key_head : r.value_head;
    const bool first = r.value_head % group == 0;
    for (int t = 0; t < r.length(); ++t)
      for (int i = 0; i < w; ++i) {
        float& x = packed[token_offset(s.T, heads, width, r.batch, r.begin + t, head, i)];
        float& y = dense[token_offset(d.T, d.H, width, r.state, t, r.value_head, i)];
        if (to_dense)
          y = x;
        else
          x = key && !first ? x + y : y;
      }
  }
}

// What the kernels need to round under the shape's contract (all zero under f32).
DeviceRounding device_rounding(const PrecisionContract& c) {
  DeviceRounding r;
  if (c.takes_operands()) r.operand_bits = dropped_bits(c.precision);
  if (c.takes_intermediates()) r.intermediate_bits = dropped_bits(Precision::bf16);
  r.rule = c.rounding;
  return r;
}

static_assert(cuda::RecurrentTraits::kMaxK == cuda::ChunkConfig::kMaxDim &&
                  cuda::RecurrentTraits::kMaxV == cuda::ChunkConfig::kMaxDim,
              "one check of K and V serves both CUDA backends");

// How a CUDA backend's arithmetic meets the precision classes.
enum class Arithmetic {
  f32,          // f32 only: refuses a contract that rounds (cuda-recurrent)
  contracts,    // f32, or rounds at a deterministic contract's points (cuda-chunk)
  tensor_cores  // the bf16 class always (cuda-tc): refuses another class's contract
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::string name, std::string description, Runner runner, Arithmetic arithmetic)
      : name_(std::move(name)),
        description_(std::move(description)),
        runner_(runner),
        arithmetic_(arithmetic) {}
  std::string name() const override { return name_; }
  std::string description() const override { return description_; }

  void run(const KernelShape& s, const Buffers& in, Phase phase, Buffers& out,
           ExecutionRecord& record) const override {
    // cuda-tc runs packed sequences natively (DeviceProblem::cu_seqlens); the
    // other backends, and grouped heads, through the padded dense batch
    const bool native_packed =
        s.packed() && !s.grouped() && arithmetic_ == Arithmetic::tensor_cores;
    if ((s.packed() && !native_packed) || s.grouped()) return run_padded(s, in, phase, out, record);
    require_arithmetic(s);
    if (!gpu_available())
      throw InputError(
          fmt::format("backend {} needs a CUDA GPU and this machine has none.", name_));
    const bool backward = phase == Phase::bwd;
    Device d;
    DeviceProblem& p = d.p;
    p.B = s.B, p.T = s.T, p.H = s.H, p.K = s.K, p.V = s.V, p.chunk = s.chunk, p.scale = s.scale;
    p.faults = active_faults();
    p.rounding = device_rounding(s.contract);
    p.input = s.bf16_inputs ? InputType::bf16 : InputType::f32;
    if (native_packed) {  // B sequences of at most T tokens, packed in one batch row
      std::vector<int> starts(s.cu_seqlens.begin(), s.cu_seqlens.end());
      p.B = s.states(), p.T = 0;
      for (std::size_t n = 0; n + 1 < starts.size(); ++n)
        p.T = std::max(p.T, starts[n + 1] - starts[n]);
      p.cu_seqlens = d.upload_ints("cu_seqlens", starts);
      record.note("layout:packed");
    }
    p.q = d.upload_input("q", in.at("q"));
    p.k = d.upload_input("k", in.at("k"));
    p.v = d.upload_input("v", in.at("v"));
    p.h0 = d.upload("h0", in.at("h0"));
    const Gdn2Gates<float> gates = gdn2_gates(s.op, s.K, s.V, in);
    p.g = d.upload_input("g", gates.g);
    if (s.op != Op::gdn2 && arithmetic_ == Arithmetic::tensor_cores) {
      // beta as it is: cuda-tc broadcasts it over b's and w's channels as it reads them
      p.beta = d.upload_input("beta", in.at("beta"));
      record.note("beta:per-row");
    } else {
      p.b = d.upload_input("b", gates.b);
      p.w = d.upload_input("w", gates.w);
    }
    p.o = d.upload("o", out.at("o"));
    p.ht = d.upload("ht", out.at("ht"));
    if (backward) {
      p.d_o = d.upload("do", in.at("do"));
      p.dht = d.upload("dht", in.at("dht"));
      p.dq = d.upload("dq", out.at("dq"));
      p.dk = d.upload("dk", out.at("dk"));
      p.dv = d.upload("dv", out.at("dv"));
      p.dh0 = d.upload("dh0", out.at("dh0"));
      const Buffers gdn2_grads = gdn2_gradient_buffers(s, out);  // dg, db, dw in gdn2 form
      p.dg = d.upload("dg", gdn2_grads.at("dg"));
      p.db = d.upload("db", gdn2_grads.at("db"));
      p.dw = d.upload("dw", gdn2_grads.at("dw"));
    }

    LaunchLog log;
    runner_(p, backward, log);
    if (p.input == InputType::bf16) record.note("inputs:bf16");
    for (const auto& launch : log.launches) {
      const auto colon = launch.find(':');
      record.note(launch.substr(0, colon));
      record.note("kernel:" + launch.substr(colon + 1));
    }

    out.at("o") = d.download("o");
    out.at("ht") = d.download("ht");
    if (backward) download_gradients(s, d, out);
    round_outputs(written_as(s), out);  // as written, in the class's storage type
  }

 private:
  // Throws InputError when this backend cannot run the shape or the contract:
  // the traits' limits (kernels/cuda/traits.cuh, kernels/cuda/tc.hpp), in this
  // backend's words; cuda-recurrent's K and V are cuda-chunk's (static_assert
  // above).
  void require_arithmetic(const KernelShape& s) const {
    switch (arithmetic_) {
      case Arithmetic::f32:
        require_f32_contract(s, name_);
        break;
      case Arithmetic::contracts:
        require_deterministic_contract(s, name_);
        break;
      case Arithmetic::tensor_cores:
        if (s.contract.precision != Precision::f32 &&
            (s.contract.precision != Precision::bf16 ||
             s.contract.rounding != Rounding::nearest_even))
          throw InputError(fmt::format(
              "backend {} computes in the bf16 class (bf16 operands on the tensor cores, "
              "nearest-even); it cannot run the {} contract with {} rounding.",
              name_, precision_name(s.contract.precision), rounding_name(s.contract.rounding)));
        if (const std::string why = cuda::TcConfig::supports(s.B, s.H, s.K, s.V, s.chunk);
            !why.empty())
          throw InputError(fmt::format("backend {} cannot run B={} H={} K={} V={} chunk {}: {}.",
                                       name_, s.B, s.H, s.K, s.V, s.chunk, why));
        return;
    }
    if (s.K > cuda::ChunkConfig::kMaxDim || s.V > cuda::ChunkConfig::kMaxDim)
      throw InputError(fmt::format("backend {} supports K and V up to {}, not K={} V={}.", name_,
                                   cuda::ChunkConfig::kMaxDim, s.K, s.V));
    if (!is_supported_chunk(s.chunk))
      throw InputError(
          fmt::format("backend {} supports chunk {}, not {}.", name_, chunk_sizes_text(), s.chunk));
  }

  // A packed or grouped shape through the dense kernels (PaddedDense): the
  // outputs of the padded tokens are dropped; every output element of the
  // packed shape is written from the dense run (NaN where the kernels left it
  // unwritten). Grouped dq and dk sum the value heads' outputs, each already
  // as written (bf16 in the bf16 class), and are written once more.
  void run_padded(const KernelShape& s, const Buffers& in, Phase phase, Buffers& out,
                  ExecutionRecord& record) const {
    PaddedDense p = padded_dense(s);
    Buffers dense_in;
    for (const auto& [name, values] : in) {
      auto& moved = dense_in[name];
      moved.assign(tensor_size(p.dense, name), 0.0f);
      std::vector<float> source = values;
      move_tokens(s, p, name, source, moved, true);
    }
    Buffers dense_out = allocate_outputs(p.dense, phase, std::nanf(""));
    run(p.dense, dense_in, phase, dense_out, record);
    record.note("layout:padded-dense");
    for (auto& [name, values] : out) move_tokens(s, p, name, values, dense_out.at(name), false);
    if (s.grouped() && phase == Phase::bwd) {
      Buffers keys{{"dq", std::move(out.at("dq"))}, {"dk", std::move(out.at("dk"))}};
      round_outputs(written_as(s), keys);
      out.at("dq") = std::move(keys.at("dq"));
      out.at("dk") = std::move(keys.at("dk"));
    }
  }

  // The shape whose contract says how the outputs are written: cuda-tc's are
  // bf16 (its class), the others' as the shape's contract says.
  KernelShape written_as(const KernelShape& s) const {
    if (arithmetic_ != Arithmetic::tensor_cores) return s;
    KernelShape bf16 = s;
    bf16.contract = PrecisionContract{};
    bf16.contract.precision = Precision::bf16;
    return bf16;
  }

  static void download_gradients(const KernelShape& s, Device& d, Buffers& out) {
    for (const char* name : {"dq", "dk", "dv", "dh0"}) out.at(name) = d.download(name);
    fold_gdn2_gradients(
        s, {{"dg", d.download("dg")}, {"db", d.download("db")}, {"dw", d.download("dw")}}, out);
  }

 private:
  std::string name_, description_;
  Runner runner_;
  Arithmetic arithmetic_;
};

}  // namespace

const Backend& chunk_backend() {
  static const CudaBackend backend(
      "cuda-chunk",
      "chunked WY forward and BK2/BK1/glue backward, f32 (or a tf32/bf16 contract), CUDA (sm_90)",
      &run_chunk, Arithmetic::contracts);
  return backend;
}

const Backend& recurrent_backend() {
  static const CudaBackend backend("cuda-recurrent",
                                   "token-by-token recurrence and reverse sweep, f32, CUDA (sm_90)",
                                   &run_recurrent, Arithmetic::f32);
  return backend;
}

const Backend& tc_backend() {
  static const CudaBackend backend(
      "cuda-tc",
      "chunked WY forward and BK2/BK1/glue backward on the tensor cores (mma.sync bf16, f32 "
      "accumulation), the bf16 class, chunk 64, K and V up to 128, CUDA (sm_90)",
      &run_tc, Arithmetic::tensor_cores);
  return backend;
}

}  // namespace cuda
}  // namespace deltaproof::kernels

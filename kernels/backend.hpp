// kernels/backend.hpp — the interface every kernel under test implements, CPU
// and CUDA alike: f32 buffers in FLA layout in, o, ht and every gradient out,
// plus an execution record naming each kernel stage that ran and how often
// (the gates' path evidence: no silent fallback). Backends are found by name.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/names.hpp"
#include "core/op.hpp"
#include "kernels/precision.hpp"

namespace deltaproof::kernels {

enum class Phase { fwd, bwd };  // bwd runs the forward and the backward
inline constexpr std::pair<Phase, std::string_view> kPhaseNames[] = {{Phase::fwd, "fwd"},
                                                                     {Phase::bwd, "bwd"}};
// "fwd" or "bwd", as gate names, reports and --phase write it.
constexpr std::string_view phase_name(Phase phase) { return name_of(kPhaseNames, phase); }

using Buffers = std::map<std::string, std::vector<float>>;

struct KernelShape {
  Op op = Op::gdn2;
  int B = 1, T = 1, H = 1, K = 1, V = 1;
  // Grouped value heads (0: as many as H) and packed sequences (empty: dense;
  // else B = 1 and sequence n is tokens [cu_seqlens[n], cu_seqlens[n + 1])
  // with state n): docs/VARLEN.md. q, k, dq, dk carry H heads, every other
  // token tensor HV; the states are [states(), HV, K, V].
  int HV = 0;
  std::vector<std::int64_t> cu_seqlens;
  int value_heads() const { return HV > 0 ? HV : H; }
  bool packed() const { return !cu_seqlens.empty(); }
  bool grouped() const { return value_heads() != H; }
  int states() const { return packed() ? static_cast<int>(cu_seqlens.size()) - 1 : B; }
  // packed: each token's sequence, by token; dense: empty
  std::vector<std::int64_t> token_sequences() const {
    std::vector<std::int64_t> out;
    for (std::size_t n = 0; n + 1 < cu_seqlens.size(); ++n)
      out.insert(out.end(), static_cast<std::size_t>(cu_seqlens[n + 1] - cu_seqlens[n]),
                 static_cast<std::int64_t>(n));
    return out;
  }
  // every sequence, state-major then value head (core/op.hpp)
  std::vector<SequenceRef> sequences() const {
    return problem_sequences(B, T, H, value_heads(), cu_seqlens);
  }
  int chunk = 64;  // used by chunked backends
  float scale = 1.0f;
  // The inputs q k v g b w (beta) hold bf16 values (a bf16 fixture): a backend
  // that reads bf16 (cuda-*) takes them as bf16; the others read the f32 copy.
  bool bf16_inputs = false;
  // Where the kernel rounds (kernels/precision.hpp). cpu-chunk emulates any
  // contract; cuda-chunk the deterministic ones (nearest-even, toward zero);
  // the recurrent backends refuse one that rounds (InputError).
  PrecisionContract contract;
};

// Throws InputError unless the shape's contract rounds nothing: for backends
// that run f32 arithmetic only.
void require_f32_contract(const KernelShape& shape, std::string_view backend);
// Throws InputError when the shape's contract rounds stochastically: for
// backends whose rounding cannot follow cpu-chunk's stream.
void require_deterministic_contract(const KernelShape& shape, std::string_view backend);
// The outputs as written in the contract's storage type (bf16 rounds every
// output; the other classes none), after kda's dbeta and gdn's dg are summed
// over channels; a stochastic rule draws from a stream of its own (B*H).
void round_outputs(const KernelShape& shape, Buffers& outputs);

// The gradients of g, b and w in gdn2 form (core/gdn2_form.hpp), for a
// backend that computes in it: the outputs' own dg, db and dw for gdn2; for kda
// and gdn full-width buffers of NaN (unwritten elements stay poison).
// fold_gdn2_gradients folds them back into the outputs (dg, dbeta).
Buffers gdn2_gradient_buffers(const KernelShape& shape, Buffers& outputs);
void fold_gdn2_gradients(const KernelShape& shape, Buffers&& gradients, Buffers& outputs);

// Names of the tensors a kernel reads: q k v g b w h0 (gdn2) or q k v g beta h0
// (kda, gdn), plus the cotangents do dht for the backward.
std::vector<std::string> kernel_input_names(Op op);
// o ht, then dq dk dv dg db dw (dbeta) dh0 when phase is bwd.
std::vector<std::string> kernel_output_names(Op op, Phase phase);
// The number of elements of a named tensor for a shape.
std::size_t tensor_size(const KernelShape& shape, std::string_view name);
// q, k and their gradients run over the H key heads; every other tensor over
// the value heads (HV).
bool on_key_heads(std::string_view name);
int tensor_heads(const KernelShape& shape, std::string_view name);
// Per-token channels of a token tensor (0 = one value per token and head);
// -1 for a state tensor (h0, ht, dht, dh0).
int tensor_width(const KernelShape& shape, std::string_view name);
// The channel axis a named tensor's last index runs over: K, V, both (a state
// [K, V]), or none (one value per token and head), from the op table
// (core/op.hpp); tensor_width derives from it. InputError for an unknown name.
using ChannelAxis = Axis;
ChannelAxis channel_axis(const KernelShape& shape, std::string_view name);

struct ExecutionRecord {
  std::map<std::string, long> stages;  // stage name -> times it ran
  void note(const std::string& stage, long times = 1) { stages[stage] += times; }
  bool ran(const std::string& stage) const { return stages.count(stage) && stages.at(stage) > 0; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  // Reads `inputs`; writes every element of the tensors of
  // kernel_output_names(op, phase), already allocated in `outputs` (a caller
  // may fill them with NaN first to catch unwritten elements).
  virtual void run(const KernelShape& shape, const Buffers& inputs, Phase phase, Buffers& outputs,
                   ExecutionRecord& record) const = 0;
};

// Allocates every output of `phase`, each element set to `fill`.
Buffers allocate_outputs(const KernelShape& shape, Phase phase, float fill);

// Throws InputError naming the backend and the known ones when unknown.
const Backend& find_backend(std::string_view name);
std::vector<std::string> backend_names();

// Whether a CUDA device can run here. False in a build without CUDA; a gate of
// a GPU backend on a machine without one is reported skipped, never passed.
bool gpu_available();
// "NVIDIA H200 (sm_90, driver 13.0)" where a GPU is, else "cpu".
std::string device_name();

}  // namespace deltaproof::kernels

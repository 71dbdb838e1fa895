// oracle/op.hpp — the three ops (gdn2, kda, gdn), their tensors and layouts
// (DESIGN.md section 1), the input regimes (section 3) and a fixture's spec.
//
// Every op is evaluated in the general gdn2 form: kda's beta is broadcast to
// b (over K) and w (over V); gdn's scalar g is broadcast over K. The gradients
// of the broadcast tensors are the sums over the broadcast axis (chain rule).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/op.hpp"
#include "core/tensor.hpp"

namespace deltaproof::oracle {

using deltaproof::Op;
using deltaproof::op_name;
using deltaproof::parse_op;
enum class Regime { default_, mild, stress, edge };

std::string_view regime_name(Regime regime);
std::optional<Regime> parse_regime(std::string_view name);

// A kernel's input dtype as gen's --dtype, a fixture's metadata and reports
// write it: "f32" or "bf16".
std::string_view input_dtype_name(DType dtype);
std::optional<DType> parse_input_dtype(std::string_view name);

struct FixtureSpec {
  Op op = Op::gdn2;
  int B = 1, T = 16, H = 2, K = 8, V = 8;
  int chunk = 16;
  Regime regime = Regime::default_;
  DType dtype = DType::F32;  // the kernel's input dtype; inputs are rounded to it
  std::uint64_t seed = 0;
  // The initial state h0 set to zero (`gen --h0 zero`); the edge regime's
  // h0 is zero whatever this says.
  bool zero_h0 = false;
  bool h0_is_zero() const { return zero_h0 || regime == Regime::edge; }
  // A loss mask (`gen --do-mask`): dO is zero at every token t with t mod 3
  // = 2 (of its sequence), as where a training loss skips padding or a
  // prompt. A kernel that skips work where dO vanishes is tested there.
  bool masked_do = false;
  static bool do_masked_at(int t) { return t % 3 == 2; }
  // Grouped value heads (docs/VARLEN.md): HV value heads, value head hv
  // reading key head hv / (HV / H); 0 means HV = H.
  int HV = 0;
  int value_heads() const { return HV > 0 ? HV : H; }
  int group() const { return value_heads() / H; }
  // Packed sequences: with B = 1, sequence n owns tokens [cu_seqlens[n],
  // cu_seqlens[n + 1]) and state n; empty means dense.
  std::vector<std::int64_t> cu_seqlens;
  bool packed() const { return !cu_seqlens.empty(); }
  // The number of states (h0, ht, dht, dh0): one a sequence, or one a batch row.
  int states() const { return packed() ? static_cast<int>(cu_seqlens.size()) - 1 : B; }
  // scale = K^-1/2 as the nearest double; every precision uses this value.
  double scale() const;
  int num_chunks() const { return (T + chunk - 1) / chunk; }
  // "gdn2 B1 T32 H2 K8 V8 chunk16 default f32 seed0"
  std::string describe() const;
  // Throws InputError with a sentence naming the bad field and what to change.
  void validate() const;
};

// The metadata value of a fixture made with `gen --do-mask` (FixtureSpec::masked_do).
inline constexpr const char* kDoMask = "zero at t mod 3 = 2";

// A spec's one serialisation, in the three spellings it is written in. Each
// writes every field of FixtureSpec; the first two read every field back
// (tests/oracle/spec_io_test.cpp round-trips each one).
//
// JSON (gen --report, manifest.json): typed values; h0 "zero" or "drawn" as
// the fixture has it (h0_is_zero); scale beside them for readers; HV,
// cu_seqlens and do_mask only where they differ from the default. from_json
// throws InputError naming the key; it ignores scale, and reads h0 "zero" in
// the edge regime (whose h0 is zero whatever zero_h0 says) as zero_h0 false.
void to_json(nlohmann::json& j, const FixtureSpec& spec);
void from_json(const nlohmann::json& j, FixtureSpec& spec);

// A fixture's metadata entries (strings, DESIGN.md section 4): h0 only for
// `gen --h0 zero`, do_mask only for `gen --do-mask`, HV only for grouped value
// heads, N (the offsets are the tensor cu_seqlens) only for packed sequences;
// every key is one of kSpecMetadataKeys.
std::map<std::string, std::string> spec_metadata(const FixtureSpec& spec);
inline constexpr std::string_view kSpecMetadataKeys[] = {
    "op",    "B",     "T",      "H",     "HV",   "N",  "K",      "V",
    "chunk", "scale", "regime", "dtype", "seed", "h0", "do_mask"};
// Reads a spec back from a fixture's metadata, all but the offsets
// (read_cu_seqlens in oracle/fixture.hpp); throws InputError naming `source`
// and the key on a missing or malformed entry.
FixtureSpec spec_from_metadata(const std::map<std::string, std::string>& metadata,
                               const std::string& source);
// A metadata entry read as an integer; throws InputError naming `source` and
// the key when it is missing or not an integer.
long long metadata_integer(const std::map<std::string, std::string>& metadata,
                           const std::string& key, const std::string& source);

// gen's options that make this spec, "--op gdn2 --B 1 --T 16 ... --seed 0",
// then --h0 zero, --do-mask, --HV and --cu-seqlens where they apply.
std::string gen_options(const FixtureSpec& spec);

// Whether an input is read from a sequence's key head: q and k, as FLA lays
// them out ([B, T, H, K]); every other tensor carries the value head.
inline bool on_key_head(std::string_view name) { return name == "q" || name == "k"; }

// What is wrong with cu_seqlens for a batch of B rows of T tokens, as the end
// of a sentence ("it must start at 0, not 3"); empty when nothing is.
std::string packing_problem(const std::vector<std::int64_t>& cu_seqlens, int B, int T);

// Throws InputError for grouped value heads or packed sequences where only
// the oracle's evaluation knows them yet (issue 14, docs/VARLEN.md section 5):
// the self-checks, the fixture file and the kernels are dense.
void refuse_packed_or_grouped(const FixtureSpec& spec);

// How one input tensor of an op is laid out: token tensors are [B,T,heads,width],
// width 0 meaning [B,T,heads]; the state h0 is [states,HV,K,V]. q and k carry
// the H key heads, every other tensor the HV value heads.
struct TensorLayout {
  std::string name;
  bool is_state = false;
  int width = 0;           // per-token channels (K, V, or 0 for a scalar per token and head)
  bool key_heads = false;  // q, k: H heads; otherwise HV
  int heads(const FixtureSpec& spec) const { return key_heads ? spec.H : spec.value_heads(); }
  Shape shape(const FixtureSpec& spec) const;
  int per_token() const { return is_state ? 0 : (width == 0 ? 1 : width); }
};

// q k v g b w h0 (gdn2) or q k v g beta h0 (kda, gdn): the differentiable inputs.
std::vector<TensorLayout> input_layouts(const FixtureSpec& spec);
// do [B,T,H,V] and dht [B,H,K,V].
std::vector<TensorLayout> cotangent_layouts(const FixtureSpec& spec);
// o and ht.
std::vector<TensorLayout> output_layouts(const FixtureSpec& spec);
// The gradient of input `name` is "d" + name: dq dk dv dg db dw dbeta dh0.
std::string gradient_name(std::string_view input_name);

}  // namespace deltaproof::oracle

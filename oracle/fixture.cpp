// oracle/fixture.cpp — assembling fixtures. See fixture.hpp.
#include "oracle/fixture.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/parallel.hpp"

namespace deltaproof::oracle {
namespace {

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ",") + name;
  return out;
}

std::vector<std::string> names_of(const std::vector<TensorLayout>& layouts) {
  std::vector<std::string> names;
  for (const auto& layout : layouts) names.push_back(layout.name);
  return names;
}

}  // namespace

SafetensorsFile fixture_tensors(const Problem& problem, const TensorMap& reference) {
  const FixtureSpec& s = problem.spec;
  SafetensorsFile file;
  auto add = [&](const TensorLayout& layout, const std::vector<double>& values) {
    file.tensors[layout.name] = Tensor::from_f64(DType::F64, layout.shape(s), values);
  };
  for (const auto& layout : input_layouts(s)) add(layout, problem.at(layout.name));
  for (const auto& layout : cotangent_layouts(s)) add(layout, problem.at(layout.name));
  for (const auto& layout : output_layouts(s)) add(layout, reference.at(layout.name));
  for (auto layout : input_layouts(s)) {
    layout.name = gradient_name(layout.name);
    add(layout, reference.at(layout.name));
  }
  if (s.packed())
    file.tensors["cu_seqlens"] =
        Tensor::from_i64({static_cast<std::int64_t>(s.cu_seqlens.size())}, s.cu_seqlens);
  return file;
}

std::size_t differing_bytes(const SafetensorsFile& a, const SafetensorsFile& b) {
  const auto x = serialize_safetensors(a);
  const auto y = serialize_safetensors(b);
  std::size_t count = x.size() > y.size() ? x.size() - y.size() : y.size() - x.size();
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) count += x[i] != y[i];
  return count;
}

std::string canonical_command(const FixtureSpec& s, const std::string& file_name) {
  return fmt::format("deltaproof gen {} --out {}", gen_options(s), file_name);
}

void set_fixture_metadata(const FixtureSpec& spec, double loss, const std::string& reference,
                          const std::string& command, GeneratedFixture& out) {
  auto& m = out.file.metadata;
  m["format"] = "deltaproof-fixture/1";
  m["generator"] = kGeneratorVersion;
  for (auto& [key, value] : spec_metadata(spec)) m[key] = std::move(value);
  m["inputs"] = join(names_of(input_layouts(spec)));
  m["cotangents"] = join(names_of(cotangent_layouts(spec)));
  m["outputs"] = join(names_of(output_layouts(spec)));
  m["gradients"] = join(gradient_names(spec));
  m["reference_precision"] = reference;
  m["loss"] = fmt::format("{:.17g}", loss);
  m["self_checks"] = out.report.to_json().dump();
  m["path_liveness"] = out.report.paths.to_json().dump();
  m["status"] = out.report.passed() ? "checked" : "failed";
  m["command"] = command;
  // each tensor's sha256, in parallel (4 GB at the production shape)
  std::vector<const std::pair<const std::string, Tensor>*> tensors;
  for (const auto& entry : out.file.tensors) tensors.push_back(&entry);
  std::vector<std::string> hashes(tensors.size());
  parallel_for(static_cast<int>(tensors.size()), 0,
               [&](int i) { hashes[i] = tensors[i]->second.sha256(); });
  for (std::size_t i = 0; i < tensors.size(); ++i) m["sha256." + tensors[i]->first] = hashes[i];
}

GeneratedFixture generate_fixture(const FixtureSpec& spec, const GenerateOptions& options) {
  auto progress = [&](const std::string& step) {
    if (options.progress) options.progress(step);
  };
  progress("drawing inputs");
  const Problem problem = draw_problem(spec);
  progress("quad oracle");
  const OracleOutput quad = evaluate_quad(problem, true, options.threads, options.checks.faults);

  SelfCheckOptions check_options = options.checks;
  check_options.threads = options.threads;
  check_options.on_check = progress;
  GeneratedFixture out;
  out.report = run_self_checks(problem, quad, check_options);
  out.file = fixture_tensors(problem, quad.tensors);

  // determinism: a second generation, single-threaded, must give the same bytes
  progress("determinism");
  {
    const Problem again = draw_problem(spec);
    const OracleOutput quad_again = evaluate_quad(again, true, 1, options.checks.faults);
    const std::size_t differing =
        differing_bytes(out.file, fixture_tensors(again, quad_again.tensors));
    CheckFigure c{"determinism",
                  static_cast<double>(differing),
                  0.0,
                  true,
                  differing == 0,
                  "a second generation on 1 thread gives the same bytes as the first (all "
                  "threads); figure = differing bytes",
                  nlohmann::json::object()};
    out.report.checks.push_back(c);
  }

  set_fixture_metadata(spec, quad.loss, "quad (binary128), rounded to f64",
                       canonical_command(spec, options.file_name), out);
  return out;
}

void mark_unchecked(SafetensorsFile& file) { file.metadata["status"] = "unchecked"; }

std::vector<std::int64_t> read_cu_seqlens(const SafetensorsFile& file, const std::string& source,
                                          int B, int T) {
  const auto n_entry = file.metadata.find("N");
  if (!file.has("cu_seqlens")) {
    if (n_entry != file.metadata.end())
      throw InputError(fmt::format(
          "{}: the metadata says N={} packed sequences, but there is no tensor 'cu_seqlens'.",
          source, n_entry->second));
    return {};
  }
  const Tensor& cu = file.tensors.at("cu_seqlens");
  if (cu.dtype() != DType::I64 || cu.shape().size() != 1)
    throw InputError(
        fmt::format("{}: tensor 'cu_seqlens' is {} of shape {}; it must be I64 of shape [N + 1].",
                    source, dtype_name(cu.dtype()), shape_string(cu.shape())));
  if (n_entry != file.metadata.end()) {
    const long long N = metadata_integer(file.metadata, "N", source);
    if (cu.shape() != Shape{N + 1})
      throw InputError(fmt::format(
          "{}: tensor 'cu_seqlens' has shape {}, but the metadata says N={} sequences, so it "
          "must be [{}].",
          source, shape_string(cu.shape()), N, N + 1));
  }
  std::vector<std::int64_t> cu_seqlens = cu.to_i64();
  if (const std::string why = packing_problem(cu_seqlens, B, T); !why.empty())
    throw InputError(
        fmt::format("{}: tensor 'cu_seqlens' ({}): {}.", source, fmt::join(cu_seqlens, ","), why));
  return cu_seqlens;
}

FixtureSpec spec_of_fixture(const SafetensorsFile& file, const std::string& source) {
  FixtureSpec s = spec_from_metadata(file.metadata, source);
  s.cu_seqlens = read_cu_seqlens(file, source, s.B, s.T);
  try {
    s.validate();
  } catch (const InputError& e) {
    throw InputError(
        fmt::format("{}: the spec its metadata gives is refused: {}", source, e.what()));
  }
  return s;
}

std::vector<CanonicalFixture> canonical_fixtures() {
  std::vector<CanonicalFixture> out;
  // Name: t<T>-c<chunk>, then -k<K>[v<V>] when the widths are not the chunk's
  // usual (K=V=64 at chunk 64, K=V=8 below), -b<B>h<H> when not B1 H2, the
  // regime unless default, -h0zero when h0 is zero outside the edge regime,
  // -domask under a loss mask, -bf16 for bf16 inputs.
  auto add = [&](Op op, int T, int K, int V, int chunk, Regime regime, DType dtype, bool zero_h0,
                 int B = 1, int H = 2, bool masked_do = false) {
    FixtureSpec s;
    s.op = op;
    s.B = B;
    s.H = H;
    s.T = T;
    s.K = K;
    s.V = V;
    s.chunk = chunk;
    s.regime = regime;
    s.dtype = dtype;
    s.seed = 0;
    s.zero_h0 = zero_h0;
    s.masked_do = masked_do;
    std::string name = fmt::format("t{}-c{}", T, chunk);
    const int usual = chunk == 64 ? 64 : 8;
    if (K != V)
      name += fmt::format("-k{}v{}", K, V);
    else if (K != usual)
      name += fmt::format("-k{}", K);
    if (B != 1 || H != 2) name += fmt::format("-b{}h{}", B, H);
    if (regime != Regime::default_) name += "-" + std::string(regime_name(regime));
    if (zero_h0) name += "-h0zero";
    if (masked_do) name += "-domask";
    if (dtype == DType::BF16) name += "-bf16";
    out.push_back({std::string(op_name(op)) + "/" + name + ".safetensors", s});
  };
  const DType f32 = DType::F32;
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    for (int T : {16, 32, 40, 256}) add(op, T, 8, 8, 16, Regime::default_, f32, false);
    for (int T : {64, 192, 200}) add(op, T, 64, 64, 64, Regime::default_, f32, false);
    for (Regime regime : {Regime::mild, Regime::stress, Regime::edge})
      add(op, 32, 8, 8, 16, regime, f32, false);
    add(op, 32, 8, 8, 16, Regime::default_, DType::BF16, false);
    // long memory, so dht -> dh0 survives decay (issue 10): one chunk, and
    // three with a partial tail; with t32-c16-mild, three fixtures carry it
    for (int T : {16, 40}) add(op, T, 8, 8, 16, Regime::mild, f32, false);
  }
  // The coverage matrix (oracle/coverage.hpp, issue 11): with the fixtures
  // above, these fill every declared cell — each triple regime x tail x chunk
  // (chosen first, with the op taking turns and more than one chunk where a
  // tail can follow a carried state), then the pairs still empty (K=V=64 at
  // one or two rows: the cheapest way to pair the wide kernels with every
  // regime and chunk). Chosen greedily for the most empty cells per byte.
  struct Cell {
    Op op;
    int T, K, V, chunk;
    Regime regime;
    bool zero_h0;
  };
  const Regime d = Regime::default_, m = Regime::mild, s = Regime::stress, e = Regime::edge;
  const Op gdn2 = Op::gdn2, kda = Op::kda, gdn = Op::gdn;
  const Cell cells[] = {
      // chunk 16
      {gdn, 28, 8, 16, 16, d, false},
      {kda, 49, 16, 8, 16, d, true},
      {gdn2, 12, 8, 16, 16, e, false},
      {gdn, 17, 64, 64, 16, e, false},
      {kda, 60, 8, 8, 16, m, false},
      {gdn2, 17, 8, 8, 16, m, false},
      {gdn, 60, 8, 16, 16, s, false},
      {kda, 1, 64, 64, 16, s, false},
      // chunk 32
      {gdn, 56, 8, 8, 32, d, false},
      {kda, 33, 16, 8, 32, d, false},
      {gdn2, 128, 8, 8, 32, d, false},
      {gdn, 120, 8, 8, 32, e, false},
      {gdn2, 33, 8, 8, 32, e, false},
      {gdn, 96, 16, 8, 32, e, false},
      {kda, 56, 8, 16, 32, m, false},
      {gdn2, 1, 64, 64, 32, m, false},
      {gdn, 96, 8, 8, 32, m, false},
      {kda, 56, 8, 8, 32, s, false},
      {gdn2, 33, 8, 8, 32, s, false},
      {kda, 96, 8, 8, 32, s, false},  // gdn: its scalar g at token 32 (seed 0) kills the carry
      // chunk 64
      {kda, 112, 8, 8, 64, d, false},
      {gdn, 65, 16, 8, 64, d, false},
      {kda, 112, 8, 8, 64, e, false},
      {gdn2, 65, 8, 8, 64, e, false},
      {gdn, 192, 8, 8, 64, e, false},
      {kda, 112, 8, 8, 64, m, false},
      {gdn2, 65, 8, 8, 64, m, false},
      {gdn, 192, 8, 8, 64, m, false},
      {kda, 112, 8, 8, 64, s, false},
      {gdn2, 65, 8, 8, 64, s, false},
      {gdn, 192, 8, 8, 64, s, false},
      // pairs left empty by the triples
      {gdn, 17, 8, 8, 16, m, true},  // (at T1, h0 = 0 leaves gdn's dg exactly 0)
      {gdn, 17, 8, 8, 16, s, true},
      {gdn, 12, 64, 64, 16, d, true},
  };
  for (const Cell& c : cells) add(c.op, c.T, c.K, c.V, c.chunk, c.regime, f32, c.zero_h0);
  // Batch/head independence beyond B1 H2 (issue 11): two sequences of three
  // heads, so a head index taken modulo 2 or a batch offset dropped shows.
  for (Op op : {Op::gdn2, Op::kda, Op::gdn})
    add(op, 40, 8, 8, 16, Regime::default_, f32, false, 2, 3);
  // A loss mask (issue 16): dO zero at every third token, so that work a
  // kernel skips where dO vanishes is checked (docs/MUTATION.md, CPU m329:
  // no fixture without it held a zero row of dO).
  for (Op op : {Op::gdn2, Op::kda}) add(op, 40, 8, 8, 16, Regime::default_, f32, false, 1, 2, true);
  // Packed sequences and grouped value heads (issue 14, docs/VARLEN.md): the
  // names start varlen- (packed) and hv<G>- (HV = G H). A packed set's
  // lengths hit every case at its chunk C: 1 token, under a chunk, a chunk
  // exactly, a chunk plus one, two chunks, over four chunks with a tail.
  auto add_packed = [&](Op op, int chunk, int K, int group, int T = 0) {
    FixtureSpec s;
    s.op = op;
    s.H = 2;
    s.HV = group > 1 ? 2 * group : 0;
    s.K = s.V = K;
    s.chunk = chunk;
    s.seed = 0;
    std::string name = group > 1 ? fmt::format("hv{}-", group) : "";
    if (T == 0) {
      const int C = chunk;
      s.cu_seqlens = {0};
      for (int length : {1, C / 2 - 1, C, C + 1, 2 * C, 4 * C + 3})
        s.cu_seqlens.push_back(s.cu_seqlens.back() + length);
      s.T = static_cast<int>(s.cu_seqlens.back());
      name = "varlen-" + name + fmt::format("c{}", chunk);
    } else {
      s.T = T;
      name += fmt::format("t{}-c{}", T, chunk);
    }
    if (K != (chunk == 64 ? 64 : 8)) name += fmt::format("-k{}", K);
    out.push_back({std::string(op_name(op)) + "/" + name + ".safetensors", s});
  };
  add_packed(Op::gdn2, 16, 8, 1);
  add_packed(Op::kda, 64, 16, 1);
  add_packed(Op::kda, 64, 8, 2, 65);
  add_packed(Op::gdn, 16, 8, 4, 40);
  add_packed(Op::kda, 32, 8, 2);
  return out;
}

}  // namespace deltaproof::oracle

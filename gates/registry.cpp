// gates/registry.cpp — the gate families, their bars and evidence, and the
// gate list built from the committed fixtures.
#include "gates/registry.hpp"

#include <fstream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace deltaproof::gates {

// Evidence: tests/kernels/fixtures_test.cpp prints every fixture x term; the
// worst clean figures over the 39 committed fixtures are quoted here.
namespace bars {
// cpu-recurrent, f32 token by token
// (bwd: the mild fixtures of issue 10 raised the worst from 4.4e-7, gdn2/t200-c64 dg)
constexpr PhaseBars recurrent{{5e-6, 2.9e-7, "kda/t192-c64 o"},
                              {5e-6, 4.6e-7, "kda/t40-c16-mild dk"}};
// cpu-chunk, f32 WY chunks. Clean: the worst term over the 39 fixtures
// (`gate run '*.cpu-chunk.*'`). Fault: over every catalog fault switched on
// alone, the smallest error of a red gate: the fault that comes closest to the
// bar (`falsify run`, then `report show --all-gates`: the separation table).
constexpr PhaseBars chunk{
    {3e-5, 3.0e-6, "kda/t64-c64 ht", 1.0e-2, "state-not-carried: gdn/t32-c16-stress"},
    {5e-5, 8.1e-6, "kda/t64-c64 dg", 3.3e-3, "ds-not-handed-back: gdn/t32-c16-stress"}};
// The CUDA twins, f32, measured on the H200 (reports/gpu/76827d5: gates.json,
// falsify-*.json). missing-barrier-bk2 is a race: red on 27 of 33 gates in
// that run, and always caught by compute-sanitizer racecheck.
constexpr PhaseBars cuda_chunk{
    {3e-5, 3.0e-6, "kda/t64-c64 ht (H200)", 1.0e-2, "state-not-carried: gdn/t32-c16-stress (H200)"},
    {5e-5, 8.0e-6, "kda/t64-c64 dg (H200)", 1.2e-3, "missing-barrier-bk2: gdn/t200-c64 (H200)"}};
constexpr PhaseBars cuda_recurrent{{5e-6, 2.7e-7, "gdn2/t32-c16-mild o (H200)"},
                                   {5e-6, 4.2e-7, "gdn2/t32-c16-bf16 dg (H200)"}};
// External candidates (`gate check --precision`) and the bf16 tensor-core
// backend have no constant bars: each fixture's bars come from its precision
// class's noise (gates/noise.hpp). These zeros are never compared against.
constexpr PhaseBars from_noise{{0.0, -1.0, "the class's noise on each fixture"},
                               {0.0, -1.0, "the class's noise on each fixture"}};
// (gates/runner.cpp reports them as the class's error floor, never as 0)
}  // namespace bars

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"cpu-chunk",
       Precision::f32,
       bars::chunk,
       {"fwd.intra", "fwd.inter"},
       {"bwd.bk2", "bwd.bk1", "bwd.glue"}},
      {"cpu-recurrent", Precision::f32, bars::recurrent, {"recurrent.fwd"}, {"recurrent.bwd"}},
      {"cuda-chunk",
       Precision::f32,
       bars::cuda_chunk,
       {"fwd.intra", "fwd.inter"},
       {"bwd.bk2", "bwd.bk1", "bwd.glue"},
       true,
       0,
       false},  // packed: a padded dense batch (kernels/cuda/backends.cu)
      {"cuda-recurrent",
       Precision::f32,
       bars::cuda_recurrent,
       {"recurrent.fwd"},
       {"recurrent.bwd"},
       true},
      {"cuda-tc",
       Precision::bf16,
       bars::from_noise,
       {"fwd.intra", "fwd.inter", "fwd.output"},
       {"bwd.bk2", "bwd.bk1", "bwd.glue"},
       true,
       64},
  };
  return all;
}

std::vector<std::string> Gate::required_stages() const {
  std::vector<std::string> stages = family->fwd_stages;
  if (phase == kernels::Phase::bwd)
    stages.insert(stages.end(), family->bwd_stages.begin(), family->bwd_stages.end());
  return stages;
}

namespace {

// "gdn2/t32-c16-mild.safetensors" -> "t32-c16-mild"
std::string fixture_id(const std::string& file) {
  std::string stem = std::filesystem::path(file).stem().string();
  return stem;
}

}  // namespace

std::vector<Gate> all_gates(const std::filesystem::path& fixtures_dir) {
  const auto manifest_path = fixtures_dir / "manifest.json";
  std::ifstream in(manifest_path);
  if (!in)
    throw InputError(
        fmt::format("{} cannot be read; gates are built from the committed fixtures "
                    "(pass --fixtures DIR).",
                    manifest_path.string()));
  nlohmann::json manifest;
  try {
    manifest = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{} is not valid JSON: {}", manifest_path.string(), e.what()));
  }
  std::map<std::string, int> chunk_of;  // fixture file -> its chunk size
  for (const auto& entry : manifest.at("fixtures"))
    chunk_of[entry.at("file").get<std::string>()] = entry.at("spec").at("chunk").get<int>();
  std::vector<Gate> gates;
  for (const Family& family : families()) {
    for (const auto& entry : manifest.at("fixtures")) {
      const std::string file = entry.at("file");
      const auto op = parse_op(entry.at("spec").at("op").get<std::string>());
      if (!op) throw InputError(fmt::format("{}: unknown op in {}", manifest_path.string(), file));
      if (family.only_chunk && entry.at("spec").at("chunk").get<int>() != family.only_chunk)
        continue;
      for (kernels::Phase phase : {kernels::Phase::fwd, kernels::Phase::bwd}) {
        gates.push_back({fmt::format("{}.{}.{}.{}", op_name(*op), family.backend, fixture_id(file),
                                     kernels::phase_name(phase)),
                         GateKind::oracle, *op, &family, file, phase});
      }
    }
    // metamorphic gates (issue 11 spreads them over the coverage matrix):
    // each relation on the multi-chunk fixture with a partial last chunk;
    // causality also on a stress fixture per op, at another chunk size, whose
    // partial tail is one row (gdn2) or longer than half a chunk (kda, gdn);
    // split-call at every chunk size per op; batch-head on two sequences of
    // three heads
    auto metamorphic = [&](Op op, const std::string& id, GateKind kind) {
      // a fixture of another chunk size than the family's only one is left out
      // a gate whose fixture the folder lacks is not built (the production
      // set holds none of these)
      const std::string file = fmt::format("{}/{}.safetensors", op_name(op), id);
      const auto chunk = chunk_of.find(file);
      if (chunk == chunk_of.end()) return;
      if (family.only_chunk && chunk->second != family.only_chunk) return;
      gates.push_back({fmt::format("{}.{}.{}.{}", op_name(op), family.backend, id, kind_name(kind)),
                       kind, op, &family, file, kernels::Phase::bwd});
    };
    for (Op op : {Op::gdn2, Op::kda, Op::gdn})
      for (GateKind kind : {GateKind::causality, GateKind::split_call, GateKind::batch_head})
        metamorphic(op, "t40-c16", kind);
    metamorphic(Op::gdn2, "t33-c32-stress", GateKind::causality);
    metamorphic(Op::kda, "t112-c64-k8-stress", GateKind::causality);
    metamorphic(Op::gdn, "t60-c16-k8v16-stress", GateKind::causality);
    for (Op op : {Op::gdn2, Op::kda, Op::gdn})  // chunk 64 at K=V=64, a tail of 8 rows
      metamorphic(op, "t200-c64", GateKind::causality);
    for (const auto& [op, id] : {std::pair{Op::gdn2, "t128-c32"},
                                 {Op::kda, "t56-c32-stress"},
                                 {Op::gdn, "t56-c32"},
                                 {Op::gdn2, "t65-c64-k8-mild"},
                                 {Op::kda, "t112-c64-k8"},
                                 {Op::gdn, "t65-c64-k16v8"}})
      metamorphic(op, id, GateKind::split_call);
    for (Op op : {Op::gdn2, Op::kda, Op::gdn})
      metamorphic(op, "t40-c16-b2h3", GateKind::batch_head);
    // packed sequences and grouped value heads (issue 14, docs/VARLEN.md), on
    // every family (the CUDA ones run them as a padded dense batch):
    // isolation and packing on every packed set, causality at each
    // sequence's points, batch-head over sequences and value heads
    for (const auto& [op, id] : {std::pair{Op::gdn2, "varlen-c16"},
                                 {Op::kda, "varlen-c64-k16"},
                                 {Op::kda, "varlen-hv2-c32"}})
      for (GateKind kind :
           {GateKind::isolation, GateKind::packing, GateKind::causality, GateKind::batch_head})
        metamorphic(op, id, kind);
    for (const auto& [op, id] : {std::pair{Op::kda, "hv2-t65-c64-k8"}, {Op::gdn, "hv4-t40-c16"}})
      for (GateKind kind : {GateKind::batch_head, GateKind::split_call, GateKind::causality})
        metamorphic(op, id, kind);
  }
  return gates;
}

bool glob_match(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<Gate> select_gates(const std::vector<Gate>& gates,
                               const std::vector<std::string>& globs) {
  std::vector<Gate> out;
  for (const auto& pattern : globs) {
    bool matched = false;
    for (const auto& gate : gates)
      if (glob_match(pattern, gate.name)) {
        matched = true;
        bool already = false;
        for (const auto& o : out) already = already || o.name == gate.name;
        if (!already) out.push_back(gate);
      }
    if (!matched)
      throw InputError(
          fmt::format("no gate matches '{}'; run 'deltaproof gate list' to see them.", pattern));
  }
  return out;
}

}  // namespace deltaproof::gates

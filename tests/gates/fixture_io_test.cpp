// tests/gates/fixture_io_test.cpp — the file layer between fixtures and
// kernels (gates/fixture_io): which op a file holds, the shape and settings a
// kernel job gets from it, the f32 cast of its values, every refusal (each one
// checked to name the file, the tensor and the problem), the candidate file a
// backend's outputs become, and a round trip through a committed fixture.
// Run: ctest --test-dir build -L unit -R FixtureIo
#include "gates/fixture_io.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <initializer_list>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/safetensors.hpp"
#include "oracle/fixture.hpp"

namespace deltaproof::gates {
namespace {

using kernels::KernelShape;
using kernels::Phase;

constexpr std::string_view kSource = "fixtures/in_memory.safetensors";

// Distinct sizes, so a swapped dimension shows.
constexpr int kB = 2, kT = 5, kH = 3, kK = 4, kV = 6;

// A tensor of `shape` holding value(i) = offset + i / 64 (exact in f64, and
// distinct per tensor through `offset`).
Tensor ramp(const Shape& shape, double offset, DType dtype = DType::F64) {
  std::vector<double> values(static_cast<std::size_t>(shape_numel(shape)));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = offset + static_cast<double>(i) / 64;
  return Tensor::from_f64(dtype, shape, values);
}

// The inputs and cotangents of `op` in FLA layout, spelled out here rather
// than taken from the code under test; no metadata.
SafetensorsFile inputs_of(Op op, int B = kB, int T = kT, int H = kH, int K = kK, int V = kV) {
  const Shape keys = {B, T, H, K}, values = {B, T, H, V}, per_token = {B, T, H},
              state = {B, H, K, V};
  SafetensorsFile file;
  file.tensors["q"] = ramp(keys, 0.1);
  file.tensors["k"] = ramp(keys, 0.2);
  file.tensors["v"] = ramp(values, 0.3);
  file.tensors["g"] = ramp(op == Op::gdn ? per_token : keys, -0.4);
  if (op == Op::gdn2) {
    file.tensors["b"] = ramp(keys, 0.5);
    file.tensors["w"] = ramp(values, 0.6);
  } else {
    file.tensors["beta"] = ramp(per_token, 0.7);
  }
  file.tensors["h0"] = ramp(state, 0.8);
  file.tensors["do"] = ramp(values, 0.9);
  file.tensors["dht"] = ramp(state, 1.0);
  return file;
}

// Replaces element `flat` of tensor `name` with `value`.
void poison(SafetensorsFile& file, const std::string& name, std::size_t flat, double value) {
  const Tensor& old = file.tensors.at(name);
  std::vector<double> values = old.to_f64();
  values.at(flat) = value;
  file.tensors[name] = Tensor::from_f64(old.dtype(), old.shape(), values);
}

// Expects `call` to throw an InputError whose message holds every fragment.
void expect_input_error(const std::function<void()>& call,
                        std::initializer_list<std::string_view> fragments) {
  try {
    call();
    ADD_FAILURE() << "no error; expected an InputError holding: " << *fragments.begin();
  } catch (const InputError& error) {
    const std::string message = error.what();
    for (std::string_view fragment : fragments)
      EXPECT_NE(message.find(fragment), std::string::npos)
          << "expected '" << fragment << "' in: " << message;
  }
}

KernelJob job_of(const SafetensorsFile& file, Phase phase = Phase::bwd, int chunk = 0) {
  return job_from_file(file, std::string(kSource), phase, chunk);
}

// --- which op ---------------------------------------------------------------

TEST(FixtureIoOp, InfersGdn2FromBAndW) {
  EXPECT_EQ(job_of(inputs_of(Op::gdn2)).shape.op, Op::gdn2);
}

TEST(FixtureIoOp, InfersGdnFromBetaAndThreeDimensionalG) {
  EXPECT_EQ(job_of(inputs_of(Op::gdn)).shape.op, Op::gdn);
}

TEST(FixtureIoOp, InfersKdaFromBetaAndFourDimensionalG) {
  EXPECT_EQ(job_of(inputs_of(Op::kda)).shape.op, Op::kda);
}

TEST(FixtureIoOp, EitherBOrWAloneMeansGdn2) {
  SafetensorsFile only_w = inputs_of(Op::gdn2);
  only_w.tensors.erase("b");
  expect_input_error([&] { job_of(only_w); },
                     {kSource, "tensor 'b' is missing", "gdn2", "q k v g b w h0 do dht"});
  SafetensorsFile only_b = inputs_of(Op::gdn2);
  only_b.tensors.erase("w");
  expect_input_error([&] { job_of(only_b); },
                     {kSource, "tensor 'w' is missing", "gdn2", "q k v g b w h0 do dht"});
}

TEST(FixtureIoOp, MetadataOpWinsOverTheTensors) {
  SafetensorsFile file = inputs_of(Op::kda);
  file.metadata["op"] = "kda";
  EXPECT_EQ(job_of(file).shape.op, Op::kda);
  // kda tensors declared gdn: gdn's g is [B, T, H], so the 4-D g is refused.
  file.metadata["op"] = "gdn";
  expect_input_error([&] { job_of(file); }, {kSource, "tensor 'g'", "must be [2, 5, 3]"});
  // declared gdn2: gdn2 needs b and w.
  file.metadata["op"] = "gdn2";
  expect_input_error([&] { job_of(file); }, {kSource, "tensor 'b' is missing", "gdn2"});
}

TEST(FixtureIoOp, UnknownMetadataOpIsRefused) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  file.metadata["op"] = "gdn3";
  expect_input_error([&] { job_of(file); }, {kSource, "'op' is 'gdn3'", "gdn2, kda or gdn"});
}

TEST(FixtureIoOp, NoOpTensorsAndNoMetadataIsRefused) {
  SafetensorsFile file = inputs_of(Op::kda);
  file.tensors.erase("beta");
  expect_input_error([&] { job_of(file); }, {kSource, "cannot tell the op", "b/w", "beta"});
}

TEST(FixtureIoOp, BetaWithoutGNamesTheMissingG) {
  SafetensorsFile file = inputs_of(Op::kda);
  file.tensors.erase("g");
  expect_input_error([&] { job_of(file); }, {kSource, "tensor 'g' is missing", "beta"});
}

// --- shape, scale, chunk ----------------------------------------------------

TEST(FixtureIoShape, DerivesBTHKFromQAndVFromV) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const KernelShape s = job_of(inputs_of(op)).shape;
    EXPECT_EQ(s.B, kB) << op_name(op);
    EXPECT_EQ(s.T, kT) << op_name(op);
    EXPECT_EQ(s.H, kH) << op_name(op);
    EXPECT_EQ(s.K, kK) << op_name(op);
    EXPECT_EQ(s.V, kV) << op_name(op);
  }
}

TEST(FixtureIoShape, ScaleDefaultsToKToTheMinusHalf) {
  EXPECT_FLOAT_EQ(job_of(inputs_of(Op::gdn2)).shape.scale, 0.5f);  // K = 4
  const KernelShape s = job_of(inputs_of(Op::kda, 1, 3, 1, 8, 2)).shape;
  EXPECT_FLOAT_EQ(s.scale, static_cast<float>(1.0 / std::sqrt(8.0)));
}

TEST(FixtureIoShape, ScaleComesFromMetadataWhenPresent) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  file.metadata["scale"] = "0.125";
  EXPECT_EQ(job_of(file).shape.scale, 0.125f);
}

TEST(FixtureIoShape, MalformedScaleMetadataIsRefused) {
  for (const char* bad : {"banana", "0.5x", "nan", "inf", ""}) {
    SafetensorsFile file = inputs_of(Op::gdn2);
    file.metadata["scale"] = bad;
    expect_input_error([&] { job_of(file); }, {kSource, "metadata 'scale'"});
  }
}

TEST(FixtureIoShape, ChunkIsTheArgumentElseMetadataElse64) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  EXPECT_EQ(job_of(file).shape.chunk, 64);
  file.metadata["chunk"] = "16";
  EXPECT_EQ(job_of(file).shape.chunk, 16);
  EXPECT_EQ(job_of(file, Phase::bwd, 32).shape.chunk, 32);
  file.metadata.erase("chunk");
  EXPECT_EQ(job_of(file, Phase::fwd, 16).shape.chunk, 16);
}

TEST(FixtureIoShape, UnsupportedChunkIsRefused) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  expect_input_error([&] { job_of(file, Phase::bwd, 48); },
                     {kSource, "chunk size 48 is not supported", "16, 32 or 64"});
  file.metadata["chunk"] = "8";
  expect_input_error([&] { job_of(file); },
                     {kSource, "chunk size 8 is not supported", "16, 32 or 64"});
  // a supported argument overrides an unsupported metadata chunk
  EXPECT_EQ(job_of(file, Phase::bwd, 16).shape.chunk, 16);
}

TEST(FixtureIoShape, MalformedChunkMetadataIsRefused) {
  for (const char* bad : {"sixteen", "16abc", "", "1e9"}) {
    SafetensorsFile file = inputs_of(Op::gdn2);
    file.metadata["chunk"] = bad;
    expect_input_error([&] { job_of(file); }, {kSource, "metadata 'chunk'"});
  }
}

// --- values -----------------------------------------------------------------

TEST(FixtureIoValues, EveryInputIsCastToF32InFileOrder) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  poison(file, "v", 7, 1.0 / 3.0);  // not exact in f32: the cast must round it
  const KernelJob job = job_of(file);
  std::set<std::string> names;
  for (const auto& [name, buffer] : job.inputs) {
    names.insert(name);
    const std::vector<double> values = file.tensors.at(name).to_f64();
    ASSERT_EQ(buffer.size(), values.size()) << name;
    for (std::size_t i = 0; i < values.size(); ++i)
      ASSERT_EQ(buffer[i], static_cast<float>(values[i])) << name << " at " << i;
  }
  EXPECT_EQ(names, (std::set<std::string>{"b", "dht", "do", "g", "h0", "k", "q", "v", "w"}));
  EXPECT_EQ(job.inputs.at("v")[7], static_cast<float>(1.0 / 3.0));
}

TEST(FixtureIoValues, NarrowStorageDtypesAreRead) {
  SafetensorsFile file = inputs_of(Op::kda);
  file.tensors["q"] = ramp({kB, kT, kH, kK}, 0.1, DType::BF16);
  file.tensors["k"] = ramp({kB, kT, kH, kK}, 0.2, DType::F32);
  const KernelJob job = job_of(file);
  const std::vector<double> q = file.tensors.at("q").to_f64();
  for (std::size_t i = 0; i < q.size(); ++i) ASSERT_EQ(job.inputs.at("q")[i], q[i]);
  EXPECT_EQ(job.inputs.at("k")[3], static_cast<float>(0.2 + 3.0 / 64));
}

TEST(FixtureIoValues, NanIsRefusedWithItsIndex) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  // g is [2, 5, 3, 4]; flat 1 * 60 + 2 * 12 + 1 * 4 + 3 = 91 is [1, 2, 1, 3]
  poison(file, "g", 91, std::numeric_limits<double>::quiet_NaN());
  expect_input_error([&] { job_of(file); },
                     {kSource, "tensor 'g'", "a NaN at index [1, 2, 1, 3]", "finite"});
}

TEST(FixtureIoValues, InfIsRefusedWithItsIndex) {
  SafetensorsFile file = inputs_of(Op::kda);
  poison(file, "beta", 29, -std::numeric_limits<double>::infinity());  // [2,5,3]: [1, 4, 2]
  expect_input_error([&] { job_of(file); },
                     {kSource, "tensor 'beta'", "an inf at index [1, 4, 2]"});
  SafetensorsFile gdn = inputs_of(Op::gdn);
  poison(gdn, "q", 0, std::numeric_limits<double>::infinity());
  expect_input_error([&] { job_of(gdn); }, {kSource, "tensor 'q'", "an inf at index [0, 0, 0, 0]"});
}

// --- refusals of names and shapes -------------------------------------------

TEST(FixtureIoRefusal, EachMissingTensorIsNamedWithWhatTheOpNeeds) {
  for (Op op : {Op::gdn2, Op::kda, Op::gdn}) {
    const std::string needed = op == Op::gdn2 ? "q k v g b w h0 do dht" : "q k v g beta h0 do dht";
    for (const std::string name : {"q", "k", "v", "h0", "do", "dht"}) {
      SafetensorsFile file = inputs_of(op);
      file.metadata["op"] = std::string(op_name(op));
      file.tensors.erase(name);
      SCOPED_TRACE(std::string(op_name(op)) + " without " + name);
      expect_input_error([&] { job_of(file); },
                         {kSource, "tensor '" + name + "' is missing",
                          "a " + std::string(op_name(op)) + " kernel needs " + needed});
    }
  }
}

TEST(FixtureIoRefusal, WrongShapeGivesTheExpectedShape) {
  struct Case {
    Op op;
    std::string name;
    Shape wrong;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {Op::gdn2, "v", {kB, kT - 1, kH, kV}, "must be [2, 5, 3, 6]"},
      {Op::gdn2, "k", {kB, kT, kH, kK + 1}, "must be [2, 5, 3, 4]"},
      {Op::gdn2, "w", {kB, kT, kH, kK}, "must be [2, 5, 3, 6]"},
      {Op::gdn2, "h0", {kB, kH, kV, kK}, "must be [2, 3, 4, 6]"},
      {Op::kda, "beta", {kB, kT, kH, 1}, "must be [2, 5, 3]"},
      {Op::gdn, "dht", {kB, kH, kK}, "must be [2, 3, 4, 6]"},
      {Op::kda, "do", {kB, kT, kH, kK}, "must be [2, 5, 3, 6]"},
  };
  for (const Case& c : cases) {
    SafetensorsFile file = inputs_of(c.op);
    file.tensors[c.name] = ramp(c.wrong, 0.0);
    SCOPED_TRACE(std::string(op_name(c.op)) + " " + c.name);
    expect_input_error([&] { job_of(file); },
                       {kSource, "tensor '" + c.name + "' has shape " + shape_string(c.wrong),
                        "B=2 T=5 H=3 K=4 V=6", c.expected});
  }
}

TEST(FixtureIoRefusal, QMustBeFourDimensional) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  file.tensors["q"] = ramp({kB, kT, kH * kK}, 0.1);
  expect_input_error([&] { job_of(file); },
                     {kSource, "tensor 'q' has shape [2, 5, 12]", "[B, T, H, K]"});
}

TEST(FixtureIoRefusal, VMustBeFourDimensional) {
  SafetensorsFile file = inputs_of(Op::kda);
  file.tensors["v"] = ramp({kB, kT, kH}, 0.1);
  expect_input_error([&] { job_of(file); },
                     {kSource, "tensor 'v' has shape [2, 5, 3]", "[B, T, H, V]"});
}

TEST(FixtureIoRefusal, EmptyDimensionIsRefused) {
  SafetensorsFile file = inputs_of(Op::gdn2, 1, 0, 2, 4, 4);
  expect_input_error([&] { job_of(file); }, {kSource, "tensor 'q'", "empty dimension"});
}

// --- phases -----------------------------------------------------------------

TEST(FixtureIoPhase, ForwardNeedsNoCotangents) {
  SafetensorsFile file = inputs_of(Op::kda);
  file.tensors.erase("do");
  file.tensors.erase("dht");
  const KernelJob job = job_of(file, Phase::fwd);
  EXPECT_EQ(job.inputs.count("do"), 0u);
  EXPECT_EQ(job.inputs.count("dht"), 0u);
  EXPECT_EQ(job.inputs.count("beta"), 1u);
  expect_input_error([&] { job_of(file, Phase::bwd); }, {kSource, "tensor 'do' is missing"});
}

TEST(FixtureIoPhase, ForwardStillChecksEveryInput) {
  SafetensorsFile file = inputs_of(Op::gdn2);
  file.tensors.erase("w");
  expect_input_error([&] { job_of(file, Phase::fwd); }, {kSource, "tensor 'w' is missing"});
}

// --- the candidate file -----------------------------------------------------

kernels::Buffers numbered_outputs(const KernelShape& s, Phase phase) {
  kernels::Buffers outputs = kernels::allocate_outputs(s, phase, 0.0f);
  float next = 0.0f;
  for (auto& [name, buffer] : outputs)
    for (float& x : buffer) x = (next += 0.25f);
  return outputs;
}

KernelShape shape_of(Op op) {
  KernelShape s;
  s.op = op;
  s.B = kB, s.T = kT, s.H = kH, s.K = kK, s.V = kV;
  s.chunk = 32;
  return s;
}

TEST(FixtureIoCandidate, HoldsExactlyTheOutputsAsF32InFlaShapes) {
  const std::map<std::string, Shape> want_gdn2 = {
      {"o", {kB, kT, kH, kV}},  {"ht", {kB, kH, kK, kV}}, {"dq", {kB, kT, kH, kK}},
      {"dk", {kB, kT, kH, kK}}, {"dv", {kB, kT, kH, kV}}, {"dg", {kB, kT, kH, kK}},
      {"db", {kB, kT, kH, kK}}, {"dw", {kB, kT, kH, kV}}, {"dh0", {kB, kH, kK, kV}}};
  const std::map<std::string, Shape> want_gdn = {
      {"o", {kB, kT, kH, kV}},  {"ht", {kB, kH, kK, kV}}, {"dq", {kB, kT, kH, kK}},
      {"dk", {kB, kT, kH, kK}}, {"dv", {kB, kT, kH, kV}}, {"dg", {kB, kT, kH}},
      {"dbeta", {kB, kT, kH}},  {"dh0", {kB, kH, kK, kV}}};
  for (const auto& [op, want] : {std::pair{Op::gdn2, want_gdn2}, std::pair{Op::gdn, want_gdn}}) {
    SCOPED_TRACE(op_name(op));
    const KernelShape s = shape_of(op);
    const kernels::Buffers outputs = numbered_outputs(s, Phase::bwd);
    const SafetensorsFile file =
        candidate_file(s, Phase::bwd, outputs, {}, "cpu-chunk", "fixtures/x.safetensors");
    std::set<std::string> names;
    for (const auto& [name, tensor] : file.tensors) {
      names.insert(name);
      EXPECT_EQ(tensor.dtype(), DType::F32) << name;
      ASSERT_TRUE(want.count(name)) << "unexpected tensor " << name;
      EXPECT_EQ(tensor.shape(), want.at(name)) << name;
      const std::vector<double> values = tensor.to_f64();
      ASSERT_EQ(values.size(), outputs.at(name).size()) << name;
      for (std::size_t i = 0; i < values.size(); ++i)
        ASSERT_EQ(values[i], outputs.at(name)[i]) << name << " at " << i;
    }
    const std::vector<std::string> expected = kernels::kernel_output_names(op, Phase::bwd);
    EXPECT_EQ(names, std::set<std::string>(expected.begin(), expected.end()));
    EXPECT_EQ(names.size(), want.size());
  }
}

TEST(FixtureIoCandidate, ForwardHoldsOnlyOAndHt) {
  const KernelShape s = shape_of(Op::kda);
  const SafetensorsFile file = candidate_file(s, Phase::fwd, numbered_outputs(s, Phase::fwd), {},
                                              "cpu-recurrent", "a.safetensors");
  std::set<std::string> names;
  for (const auto& [name, tensor] : file.tensors) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"o", "ht"}));
  EXPECT_EQ(file.metadata.at("phase"), "fwd");
}

TEST(FixtureIoCandidate, MetadataNamesBackendPhaseAndExecutionRecord) {
  const KernelShape s = shape_of(Op::kda);
  kernels::ExecutionRecord record;
  record.note("fwd.intra", 3);
  record.note("bwd.bk1");
  const SafetensorsFile file = candidate_file(s, Phase::bwd, numbered_outputs(s, Phase::bwd),
                                              record, "cpu-chunk", "fixtures/kda/t.safetensors");
  EXPECT_EQ(file.metadata.at("backend"), "cpu-chunk");
  EXPECT_EQ(file.metadata.at("phase"), "bwd");
  EXPECT_EQ(file.metadata.at("op"), "kda");
  EXPECT_EQ(file.metadata.at("chunk"), "32");
  EXPECT_EQ(file.metadata.at("fixture"), "fixtures/kda/t.safetensors");
  const nlohmann::json stages = nlohmann::json::parse(file.metadata.at("execution_record"));
  EXPECT_EQ(stages, (nlohmann::json{{"fwd.intra", 3}, {"bwd.bk1", 1}}));
  // and it survives the writer and the strict reader unchanged
  const std::vector<std::byte> image = serialize_safetensors(file);
  const SafetensorsFile back = parse_safetensors(image, "candidate");
  EXPECT_EQ(back.metadata, file.metadata);
  EXPECT_EQ(back.tensors, file.tensors);
}

// --- a committed fixture ----------------------------------------------------

const std::string kFixtures = std::string(DELTAPROOF_SOURCE_DIR) + "/fixtures";

TEST(FixtureIoCommitted, Gdn2FixtureRoundTrips) {
  const std::string path = kFixtures + "/gdn2/t32-c16.safetensors";
  const SafetensorsFile fixture = read_safetensors(path);
  const KernelJob job = job_from_file(fixture, path, Phase::bwd, 0);
  const KernelShape& s = job.shape;
  EXPECT_EQ(s.op, Op::gdn2);
  EXPECT_EQ(s.B, 1);
  EXPECT_EQ(s.T, 32);
  EXPECT_EQ(s.H, 2);
  EXPECT_EQ(s.K, 8);
  EXPECT_EQ(s.V, 8);
  EXPECT_EQ(s.chunk, 16);
  EXPECT_FLOAT_EQ(s.scale, static_cast<float>(1.0 / std::sqrt(8.0)));
  EXPECT_EQ(job.inputs.size(), 9u);
  const std::vector<double> g = fixture.tensors.at("g").to_f64();
  ASSERT_EQ(job.inputs.at("g").size(), g.size());
  for (std::size_t i = 0; i < g.size(); ++i) ASSERT_EQ(job.inputs.at("g")[i], g[i]);  // f32-exact
}

TEST(FixtureIoCommitted, InputsAloneGiveTheSameJobWithChunk64) {
  for (const char* name :
       {"/gdn2/t32-c16.safetensors", "/kda/t40-c16.safetensors", "/gdn/t40-c16.safetensors"}) {
    SCOPED_TRACE(name);
    const SafetensorsFile fixture = read_safetensors(kFixtures + name);
    const KernelJob full = job_from_file(fixture, name, Phase::bwd, 0);
    SafetensorsFile bare;  // no metadata, no reference outputs
    for (const auto& input : kernels::kernel_input_names(full.shape.op))
      bare.tensors[input] = fixture.tensors.at(input);
    const KernelJob job = job_from_file(bare, name, Phase::bwd, 0);
    EXPECT_EQ(job.shape.op, full.shape.op);
    EXPECT_EQ(job.shape.T, full.shape.T);
    EXPECT_EQ(job.shape.chunk, 64);
    EXPECT_EQ(job.shape.scale, full.shape.scale);  // K^-1/2 both ways
    EXPECT_EQ(job.inputs, full.inputs);
  }
}

// A bf16 fixture's job says so (a backend that reads bf16 then does), and an
// input that bf16 cannot represent under a bf16 label is refused by name.
TEST(FixtureIoCommitted, ABf16FixtureMarksTheJobAndRefusesANonBf16Value) {
  const std::string name = "/gdn2/t32-c16-bf16.safetensors";
  SafetensorsFile fixture = read_safetensors(kFixtures + name);
  EXPECT_TRUE(job_from_file(fixture, name, Phase::bwd, 0).shape.bf16_inputs);
  EXPECT_FALSE(job_from_file(read_safetensors(kFixtures + "/gdn2/t32-c16.safetensors"),
                             "/gdn2/t32-c16.safetensors", Phase::bwd, 0)
                   .shape.bf16_inputs);
  std::vector<double> w = fixture.tensors.at("w").to_f64();
  w[5] = 0.1;  // not a bf16 value
  fixture.tensors["w"] = Tensor::from_f64(DType::F64, fixture.tensors.at("w").shape(), w);
  try {
    job_from_file(fixture, name, Phase::bwd, 0);
    FAIL() << "a non-bf16 value in a bf16 fixture was accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(name), std::string::npos) << what;
    EXPECT_NE(what.find("tensor 'w'"), std::string::npos) << what;
    EXPECT_NE(what.find("bf16 cannot represent"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace deltaproof::gates

namespace deltaproof::gates {
namespace {

TEST(FixtureIoPacked, APackedGroupedFixtureReadsItsPackingAndRefusesABadOne) {
  oracle::FixtureSpec spec;
  spec.op = Op::kda;
  spec.B = 1, spec.T = 20, spec.H = 2, spec.HV = 4, spec.K = 4, spec.V = 3, spec.chunk = 16;
  spec.cu_seqlens = {0, 1, 7, 20};
  oracle::GenerateOptions options;
  options.threads = 2;
  const SafetensorsFile good = oracle::generate_fixture(spec, options).file;
  const KernelJob job = job_from_file(good, "p.safetensors", Phase::bwd, 0);
  EXPECT_EQ(job.shape.H, 2);
  EXPECT_EQ(job.shape.value_heads(), 4);
  EXPECT_EQ(job.shape.cu_seqlens, spec.cu_seqlens);
  EXPECT_EQ(job.inputs.at("h0").size(), 3u * 4 * 4 * 3);  // [N, HV, K, V]
  auto refusal = [](const SafetensorsFile& f) -> std::string {
    try {
      job_from_file(f, "p.safetensors", Phase::bwd, 0);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  };
  SafetensorsFile f = good;
  f.tensors["cu_seqlens"] = Tensor::from_f64(DType::F64, {4}, std::vector<double>{0, 1, 7, 20});
  EXPECT_NE(refusal(f).find("tensor 'cu_seqlens' is F64 of shape [4]; it must be I64"),
            std::string::npos)
      << refusal(f);
  f = good;
  f.tensors["cu_seqlens"] = Tensor::from_i64({4}, std::vector<std::int64_t>{0, 7, 1, 20});
  EXPECT_NE(refusal(f).find("(0,7,1,20): it must increase strictly"), std::string::npos)
      << refusal(f);
  f = good;
  f.tensors.erase("cu_seqlens");
  EXPECT_NE(refusal(f).find("the metadata says N=3 packed sequences, but there is no tensor"),
            std::string::npos)
      << refusal(f);
  f = good;
  f.tensors["v"] = Tensor::zeros(DType::F64, {1, 20, 3, 3});
  EXPECT_NE(refusal(f).find("tensor 'v' has 3 heads and 'q' 2"), std::string::npos) << refusal(f);
  f = good;
  f.tensors["h0"] = Tensor::zeros(DType::F64, {1, 4, 4, 3});
  EXPECT_NE(
      refusal(f).find("but q, v and cu_seqlens say B=1 T=20 H=2 HV=4 K=4 V=3 N=3, so it must be "
                      "[3, 4, 4, 3]"),
      std::string::npos)
      << refusal(f);
}

}  // namespace
}  // namespace deltaproof::gates

// python/src/core.cpp — deltaproof._core, the compiled core of the Python
// package (pybind11): reads a fixture; generates one through the oracle
// (oracle::generate_fixture, what `deltaproof gen` runs); judges a candidate
// held in memory with the gates' own check (gates::check_candidate, what
// `deltaproof gate check` runs), so its report is the one the CLI writes for
// the same tensors; measures a fixture's noise model (the bars that check
// uses); and renders reports as the HTML page of `deltaproof report html`.
// Tensors cross as (safetensors dtype name, shape, little-endian bytes);
// python/deltaproof/_arrays.py makes those of numpy arrays and torch tensors.
// Built as the CMake target deltaproof_py (python/CMakeLists.txt); python/setup.py
// builds it for `pip install ./python`.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/safetensors.hpp"
#include "gates/fixture_io.hpp"
#include "gates/noise.hpp"
#include "gates/report.hpp"
#include "gates/runner.hpp"
#include "oracle/fixture.hpp"
#include "reports/html/html_report.hpp"

namespace py = pybind11;

namespace deltaproof::python {
namespace {

// (dtype name, shape, bytes): a tensor as it crosses into Python and back.
using RawTensor = std::tuple<std::string, Shape, py::bytes>;

RawTensor raw_tensor(const Tensor& tensor) {
  const auto bytes = tensor.bytes();
  return {std::string(dtype_name(tensor.dtype())), tensor.shape(),
          py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size())};
}

Tensor tensor_of(const std::string& name, const RawTensor& raw) {
  const auto& [dtype, shape, data] = raw;
  const std::string_view view = data;
  std::vector<std::byte> bytes(view.size());
  std::memcpy(bytes.data(), view.data(), view.size());
  const DType parsed = parse_dtype(dtype, fmt::format("outputs['{}']", name));
  return Tensor(parsed, shape, std::move(bytes));
}

kernels::Phase phase_of(const std::string& name) {
  if (const auto phase = find_value(kernels::kPhaseNames, name)) return *phase;
  throw InputError(fmt::format("unknown phase '{}'; pass 'fwd', 'bwd' or None.", name));
}

// A fixture's tensors and metadata, the kernel's view of its shape, and the
// names and shapes of the outputs a candidate for it holds.
py::dict read_fixture(const std::string& path) {
  const SafetensorsFile file = read_safetensors(path);
  const kernels::KernelShape shape = gates::job_from_file(file, path, kernels::Phase::bwd, 0).shape;
  py::dict tensors;
  for (const auto& [name, tensor] : file.tensors) tensors[py::str(name)] = raw_tensor(tensor);
  py::dict output_shapes;
  for (const auto& name : kernels::kernel_output_names(shape.op, kernels::Phase::bwd))
    output_shapes[py::str(name)] = gates::tensor_shape(shape, name);
  py::dict kernel_shape;
  kernel_shape["op"] = std::string(op_name(shape.op));
  kernel_shape["B"] = shape.B;
  kernel_shape["T"] = shape.T;
  kernel_shape["H"] = shape.H;
  kernel_shape["HV"] = shape.value_heads();
  kernel_shape["K"] = shape.K;
  kernel_shape["V"] = shape.V;
  kernel_shape["chunk"] = shape.chunk;
  kernel_shape["scale"] = shape.scale;
  kernel_shape["cu_seqlens"] = shape.cu_seqlens;
  py::dict result;
  result["metadata"] = file.metadata;
  result["tensors"] = tensors;
  result["shape"] = kernel_shape;
  result["inputs"] = kernels::kernel_input_names(shape.op);
  result["outputs"] =
      py::dict(py::arg("fwd") = kernels::kernel_output_names(shape.op, kernels::Phase::fwd),
               py::arg("bwd") = kernels::kernel_output_names(shape.op, kernels::Phase::bwd));
  result["output_shapes"] = output_shapes;
  return result;
}

// gates::check_candidate on tensors in memory; returns the report's text, the
// verdict, and what `gate check` prints (its table, the verdict line and reasons).
py::dict check(const std::string& fixture, const std::map<std::string, RawTensor>& outputs,
               const std::string& name, const std::optional<std::string>& backend,
               const std::string& precision_text, const std::optional<std::string>& phase_text,
               const std::string& command) {
  const auto precision = kernels::parse_precision(precision_text);
  if (!precision)
    throw InputError(
        fmt::format("unknown precision class '{}'; pass 'f32', 'tf32' or 'bf16'.", precision_text));
  std::optional<kernels::Phase> phase;
  if (phase_text) phase = phase_of(*phase_text);
  SafetensorsFile candidate;
  for (const auto& [tensor_name, raw] : outputs)
    candidate.tensors.emplace(tensor_name, tensor_of(tensor_name, raw));
  if (backend) candidate.metadata["backend"] = *backend;
  gates::GateResult result;
  std::string text;
  {
    py::gil_scoped_release released;  // the noise model runs the ensemble: seconds
    result = gates::check_candidate(fixture, candidate, name, "outputs", *precision, phase);
    text = gates::report_text({result}, command);
  }
  py::dict out;
  out["json"] = text;
  out["passed"] = result.passed();
  out["summary"] =
      gates::check_table(result) + gates::result_lines(result, result.passed() ? "PASS" : "FAIL");
  return out;
}

// A fixture's spec from the Python side's keywords, None (nullopt) taking
// FixtureSpec's default; T defaults to a packed spec's last offset, as in
// `deltaproof gen`. FixtureSpec::validate says what is wrong with a field.
oracle::FixtureSpec fixture_spec(const std::string& op, std::optional<int> B, std::optional<int> T,
                                 std::optional<int> H, std::optional<int> HV, std::optional<int> K,
                                 std::optional<int> V, std::optional<int> chunk,
                                 const std::vector<std::int64_t>& cu_seqlens,
                                 const std::string& regime, const std::string& dtype,
                                 const std::string& h0, bool do_mask, std::uint64_t seed) {
  oracle::FixtureSpec s;
  const auto parsed_op = parse_op(op);
  if (!parsed_op)
    throw InputError(fmt::format("unknown op '{}'; pass 'gdn2', 'kda' or 'gdn'.", op));
  s.op = *parsed_op;
  const auto parsed_regime = oracle::parse_regime(regime);
  if (!parsed_regime)
    throw InputError(
        fmt::format("unknown regime '{}'; pass 'default', 'mild', 'stress' or 'edge'.", regime));
  s.regime = *parsed_regime;
  const auto parsed_dtype = oracle::parse_input_dtype(dtype);
  if (!parsed_dtype)
    throw InputError(fmt::format("unknown dtype '{}'; pass 'f32' or 'bf16'.", dtype));
  s.dtype = *parsed_dtype;
  if (h0 != "drawn" && h0 != "zero")
    throw InputError(fmt::format("unknown h0 '{}'; pass 'drawn' or 'zero'.", h0));
  s.zero_h0 = h0 == "zero";
  s.masked_do = do_mask;
  s.cu_seqlens = cu_seqlens;
  if (!T && cu_seqlens.empty())
    throw InputError("T is missing; pass T=N with N >= 1 tokens (or cu_seqlens=[0, ..., T]).");
  s.T = T ? *T : static_cast<int>(cu_seqlens.back());
  s.B = B.value_or(s.B);
  s.H = H.value_or(s.H);
  s.HV = HV.value_or(s.HV);
  s.K = K.value_or(s.K);
  s.V = V.value_or(s.V);
  s.chunk = chunk.value_or(s.chunk);
  s.seed = seed;
  s.validate();
  return s;
}

// One fixture through the quad oracle, as `deltaproof gen --out` makes it: the
// inputs drawn, the reference and every self-check run (oracle::generate_fixture),
// the file written when every self-check passed, or marked unchecked and written
// when `force`. The metadata's command names the file by `file_name`, as gen's
// does, so the bytes are gen's for the same spec. Returns whether it was written,
// the self-checks (JSON text) and the first failure's sentence ("" when none).
py::dict generate(const oracle::FixtureSpec& spec, const std::string& out, bool force,
                  int threads) {
  oracle::GenerateOptions options;
  options.threads = threads;
  options.file_name = std::filesystem::path(out).filename().string();
  oracle::GeneratedFixture fixture;
  {
    py::gil_scoped_release released;  // the oracle and its self-checks: seconds
    fixture = oracle::generate_fixture(spec, options);
  }
  const bool passed = fixture.report.passed();
  std::string failure;
  if (!passed) {
    const oracle::CheckFigure* first = fixture.report.first_failure();
    failure = fmt::format("self-check '{}' failed: figure {:.3e} against bar {:.3g}", first->check,
                          first->figure, first->bar);
    if (force) oracle::mark_unchecked(fixture.file);
  }
  if (passed || force) write_safetensors(out, fixture.file);
  py::dict result;
  result["written"] = passed || force;
  result["passed"] = passed;
  result["failure"] = failure;
  result["describe"] = spec.describe();
  result["self_checks"] = fixture.report.to_json().dump();
  return result;
}

// The noise model of a fixture for a precision class, and the bars and bias
// bands `gate check` derives from it (gates::measure_noise, judge_against_noise;
// the noise cache is used as check's is). The per-term figures that do not
// depend on the candidate are those judge_against_noise sets on any candidate;
// they are taken here from the reference judged against itself. Returns JSON
// text: {"bars": the report's bars object, "terms": [{"term", "bar", and the
// row's noise figures under the report's names}, ...] in the report's order}.
std::string noise(const std::string& fixture, const std::string& precision_text,
                  const std::string& phase_text) {
  const auto precision = kernels::parse_precision(precision_text);
  if (!precision)
    throw InputError(
        fmt::format("unknown precision class '{}'; pass 'f32', 'tf32' or 'bf16'.", precision_text));
  const kernels::Phase phase = phase_of(phase_text);
  nlohmann::json out;
  {
    py::gil_scoped_release released;  // the ensemble: seconds
    const gates::LoadedFixture f = gates::load_fixture(fixture, phase);
    const gates::NoiseModel model =
        gates::measure_noise(f.job.shape, f.job.inputs, phase, f.reference, *precision);
    const auto terms =
        gates::judge_against_noise(f.job.shape, phase, model, f.reference, f.reference);
    out["bars"] = gates::noise_bars_json(model, terms);
    out["terms"] = nlohmann::json::array();  // in the report's order: forward first
    for (const auto& term : terms) {
      const nlohmann::json row = term.to_json();
      nlohmann::json figures = {{"term", term.term}, {"bar", row["bar"]}};
      for (const char* key :
           {"baseline_rel", "ensemble_worst_rel", "alpha_band", "min_detectable_scaling",
            "ensemble_rel", "ensemble_alpha", "per_chunk_ensemble_worst_rel",
            "per_chunk_alpha_band", "per_head_alpha_band"})
        figures[key] = row.at("noise").at(key);
      out["terms"].push_back(figures);
    }
  }
  return out.dump();
}

// The page `deltaproof report html FILES -o PAGE` writes (reports/html).
std::string html_page(const std::vector<std::string>& reports) {
  return html::reports_page(std::vector<std::filesystem::path>(reports.begin(), reports.end()));
}

}  // namespace
}  // namespace deltaproof::python

PYBIND11_MODULE(_core, m) {
  using namespace deltaproof::python;
  // a spec crosses as an opaque object: made by fixture_spec, read by generate
  py::class_<deltaproof::oracle::FixtureSpec>(m, "FixtureSpec")
      .def("describe", &deltaproof::oracle::FixtureSpec::describe)
      .def("__repr__", [](const deltaproof::oracle::FixtureSpec& spec) {
        return "<deltaproof._core.FixtureSpec " + spec.describe() + ">";
      });
  m.doc() = "deltaproof's compiled core: fixtures and the gate check (python/src/core.cpp)";
  // every InputError (a FormatError too) of the C++ side: bad input, a sentence naming it.
  // Raised as deltaproof.InputError, the class of python/deltaproof/_errors.py, so that one
  // class is caught whichever side refused the input.
  static const py::handle input_error =
      py::object(py::module_::import("deltaproof._errors").attr("InputError")).release();
  m.attr("InputError") = input_error;
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const deltaproof::InputError& error) {
      PyErr_SetString(input_error.ptr(), error.what());
    }
  });
  m.def("read_fixture", &read_fixture, py::arg("path"));
  m.def("check", &check, py::arg("fixture"), py::arg("outputs"), py::arg("name"),
        py::arg("backend"), py::arg("precision"), py::arg("phase"), py::arg("command"));
  m.def("fixture_spec", &fixture_spec, py::arg("op"), py::arg("B"), py::arg("T"), py::arg("H"),
        py::arg("HV"), py::arg("K"), py::arg("V"), py::arg("chunk"), py::arg("cu_seqlens"),
        py::arg("regime"), py::arg("dtype"), py::arg("h0"), py::arg("do_mask"), py::arg("seed"));
  m.def("generate", &generate, py::arg("spec"), py::arg("out"), py::arg("force"),
        py::arg("threads"));
  m.def("noise", &noise, py::arg("fixture"), py::arg("precision"), py::arg("phase"));
  m.def("html_page", &html_page, py::arg("reports"));
  m.def(
      "set_noise_cache",
      [](const std::string& folder) { deltaproof::gates::set_noise_cache(folder); },
      py::arg("folder"));
  m.attr("report_schema") = deltaproof::gates::kReportSchema;
  m.attr("tool_version") = deltaproof::gates::kToolVersion;
}

// tests/gates/broken_backend.hpp — a backend broken in one known way, and the
// registered gates run on it: how the gate tests show a gate red.
#pragma once

#include <algorithm>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gates/registry.hpp"
#include "gates/runner.hpp"

namespace deltaproof::gates::testing {

inline const std::filesystem::path& fixtures_folder() {
  static const std::filesystem::path folder =
      std::filesystem::path(DELTAPROOF_SOURCE_DIR) / "fixtures";
  return folder;
}

inline bool mentions(const std::vector<std::string>& reasons, const std::string& text) {
  return std::any_of(reasons.begin(), reasons.end(),
                     [&](const std::string& r) { return r.find(text) != std::string::npos; });
}

inline const Gate& registered(const std::string& name) {
  static const std::vector<Gate> all = all_gates(fixtures_folder());
  for (const auto& g : all)
    if (g.name == name) return g;
  throw std::runtime_error("no gate " + name);
}

// A backend that runs `inner` and breaks one thing: `edit` sees the inputs
// (a copy) before the run and the outputs after it.
class Broken : public kernels::Backend {
 public:
  using Edit =
      std::function<void(const kernels::KernelShape&, kernels::Buffers& inputs_copy,
                         kernels::Buffers& outputs, kernels::ExecutionRecord&, bool before)>;
  Broken(std::string inner, Edit edit)
      : inner_(kernels::find_backend(inner)), edit_(std::move(edit)) {}
  std::string name() const override { return "broken-" + inner_.name(); }
  std::string description() const override { return "a deliberately broken backend (tests)"; }
  void run(const kernels::KernelShape& shape, const kernels::Buffers& inputs, kernels::Phase phase,
           kernels::Buffers& outputs, kernels::ExecutionRecord& record) const override {
    kernels::Buffers in = inputs;
    edit_(shape, in, outputs, record, true);
    inner_.run(shape, in, phase, outputs, record);
    edit_(shape, in, outputs, record, false);
  }

 private:
  const kernels::Backend& inner_;
  Edit edit_;
};

inline GateResult run_with(const std::string& gate, const kernels::Backend& backend,
                           int repeat = 1) {
  RunOptions options;
  options.fixtures_dir = fixtures_folder();
  options.backend = &backend;
  options.repeat = repeat;
  return run_gate(registered(gate), options);
}

}  // namespace deltaproof::gates::testing

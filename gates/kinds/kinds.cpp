// gates/kinds/kinds.cpp — the table of gate kinds (kind.hpp).
#include <stdexcept>

#include "gates/kinds/kind.hpp"

namespace deltaproof::gates {

const std::vector<KindInfo>& gate_kinds() {
  static const std::vector<KindInfo> table = {
      {GateKind::oracle, "oracle", true, run_oracle},
      {GateKind::causality, "causality", false, run_causality},
      {GateKind::split_call, "split-call", false, run_split_call},
      {GateKind::batch_head, "batch-head", false, run_batch_head},
      {GateKind::isolation, "isolation", false, run_isolation},
      {GateKind::packing, "packing", false, run_packing},
  };
  return table;
}

const KindInfo& kind_info(GateKind kind) {
  for (const auto& info : gate_kinds())
    if (info.kind == kind) return info;
  throw std::logic_error("a gate kind without a row in gates/kinds/kinds.cpp");
}

std::string_view kind_name(GateKind kind) { return kind_info(kind).name; }

}  // namespace deltaproof::gates

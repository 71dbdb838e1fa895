// falsify/catalog.hpp — the fault catalog (falsify/catalog.json, DESIGN.md
// section 6): per known bug its id, class, what it is, how and where it is
// injected, which gates and terms must go red, which must stay green, and what
// a sanitizer or the generator's self-checks must report.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace deltaproof::falsify {

// Which gates of a campaign an expectation speaks of.
struct Selector {
  std::string gates = "*";         // a glob over the gate name
  std::string except;              // a glob of gates it leaves out (empty: none)
  std::string fixtures = "any";    // fixture classes joined by '+', all must hold (below)
  std::vector<std::string> terms;  // red: the terms allowed red (empty: any)
  nlohmann::json to_json() const;
};

// Where a fault lives for one backend ("*": every backend; "oracle": gen).
struct Injection {
  std::string backend;
  std::string file;    // relative to the source tree
  std::string marker;  // text found on the injection line
};

struct SanitizerExpectation {
  std::string tool;  // racecheck, initcheck, memcheck, synccheck
  std::string gate;  // the gate to run under it
};

struct GeneratorExpectation {
  std::vector<std::string> args;        // deltaproof gen arguments (spec)
  std::string fault;                    // --inject-generator-fault
  std::vector<std::string> refused_by;  // self-checks that must fail
};

enum class Mechanism { fault_point, sync_build, generator };

struct CatalogFault {
  std::string id;
  std::string cls;  // kernel, oracle, instrument
  std::string what;
  Mechanism mechanism = Mechanism::fault_point;
  std::vector<Injection> injected_at;
  std::vector<Selector> red, green;
  std::optional<SanitizerExpectation> sanitizer;
  std::optional<GeneratorExpectation> generator;
  std::string note;
  // The injection for `backend`, or nullptr when the fault has none there.
  const Injection* injection_for(const std::string& backend) const;
  nlohmann::json expected_json() const;
};

struct Catalog {
  std::filesystem::path path;
  std::vector<CatalogFault> faults;
  const CatalogFault* find(const std::string& id) const;
};

// Throws InputError naming the file, the fault and the field on anything
// malformed: a missing field, an unknown class, mechanism or fixture class, a
// duplicate id.
Catalog load_catalog(const std::filesystem::path& path);

std::string_view mechanism_name(Mechanism mechanism);

// What a selector's fixture classes read of a gate's fixture.
struct FixtureTraits {
  int T = 0, chunk = 0, K = 0, V = 0;
  bool zero_h0 = false;  // h0 = 0: the edge regime's, or gen --h0 zero
  int B = 1, H = 2;
  int HV = 0;                         // value heads; 0: as many as H
  std::vector<std::int64_t> lengths;  // packed: each sequence's length; empty: dense
};
// The fixture classes: any; one-chunk (T <= chunk), multi-chunk; partial-chunk
// (T % chunk != 0), whole-chunks; two-whole-chunks (T >= 2 chunk: a chunk
// follows a whole one of its size); two-rows (T >= 2: a pair i < r exists);
// square-state (K == V), rect-state (K != V); nonzero-h0; state-in (some
// chunk starts from a non-zero state: nonzero-h0 or multi-chunk); and the
// coverage matrix's new cells (issue 11): short (T < chunk), one-row-tail
// (T % chunk == 1), long-tail (T % chunk > chunk / 2), chunk-32, multi-batch
// (B > 1), many-heads (H > 2); and issue 14's packed (cu_seqlens), dense,
// grouped (HV > H). On a packed fixture a class of lengths holds when it
// holds for some sequence (one-chunk and whole-chunks: for every sequence,
// as the negations of multi-chunk and partial-chunk).
const std::vector<std::string>& fixture_classes();
// Whether `fixtures` ("any", one class, or classes joined by '+', all of
// which must hold) holds for a fixture; throws InputError on an unknown class.
bool fixture_class_matches(const std::string& fixtures, const FixtureTraits& fixture);

}  // namespace deltaproof::falsify

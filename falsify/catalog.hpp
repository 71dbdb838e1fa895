// falsify/catalog.hpp — the fault catalog (falsify/catalog.json, DESIGN.md
// section 6): per known bug its id, class, what it is, how and where it is
// injected, which gates and terms must go red, which must stay green, and what
// a sanitizer or the generator's self-checks must report.
#pragma once

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
  std::string fixtures = "any";    // any, one-chunk, multi-chunk, partial-chunk, whole-chunks
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

// The fixture classes of a selector, from a fixture's T and chunk.
bool fixture_class_matches(const std::string& fixtures, int T, int chunk);

}  // namespace deltaproof::falsify

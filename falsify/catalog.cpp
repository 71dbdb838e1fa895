// falsify/catalog.cpp — see catalog.hpp.
#include "falsify/catalog.hpp"

#include <algorithm>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/names.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::set<std::string> kClasses = {"kernel", "oracle", "instrument"};
const std::set<std::string> kTools = {"racecheck", "initcheck", "memcheck", "synccheck"};

// Reads fields of one JSON object, naming the file and the place on any error.
class Reader {
 public:
  Reader(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) fail("is not a JSON object");
  }
  [[noreturn]] void fail(const std::string& problem) const {
    throw InputError(fmt::format("{}: {}", where_, problem));
  }
  bool has(const char* key) const { return object_.contains(key); }
  std::string text(const char* key, bool required = true, std::string fallback = "") const {
    if (!object_.contains(key)) {
      if (required) fail(fmt::format("field '{}' is missing", key));
      return fallback;
    }
    if (!object_.at(key).is_string()) fail(fmt::format("field '{}' must be a string", key));
    return object_.at(key).get<std::string>();
  }
  std::vector<std::string> texts(const char* key) const {
    std::vector<std::string> out;
    if (!object_.contains(key)) return out;
    const json& list = object_.at(key);
    if (!list.is_array()) fail(fmt::format("field '{}' must be a list of strings", key));
    for (const auto& item : list) {
      if (!item.is_string()) fail(fmt::format("field '{}' must be a list of strings", key));
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  const json& list(const char* key) const {
    static const json empty = json::array();
    if (!object_.contains(key)) return empty;
    if (!object_.at(key).is_array()) fail(fmt::format("field '{}' must be a list", key));
    return object_.at(key);
  }
  const std::string& where() const { return where_; }

 private:
  const json& object_;
  std::string where_;
};

std::vector<Selector> read_selectors(const Reader& fault, const char* key) {
  std::vector<Selector> out;
  int i = 0;
  for (const auto& item : fault.list(key)) {
    const Reader r(item, fmt::format("{}, {}[{}]", fault.where(), key, i++));
    Selector s;
    s.gates = r.text("gates", false, "*");
    s.except = r.text("except", false);
    s.fixtures = r.text("fixtures", false, "any");
    try {
      fixture_class_matches(s.fixtures, FixtureTraits{});
    } catch (const InputError& e) {
      r.fail(e.what());
    }
    s.terms = r.texts("terms");
    out.push_back(s);
  }
  return out;
}

}  // namespace

json Selector::to_json() const {
  json j = {{"gates", gates}, {"fixtures", fixtures}};
  if (!except.empty()) j["except"] = except;
  if (!terms.empty()) j["terms"] = terms;
  return j;
}

namespace {
constexpr std::pair<Mechanism, std::string_view> kMechanismNames[] = {
    {Mechanism::fault_point, "fault-point"},
    {Mechanism::sync_build, "sync-build"},
    {Mechanism::generator, "generator"},
};
}  // namespace

std::string_view mechanism_name(Mechanism mechanism) { return name_of(kMechanismNames, mechanism); }

const std::vector<std::string>& fixture_classes() {
  static const std::vector<std::string> classes = {
      "any",          "one-chunk",        "multi-chunk", "partial-chunk",
      "whole-chunks", "two-whole-chunks", "two-rows",    "square-state",
      "nonzero-h0",   "state-in",         "rect-state",  "short",
      "one-row-tail", "long-tail",        "chunk-32",    "multi-batch",
      "many-heads",   "packed",           "dense",       "grouped"};
  return classes;
}

bool fixture_class_matches(const std::string& fixtures, const FixtureTraits& f) {
  std::size_t from = 0;
  bool all = true;
  while (from <= fixtures.size()) {
    const std::size_t plus = std::min(fixtures.find('+', from), fixtures.size());
    const std::string c = fixtures.substr(from, plus - from);
    from = plus + 1;
    // a class of lengths: for some sequence (a dense fixture's rows are all T long)
    const std::vector<std::int64_t> lengths =
        f.lengths.empty() ? std::vector<std::int64_t>{f.T} : f.lengths;
    auto some = [&](auto holds_for) {
      return std::any_of(lengths.begin(), lengths.end(), holds_for);
    };
    const std::int64_t C = f.chunk;
    const bool multi = some([&](std::int64_t L) { return L > C; });
    const bool partial = C > 0 && some([&](std::int64_t L) { return L % C != 0; });
    bool holds = true;
    if (c == "any")
      holds = true;
    else if (c == "one-chunk")
      holds = !multi;
    else if (c == "multi-chunk")
      holds = multi;
    else if (c == "partial-chunk")
      holds = partial;
    else if (c == "whole-chunks")
      holds = C > 0 && !partial;
    else if (c == "two-whole-chunks")
      holds = some([&](std::int64_t L) { return L >= 2 * C; });
    else if (c == "two-rows")
      holds = some([](std::int64_t L) { return L >= 2; });
    else if (c == "square-state")
      holds = f.K == f.V;
    else if (c == "nonzero-h0")
      holds = !f.zero_h0;
    else if (c == "state-in")
      holds = !f.zero_h0 || multi;
    else if (c == "rect-state")
      holds = f.K != f.V;
    else if (c == "short")
      holds = some([&](std::int64_t L) { return L < C; });
    else if (c == "one-row-tail")
      holds = C > 0 && some([&](std::int64_t L) { return L % C == 1; });
    else if (c == "long-tail")
      holds = C > 0 && some([&](std::int64_t L) { return L % C > C / 2; });
    else if (c == "chunk-32")
      holds = f.chunk == 32;
    else if (c == "multi-batch")
      holds = f.B > 1;
    else if (c == "many-heads")
      holds = f.H > 2;
    else if (c == "packed")
      holds = !f.lengths.empty();
    else if (c == "dense")
      holds = f.lengths.empty();
    else if (c == "grouped")
      holds = f.HV > f.H;
    else
      throw InputError(
          fmt::format("fixtures '{}' is unknown: no class '{}'; use {} (joined by '+')", fixtures,
                      c, fmt::join(fixture_classes(), ", ")));
    all = all && holds;
  }
  return all;
}

const Injection* CatalogFault::injection_for(const std::string& backend) const {
  for (const auto& at : injected_at)
    if (at.backend == backend || at.backend == "*") return &at;
  return nullptr;
}

json CatalogFault::expected_json() const {
  json j = {{"red", json::array()}, {"green", json::array()}};
  for (const auto& s : red) j["red"].push_back(s.to_json());
  for (const auto& s : green) j["green"].push_back(s.to_json());
  if (sanitizer) j["sanitizer"] = {{"tool", sanitizer->tool}, {"gate", sanitizer->gate}};
  if (generator) j["refused_by"] = generator->refused_by;
  return j;
}

const CatalogFault* Catalog::find(const std::string& id) const {
  for (const auto& f : faults)
    if (f.id == id) return &f;
  return nullptr;
}

Catalog load_catalog(const fs::path& path) {
  std::ifstream in(path);
  if (!in)
    throw InputError(
        fmt::format("{}: cannot read the fault catalog (does the file exist?)", path.string()));
  json root;
  try {
    root = json::parse(in);
  } catch (const json::parse_error& e) {
    throw InputError(fmt::format("{}: not valid JSON: {}", path.string(), e.what()));
  }
  const Reader top(root, path.string());
  if (top.text("format") != "deltaproof-falsify-catalog/1")
    top.fail("format must be 'deltaproof-falsify-catalog/1'");
  Catalog catalog;
  catalog.path = path;
  int index = 0;
  for (const auto& item : top.list("faults")) {
    const std::string where = fmt::format("{}: faults[{}]", path.string(), index++);
    const Reader r(item, where);
    CatalogFault f;
    f.id = r.text("id");
    const Reader named(item, fmt::format("{}: fault '{}'", path.string(), f.id));
    if (catalog.find(f.id)) named.fail("the id appears twice");
    f.cls = named.text("class");
    if (!kClasses.count(f.cls))
      named.fail(fmt::format("class '{}' is unknown; use kernel, oracle or instrument", f.cls));
    f.what = named.text("what");
    const std::string mechanism = named.text("mechanism");
    if (mechanism == "fault-point")
      f.mechanism = Mechanism::fault_point;
    else if (mechanism == "sync-build")
      f.mechanism = Mechanism::sync_build;
    else if (mechanism == "generator")
      f.mechanism = Mechanism::generator;
    else
      named.fail(fmt::format("mechanism '{}' is unknown; use fault-point, sync-build or generator",
                             mechanism));
    int i = 0;
    for (const auto& at : named.list("injected_at")) {
      const Reader a(at, fmt::format("{}, injected_at[{}]", named.where(), i++));
      f.injected_at.push_back({a.text("backend"), a.text("file"), a.text("marker")});
    }
    if (f.injected_at.empty()) named.fail("injected_at is empty: where does the fault live?");
    f.red = read_selectors(named, "red");
    f.green = read_selectors(named, "green");
    if (named.has("sanitizer")) {
      const Reader s(item.at("sanitizer"), named.where() + ", sanitizer");
      f.sanitizer = SanitizerExpectation{s.text("tool"), s.text("gate")};
      if (!kTools.count(f.sanitizer->tool))
        s.fail(fmt::format("tool '{}' is unknown; use racecheck, initcheck, memcheck or synccheck",
                           f.sanitizer->tool));
    }
    if (named.has("generator")) {
      const Reader g(item.at("generator"), named.where() + ", generator");
      f.generator = GeneratorExpectation{g.texts("args"), g.text("fault"), g.texts("refused_by")};
      if (f.generator->refused_by.empty()) g.fail("refused_by is empty");
    }
    if (f.mechanism == Mechanism::generator && !f.generator)
      named.fail("a generator fault needs a 'generator' object (args, fault, refused_by)");
    if (f.mechanism != Mechanism::generator && f.red.empty() && !f.sanitizer)
      named.fail("nothing must go red: give 'red' selectors or a 'sanitizer' expectation");
    f.note = named.text("note", false);
    catalog.faults.push_back(std::move(f));
  }
  if (catalog.faults.empty()) top.fail("the catalog holds no faults");
  return catalog;
}

}  // namespace deltaproof::falsify

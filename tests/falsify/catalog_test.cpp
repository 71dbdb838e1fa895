// tests/falsify/catalog_test.cpp — the committed fault catalog
// (falsify/catalog.json): it holds every injection point the kernels and the
// instrument have, the expectations issue 6 names, and markers that exist in
// the files they point at; a malformed catalog is refused with a sentence that
// names the file, the fault and the field.
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "core/error.hpp"
#include "falsify/catalog.hpp"
#include "falsify/report.hpp"
#include "gates/instrument_faults.hpp"
#include "tests/core/temp_folder.hpp"

namespace deltaproof::falsify {
namespace {
namespace fs = std::filesystem;

const fs::path kSource = DELTAPROOF_SOURCE_DIR;

const Catalog& committed() {
  static const Catalog catalog = load_catalog(kSource / "falsify/catalog.json");
  return catalog;
}

const CatalogFault& fault(const std::string& id) {
  const CatalogFault* f = committed().find(id);
  if (!f) throw std::runtime_error("the catalog has no fault " + id);
  return *f;
}

bool has_selector(const std::vector<Selector>& list, const std::string& gates,
                  const std::string& fixtures) {
  for (const auto& s : list)
    if (s.gates == gates && s.fixtures == fixtures) return true;
  return false;
}

TEST(Catalog, HoldsAtLeast18FaultsOfEveryClass) {
  EXPECT_GE(committed().faults.size(), 18u);
  std::set<std::string> classes;
  for (const auto& f : committed().faults) classes.insert(f.cls);
  EXPECT_EQ(classes, (std::set<std::string>{"kernel", "oracle", "instrument"}));
}

TEST(Catalog, HoldsEveryRunTimeFaultPointAndNothingElse) {
  std::set<std::string> points;
  for (const auto& info : gates::fault_catalog()) {
    points.insert(std::string(info.id));
    const CatalogFault* f = committed().find(std::string(info.id));
    ASSERT_NE(f, nullptr) << "fault point " << info.id
                          << " (kernels/faults.hpp, gates/instrument_faults.hpp) is not in the "
                             "catalog";
    EXPECT_EQ(f->mechanism, Mechanism::fault_point) << info.id;
    // the list's class and reach agree with the catalog's class and backends
    EXPECT_EQ(f->cls, info.cls == kernels::FaultClass::kernel ? "kernel" : "instrument") << info.id;
    if (info.cls != kernels::FaultClass::kernel) continue;
    std::set<std::string> backends;
    for (const auto& at : f->injected_at) backends.insert(at.backend);
    const bool on_cuda = backends.count("cuda-chunk") || backends.count("cuda-recurrent");
    const bool on_cpu = backends.count("cpu-chunk") || backends.count("cpu-recurrent");
    EXPECT_EQ(on_cpu, !info.cuda_only()) << info.id << ": the list's reach and the catalog's "
                                         << "injection points disagree";
    EXPECT_EQ(on_cuda, !info.cpu_only()) << info.id;
  }
  for (const auto& sync : kernels::sync_faults()) {
    const CatalogFault* f = committed().find(std::string(sync.id));
    ASSERT_NE(f, nullptr) << "sync fault " << sync.id << " is not in the catalog";
    EXPECT_EQ(f->mechanism, Mechanism::sync_build) << sync.id << " must be built, not switched";
  }
  for (const auto& f : committed().faults) {
    if (f.mechanism != Mechanism::fault_point) continue;
    EXPECT_TRUE(points.count(f.id)) << f.id << " is a fault-point in the catalog but "
                                    << "no fault list switches it";
  }
}

TEST(Catalog, EveryMarkerIsFoundInItsFile) {
  for (const auto& f : committed().faults)
    for (const auto& at : f.injected_at) {
      const MutantSite site = locate(kSource, at.file, at.marker);
      EXPECT_TRUE(site.found) << f.id << ": marker '" << at.marker << "' is not in " << at.file;
    }
}

// The expectations the issue names, which are the point of the catalog.
TEST(Catalog, GlueFaultsAreGreenOnOneChunkAndRedOnMultiChunk) {
  for (const char* id : {"ds-not-handed-back", "state-not-carried"}) {
    const auto& f = fault(id);
    for (const auto& s : f.red)
      EXPECT_TRUE(s.fixtures == "multi-chunk+dense" || s.fixtures == "multi-chunk+packed") << id;
    EXPECT_TRUE(has_selector(f.green, "*", "one-chunk+dense")) << id;
  }
}

// The coverage matrix's fixtures (issue 11) hold shapes where a fault has
// nothing to act on; the classes say so, and '+' needs every class.
FixtureTraits traits(int T, int chunk, int K, int V, bool zero_h0, int B, int H) {
  FixtureTraits f;
  f.T = T, f.chunk = chunk, f.K = K, f.V = V, f.zero_h0 = zero_h0, f.B = B, f.H = H;
  return f;
}

TEST(Catalog, FixtureClassesReadTheShapeAndH0) {
  const FixtureTraits one_token = traits(1, 16, 64, 64, false, 1, 2),
                      rect = traits(33, 32, 16, 8, false, 1, 2),
                      zero_one_chunk = traits(12, 16, 64, 64, true, 1, 2),
                      zero_two_chunks = traits(40, 16, 8, 8, true, 1, 2),
                      wide = traits(40, 16, 8, 8, false, 2, 3);
  EXPECT_FALSE(fixture_class_matches("two-rows", one_token));
  EXPECT_FALSE(fixture_class_matches("square-state", rect));
  EXPECT_FALSE(fixture_class_matches("two-whole-chunks", rect));  // 33 rows at chunk 32
  EXPECT_FALSE(fixture_class_matches("square-state+state-in", zero_one_chunk));
  EXPECT_TRUE(fixture_class_matches("square-state+state-in", zero_two_chunks));
  EXPECT_FALSE(fixture_class_matches("nonzero-h0", zero_two_chunks));
  EXPECT_TRUE(fixture_class_matches("any", one_token));
  EXPECT_TRUE(fixture_class_matches("short+one-row-tail", one_token));
  EXPECT_TRUE(fixture_class_matches("chunk-32+rect-state+one-row-tail", rect));
  EXPECT_FALSE(fixture_class_matches("long-tail", wide));  // 8 of 16 rows is half, not more
  EXPECT_TRUE(fixture_class_matches("long-tail", traits(60, 16, 8, 16, false, 1, 2)));
  EXPECT_TRUE(fixture_class_matches("multi-batch+many-heads", wide));
  EXPECT_FALSE(fixture_class_matches("multi-batch", zero_two_chunks));
  EXPECT_THROW(fixture_class_matches("square-state+round", rect), InputError);
  EXPECT_EQ(fault("state-transposed").red.front().fixtures, "square-state+state-in+dense");
  EXPECT_TRUE(has_selector(fault("h0-ignored").green, "*-h0zero.*", "dense"));
}

// A packed fixture's classes of lengths hold when some sequence has the
// length (one-chunk and whole-chunks: every sequence).
TEST(Catalog, FixtureClassesOfAPackedFixtureReadItsSequences) {
  FixtureTraits packed = traits(140, 16, 8, 8, false, 1, 2);
  packed.lengths = {1, 7, 16, 17, 32, 67};
  EXPECT_TRUE(fixture_class_matches("packed+multi-chunk+partial-chunk+short", packed));
  EXPECT_TRUE(fixture_class_matches("one-row-tail+two-whole-chunks", packed));
  EXPECT_FALSE(fixture_class_matches("one-chunk", packed));
  EXPECT_FALSE(fixture_class_matches("whole-chunks", packed));
  EXPECT_FALSE(fixture_class_matches("dense", packed));
  EXPECT_FALSE(fixture_class_matches("grouped", packed));
  FixtureTraits whole = packed;
  whole.lengths = {16, 32};
  EXPECT_TRUE(fixture_class_matches("whole-chunks", whole));
  EXPECT_FALSE(fixture_class_matches("short", whole));
  FixtureTraits grouped = traits(40, 16, 8, 8, false, 1, 2);
  grouped.HV = 8;
  EXPECT_TRUE(fixture_class_matches("grouped+dense", grouped));
}

TEST(Catalog, DgSignFlipIsRedOnDgAlone) {
  const auto& f = fault("dg-sign-flipped");
  ASSERT_FALSE(f.red.empty());
  for (const auto& s : f.red) EXPECT_EQ(s.terms, std::vector<std::string>{"dg"});
  EXPECT_TRUE(has_selector(f.green, "*.fwd", "dense"));
}

TEST(Catalog, DhtIgnoredIsGreenWhereDhtIsZero) {
  const auto& f = fault("dht-ignored");
  for (const auto& s : f.red) EXPECT_EQ(s.gates, "*.bwd");
  EXPECT_TRUE(has_selector(f.green, "*.fwd", "dense")) << "a forward takes no dht";
}

TEST(Catalog, PartialChunkFaultIsRedOnlyOnPartialChunks) {
  const auto& f = fault("partial-chunk-reads-past-t");
  for (const auto& s : f.red)
    EXPECT_TRUE(s.fixtures == "partial-chunk+dense" || s.fixtures == "partial-chunk+packed")
        << s.fixtures;
  EXPECT_TRUE(has_selector(f.red, "*.cpu-chunk.*.isolation", "partial-chunk+packed"))
      << "on a packed batch it reads the next sequence";
  EXPECT_TRUE(has_selector(f.green, "*", "whole-chunks+dense"));
}

TEST(Catalog, OracleDoubleExpIsRefusedByTheGenerator) {
  const auto& f = fault("oracle-double-exp");
  EXPECT_EQ(f.mechanism, Mechanism::generator);
  ASSERT_TRUE(f.generator.has_value());
  EXPECT_EQ(f.generator->fault, "double-exp");
  EXPECT_FALSE(f.generator->refused_by.empty());
}

TEST(Catalog, OtherSeedReferenceIsRedAtTheForward) {
  const auto& f = fault("reference-other-seed");
  EXPECT_EQ(f.cls, "instrument");
  for (const auto& s : f.red) EXPECT_EQ(s.terms, (std::vector<std::string>{"o", "ht"}));
}

TEST(Catalog, SanitizerFaultsNameTheirTool) {
  EXPECT_EQ(fault("missing-barrier-bk2").sanitizer->tool, "racecheck");
  EXPECT_EQ(fault("global-scratch-unwritten").sanitizer->tool, "initcheck");
}

// ---- refusals -------------------------------------------------------------

std::string refusal(const std::string& text) {
  testing::TempFolder dir;
  const fs::path path = dir.path() / "catalog.json";
  std::ofstream(path) << text;
  try {
    load_catalog(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const char* kOneFault = R"({"format": "deltaproof-falsify-catalog/1", "faults": [
  {"id": "x", "class": "kernel", "what": "w", "mechanism": "fault-point",
   "injected_at": [{"backend": "cpu-chunk", "file": "f.cpp", "marker": "m"}],
   "red": [{"gates": "*.bwd", "terms": ["dg"]}]}]})";

TEST(CatalogRefuses, NothingWhenWellFormed) { EXPECT_EQ(refusal(kOneFault), ""); }

TEST(CatalogRefuses, AMissingFieldNamingFileFaultAndField) {
  std::string text = kOneFault;
  const std::string what = R"("what": "w", )";
  text.replace(text.find(what), what.size(), "");
  const std::string e = refusal(text);
  EXPECT_NE(e.find("catalog.json"), std::string::npos) << e;
  EXPECT_NE(e.find("fault 'x'"), std::string::npos) << e;
  EXPECT_NE(e.find("'what' is missing"), std::string::npos) << e;
}

TEST(CatalogRefuses, AnUnknownClass) {
  std::string text = kOneFault;
  text.replace(text.find("\"kernel\""), 8, "\"kernal\"");
  EXPECT_NE(refusal(text).find("class 'kernal' is unknown"), std::string::npos);
}

TEST(CatalogRefuses, AnUnknownFixtureClass) {
  std::string text = kOneFault;
  const std::string gates = R"("gates": "*.bwd")";
  text.replace(text.find(gates), gates.size(), R"("gates": "*.bwd", "fixtures": "two-chunk")");
  EXPECT_NE(refusal(text).find("fixtures 'two-chunk' is unknown"), std::string::npos);
}

TEST(CatalogRefuses, ADuplicateId) {
  std::string text = kOneFault;
  const auto start = text.find("{\"id\"");
  const auto end = text.rfind("]}");
  const std::string one = text.substr(start, end - start);
  text.insert(end, ", " + one);
  EXPECT_NE(refusal(text).find("appears twice"), std::string::npos);
}

TEST(CatalogRefuses, AFaultThatNeedNotTurnAnythingRed) {
  std::string text = kOneFault;
  const std::string red = R"("red": [{"gates": "*.bwd", "terms": ["dg"]}])";
  text.replace(text.find(red), red.size(), R"("red": [])");
  EXPECT_NE(refusal(text).find("nothing must go red"), std::string::npos);
}

TEST(CatalogRefuses, NotJson) {
  EXPECT_NE(refusal("{faults").find("not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace deltaproof::falsify

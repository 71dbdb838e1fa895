// tests/oracle/spec_io_test.cpp — FixtureSpec's one serialisation (oracle/op.hpp):
// every field survives the JSON round trip (gen --report, manifest.json) and
// the metadata round trip (a fixture's header and its cu_seqlens tensor), and
// every field shows in gen's options. A field added to FixtureSpec stops this
// file compiling until it is named in fields() and given a variant below.
//
//   ctest --test-dir build -R SpecIo
#include <algorithm>
#include <array>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "oracle/fixture.hpp"
#include "oracle/op.hpp"

namespace deltaproof::oracle {
namespace {

constexpr std::array kFieldNames = {"op",      "B",         "T",      "H",         "K",
                                    "V",       "chunk",     "regime", "dtype",     "seed",
                                    "zero_h0", "masked_do", "HV",     "cu_seqlens"};

// Every data member of FixtureSpec, in declaration order: the structured
// binding fails to compile when the struct gains or loses one.
auto fields(const FixtureSpec& s) {
  const auto& [op, B, T, H, K, V, chunk, regime, dtype, seed, zero_h0, masked_do, HV, cu_seqlens] =
      s;
  return std::tie(op, B, T, H, K, V, chunk, regime, dtype, seed, zero_h0, masked_do, HV,
                  cu_seqlens);
}
static_assert(std::tuple_size_v<decltype(fields(FixtureSpec{}))> == kFieldNames.size());

template <std::size_t... I>
std::vector<std::string> differing(const FixtureSpec& a, const FixtureSpec& b,
                                   std::index_sequence<I...>) {
  std::vector<std::string> names;
  const auto x = fields(a);
  const auto y = fields(b);
  ((std::get<I>(x) == std::get<I>(y) ? void() : names.push_back(kFieldNames[I])), ...);
  return names;
}

// The names of the fields in which `a` and `b` differ.
std::vector<std::string> differing_fields(const FixtureSpec& a, const FixtureSpec& b) {
  return differing(a, b, std::make_index_sequence<kFieldNames.size()>{});
}

// For each field, a valid spec that differs from the default in it alone.
std::vector<std::pair<std::string, FixtureSpec>> one_field_variants() {
  std::vector<std::pair<std::string, FixtureSpec>> out;
  auto add = [&](const char* field, auto change) {
    FixtureSpec s;
    change(s);
    out.emplace_back(field, s);
  };
  add("op", [](FixtureSpec& s) { s.op = Op::kda; });
  add("B", [](FixtureSpec& s) { s.B = 2; });
  add("T", [](FixtureSpec& s) { s.T = 40; });
  add("H", [](FixtureSpec& s) { s.H = 3; });
  add("K", [](FixtureSpec& s) { s.K = 16; });
  add("V", [](FixtureSpec& s) { s.V = 4; });
  add("chunk", [](FixtureSpec& s) { s.chunk = 32; });
  add("regime", [](FixtureSpec& s) { s.regime = Regime::mild; });
  add("dtype", [](FixtureSpec& s) { s.dtype = DType::BF16; });
  add("seed", [](FixtureSpec& s) { s.seed = 7; });
  add("zero_h0", [](FixtureSpec& s) { s.zero_h0 = true; });
  add("masked_do", [](FixtureSpec& s) { s.masked_do = true; });
  add("HV", [](FixtureSpec& s) { s.HV = 4; });
  add("cu_seqlens", [](FixtureSpec& s) { s.cu_seqlens = {0, 5, 16}; });
  return out;
}

// Every field away from its default at once.
FixtureSpec every_field_set() {
  FixtureSpec s;
  s.op = Op::gdn;
  s.T = 40;
  s.H = 3;
  s.HV = 6;
  s.K = 16;
  s.V = 4;
  s.chunk = 32;
  s.regime = Regime::stress;
  s.dtype = DType::BF16;
  s.seed = 9;
  s.zero_h0 = true;
  s.masked_do = true;
  s.cu_seqlens = {0, 7, 40};
  return s;
}

FixtureSpec through_json(const FixtureSpec& s) {
  return nlohmann::json::parse(nlohmann::json(s).dump()).get<FixtureSpec>();
}

// A fixture's header and its cu_seqlens tensor, read back as gate and gen --check read them.
FixtureSpec through_metadata(const FixtureSpec& s) {
  SafetensorsFile file;
  file.metadata = spec_metadata(s);
  if (s.packed())
    file.tensors["cu_seqlens"] =
        Tensor::from_i64({static_cast<std::int64_t>(s.cu_seqlens.size())}, s.cu_seqlens);
  return spec_of_fixture(file, "spec_io_test");
}

TEST(SpecIo, EachVariantDiffersInItsFieldAloneAndEveryFieldHasOne) {
  std::vector<std::string> covered;
  for (const auto& [field, spec] : one_field_variants()) {
    EXPECT_NO_THROW(spec.validate()) << field;
    EXPECT_EQ(differing_fields(spec, FixtureSpec{}), std::vector<std::string>{field});
    covered.push_back(field);
  }
  EXPECT_EQ(covered, std::vector<std::string>(kFieldNames.begin(), kFieldNames.end()));
  EXPECT_EQ(differing_fields(every_field_set(), FixtureSpec{}).size(), kFieldNames.size() - 1)
      << "every field but B (packed sequences need B = 1) is away from its default";
}

TEST(SpecIo, JsonRoundTripKeepsEveryField) {
  for (const auto& [field, spec] : one_field_variants())
    EXPECT_EQ(differing_fields(through_json(spec), spec), std::vector<std::string>{})
        << "the JSON round trip of a spec whose " << field << " is set: " << nlohmann::json(spec);
  const FixtureSpec all = every_field_set();
  EXPECT_EQ(differing_fields(through_json(all), all), std::vector<std::string>{})
      << nlohmann::json(all);
}

TEST(SpecIo, MetadataRoundTripKeepsEveryField) {
  for (const auto& [field, spec] : one_field_variants())
    EXPECT_EQ(differing_fields(through_metadata(spec), spec), std::vector<std::string>{})
        << "the metadata round trip of a spec whose " << field << " is set";
  const FixtureSpec all = every_field_set();
  EXPECT_EQ(differing_fields(through_metadata(all), all), std::vector<std::string>{});
}

TEST(SpecIo, MetadataKeysAreTheListedOnes) {
  for (const auto& [key, value] : spec_metadata(every_field_set()))
    EXPECT_NE(std::find(std::begin(kSpecMetadataKeys), std::end(kSpecMetadataKeys), key),
              std::end(kSpecMetadataKeys))
        << key << " is written but not in kSpecMetadataKeys";
  EXPECT_EQ(spec_metadata(every_field_set()).size(), std::size(kSpecMetadataKeys))
      << "every listed key is written for a spec with every field set";
}

TEST(SpecIo, GenOptionsNameEveryField) {
  const std::string defaults = gen_options(FixtureSpec{});
  for (const auto& [field, spec] : one_field_variants())
    EXPECT_NE(gen_options(spec), defaults) << "gen's options leave out " << field;
  EXPECT_EQ(gen_options(every_field_set()),
            "--op gdn --B 1 --T 40 --H 3 --K 16 --V 4 --chunk 32 --regime stress --dtype bf16 "
            "--seed 9 --h0 zero --do-mask --HV 6 --cu-seqlens 0,7,40");
}

TEST(SpecIo, EdgeRegimeH0ReadsBackAsTheFixtureHasIt) {
  FixtureSpec edge;
  edge.regime = Regime::edge;
  EXPECT_EQ(nlohmann::json(edge).at("h0"), "zero");
  EXPECT_EQ(differing_fields(through_json(edge), edge), std::vector<std::string>{});
  FixtureSpec edge_zero = edge;
  edge_zero.zero_h0 = true;  // the JSON cannot tell it from `edge`; the metadata can
  EXPECT_TRUE(through_json(edge_zero).h0_is_zero());
  EXPECT_EQ(differing_fields(through_metadata(edge_zero), edge_zero), std::vector<std::string>{});
}

TEST(SpecIo, CanonicalFixturesRoundTrip) {
  for (const auto& f : canonical_fixtures()) {
    EXPECT_EQ(differing_fields(through_json(f.spec), f.spec), std::vector<std::string>{}) << f.file;
    EXPECT_EQ(differing_fields(through_metadata(f.spec), f.spec), std::vector<std::string>{})
        << f.file;
  }
}

TEST(SpecIo, FromJsonNamesTheBadKey) {
  nlohmann::json j = FixtureSpec{};
  j.erase("chunk");
  try {
    (void)j.get<FixtureSpec>();
    FAIL() << "a spec without chunk was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("it has no 'chunk'"), std::string::npos) << e.what();
  }
  j = FixtureSpec{};
  j["dtype"] = "f16";
  EXPECT_THROW((void)j.get<FixtureSpec>(), InputError);
}

}  // namespace
}  // namespace deltaproof::oracle

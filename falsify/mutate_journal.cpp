// falsify/mutate_journal.cpp — the journal of `falsify mutate --journal F`
// (see mutate.hpp): one JSON line per result as it comes, read back by a run
// given the same journal.
#include "falsify/mutate.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/names.hpp"
#include "falsify/mutate_json.hpp"
#include "falsify/report.hpp"

namespace deltaproof::falsify {
namespace fs = std::filesystem;
using detail::number;
using nlohmann::json;

namespace {

constexpr std::pair<JournalPhase, std::string_view> kJournalPhaseNames[] = {
    {JournalPhase::gates, "gates"}, {JournalPhase::sanitize, "sanitize"}};

}  // namespace

json journal_header(const MutateOptions& options) {
  return {{"journal", kMutateJournalFormat},
          {"files", options.files},
          {"backends", options.backends},
          {"gate_globs", options.gate_globs},
          {"first_red", !options.all_gates},
          {"timeout_s", options.timeout_s},
          {"sanitize_globs", options.sanitize_globs}};
}

json journal_line(const MutantOutcome& o, JournalPhase phase) {
  return {{"id", o.mutant.id},
          {"phase", name_of(kJournalPhaseNames, phase)},
          {"file", o.mutant.file},
          {"line", o.mutant.line},
          {"original", o.mutant.original},
          {"replacement", o.mutant.replacement},
          {"status", mutant_status_name(o.status)},
          {"reason", o.reason},
          {"gate", o.killer_gate},
          {"term", o.killer_term},
          {"margin", number(o.margin)},
          {"killedBy", o.killed_by},
          {"gatesRun", o.gates_run},
          {"changedOutputs", o.changed_outputs},
          {"seconds", o.seconds},
          {"sanitizer", o.sanitizer},
          {"sanitizerFinding", o.sanitizer_finding}};
}

Journal read_journal(const fs::path& path, const json& header, const std::vector<Mutant>& all) {
  Journal journal;
  std::error_code missing;
  if (!fs::exists(path, missing)) return journal;
  std::map<int, const Mutant*> by_id;
  for (const auto& m : all) by_id[m.id] = &m;
  const std::string text = read_text(path);
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.empty()) continue;
    const auto where = [&](const std::string& problem) {
      return InputError(fmt::format("journal {}, line {}: {}", path.string(), number, problem));
    };
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error&) {
      if (number == 1) throw where("not JSON");
      ++journal.cut_lines;  // a run ended while it wrote the line
      continue;
    }
    if (number == 1) {
      if (!j.is_object() || j.value("journal", "") != kMutateJournalFormat)
        throw where(fmt::format("not a journal of falsify mutate (no \"journal\": \"{}\")",
                                kMutateJournalFormat));
      for (const auto& [key, ours] : header.items())
        if (key != "journal" && j.value(key, json()) != ours)
          throw where(
              fmt::format("it was written by a run whose {} was {}; this run's is {} (give another "
                          "--journal, or the set-up that wrote it)",
                          key, j.value(key, json()).dump(), ours.dump()));
      continue;
    }
    try {
      const int id = j.at("id").get<int>();
      const auto it = by_id.find(id);
      if (it == by_id.end()) throw where(fmt::format("mutant {} is not in this run's list", id));
      const Mutant& m = *it->second;
      if (j.at("file").get<std::string>() != m.file || j.at("line").get<int>() != m.line ||
          j.at("original").get<std::string>() != m.original ||
          j.at("replacement").get<std::string>() != m.replacement)
        throw where(fmt::format(
            "mutant {} is {}:{} '{}' -> '{}' there but {}:{} '{}' -> '{}' in this run's list "
            "(the journal was written from another list)",
            id, j.at("file").get<std::string>(), j.at("line").get<int>(),
            j.at("original").get<std::string>(), j.at("replacement").get<std::string>(), m.file,
            m.line, m.original, m.replacement));
      MutantOutcome o;
      o.mutant = m;
      o.status = parse_mutant_status(j.at("status").get<std::string>());
      o.reason = j.value("reason", "");
      o.killer_gate = j.value("gate", "");
      o.killer_term = j.value("term", "");
      o.margin = j.contains("margin") && j["margin"].is_number() ? j["margin"].get<double>()
                                                                 : std::nan("");
      o.killed_by = j.value("killedBy", std::vector<std::string>{});
      o.gates_run = j.value("gatesRun", 0);
      o.changed_outputs = j.value("changedOutputs", std::vector<std::string>{});
      o.seconds = j.value("seconds", 0.0);
      o.sanitizer = j.value("sanitizer", "");
      o.sanitizer_finding = j.value("sanitizerFinding", "");
      const JournalPhase phase =
          value_of(kJournalPhaseNames, j.at("phase").get<std::string>(), "journal phase");
      (phase == JournalPhase::gates ? journal.gates : journal.sanitize)[id] = std::move(o);
      ++journal.results;
    } catch (const InputError&) {
      throw;
    } catch (const std::exception& e) {
      throw where(fmt::format("not a mutant's result: {}", e.what()));
    }
  }
  return journal;
}

void append_journal(const fs::path& path, const json& header, const json& line) {
  std::error_code missing;
  const bool fresh = !fs::exists(path, missing) || fs::file_size(path, missing) == 0;
  bool needs_newline = false;
  if (!fresh) {  // a line cut short by the end of an earlier run is closed first
    std::ifstream in(path, std::ios::binary);
    in.seekg(-1, std::ios::end);
    needs_newline = in.get() != '\n';
  }
  std::ofstream out(path, std::ios::app | std::ios::binary);
  if (fresh) out << header.dump() << '\n';
  if (needs_newline) out << '\n';
  out << line.dump() << '\n';
  out.flush();
  if (!out) throw InputError(fmt::format("cannot append to the journal {}", path.string()));
}

}  // namespace deltaproof::falsify

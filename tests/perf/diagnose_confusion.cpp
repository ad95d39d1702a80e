// Writes the diagnosis confusion table of the real traces in tests/data, in trace and nvidia-smi
// CSV form (tuned set and held-out set separately), as Markdown.
//
//   diagnose_confusion [--heldout] [--out FILE] [--verbose]
//
// Without --heldout the held-out traces are left out (use it once, after tuning). The CSV forms
// are written to a private temporary folder (mkdtemp) by scripts/trace_to_nvidia_smi_csv.py (python3).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "../integration/diagnose_expectations.hpp"
#include "core/temp_dir.hpp"
#include "diagnose/diagnose.hpp"
#include "telemetry/input.hpp"

namespace fs = std::filesystem;
using gpudoc::findings::Severity;

namespace {

struct Row {
  std::string trace, form, expected, found_primary, found_all;
  bool ok = false;
  bool heldout = false;
  std::string verdict;
  std::string first_warning;  // id of the first finding at warning or above
};

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  bool heldout = false, verbose = false;
  std::string out_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--heldout")
      heldout = true;
    else if (a == "--verbose")
      verbose = true;
    else if (a == "--out" && i + 1 < argc)
      out_path = argv[++i];
    else {
      std::cerr << "usage: diagnose_confusion [--heldout] [--out FILE] [--verbose]\n";
      return 2;
    }
  }
  const fs::path src = GPUDOC_SOURCE_DIR;
  // A private folder (mkdtemp, 0700): never a guessable name in $TMPDIR. Removed on every return.
  auto tmp_dir = gpudoc::core::PrivateDir::create("gpudoc-confusion");
  if (!tmp_dir) {
    std::cerr << tmp_dir.error().message() << "\n";
    return 1;
  }
  const fs::path tmp = tmp_dir->path();

  std::vector<Row> rows;
  for (const auto& e : gpudoc::testing::expectations()) {
    if (e.heldout && !heldout) continue;
    const fs::path trace = src / "tests/data" / (e.trace + ".jsonl");
    const fs::path csv = tmp / (e.trace + ".csv");
    const std::string cmd = fmt::format("python3 '{}' '{}' '{}'", (src / "scripts/trace_to_nvidia_smi_csv.py").string(),
                                        trace.string(), csv.string());
    if (std::system(cmd.c_str()) != 0) {
      std::cerr << "conversion failed: " << cmd << "\n";
      return 1;
    }
    for (const auto& [form, path, expected] : std::vector<std::tuple<std::string, fs::path, std::string>>{
             {"trace", trace, e.expected}, {"csv", csv, e.csv_expected}}) {
      auto t = gpudoc::telemetry::read_telemetry_file(path.string());
      Row r{e.trace, form, expected.empty() ? "(not visible)" : expected, "", "", false, e.heldout, "", ""};
      if (!t) {
        r.found_all = "read error: " + t.error().message();
        rows.push_back(r);
        continue;
      }
      const auto d = gpudoc::diagnose::diagnose(*t, gpudoc::diagnose::Options{});
      std::vector<std::string> all, prim, wrong;
      bool has_expected = expected.empty();
      for (const auto& f : d.findings) {
        all.push_back(fmt::format("{}({})", f.id, gpudoc::findings::to_string(f.severity)));
        if (f.id == expected) has_expected = true;
        const bool allowed = f.id == expected || f.id == e.expected ||
                             std::find(e.allowed.begin(), e.allowed.end(), f.id) != e.allowed.end();
        if (f.severity >= Severity::kWarning && !allowed) wrong.push_back(f.id);
        if (f.severity >= Severity::kWarning && r.first_warning.empty()) r.first_warning = f.id;
        if (verbose)
          std::cerr << e.trace << " [" << form << "] " << f.id << " " << gpudoc::findings::to_string(f.severity)
                    << " conf " << f.confidence << ": " << f.message << "\n";
      }
      for (const auto& g : d.gpus) prim.push_back(g.primary);
      r.found_primary = join(prim, ", ");
      r.found_all = join(all, ", ");
      r.ok = has_expected && wrong.empty();
      r.verdict = r.ok ? "ok" : (!has_expected ? "MISSED" : "WRONG: " + join(wrong, ","));
      rows.push_back(r);
    }
  }

  std::ostringstream md;
  for (bool ho : {false, true}) {
    if (ho && !heldout) continue;
    md << (ho ? "\n### Held-out set (run once, after tuning)\n\n" : "### Tuned set\n\n");
    md << "| trace | form | expected | primary per GPU | all findings | verdict |\n|---|---|---|---|---|---|\n";
    for (const auto& r : rows)
      if (r.heldout == ho)
        md << "| " << r.trace << " | " << r.form << " | " << r.expected << " | " << r.found_primary << " | "
           << r.found_all << " | " << r.verdict << " |\n";
    // Matrix: expected (rows) x primary finding of the most affected GPU (columns).
    std::set<std::string> cols;
    std::map<std::string, std::map<std::string, int>> m;
    for (const auto& r : rows) {
      if (r.heldout != ho) continue;
      // The found label: the expected id when present, else the first warning+ id, else the primaries.
      std::string found = r.found_all.find(r.expected + "(") != std::string::npos ? r.expected : r.first_warning;
      if (!r.ok && r.verdict.rfind("WRONG", 0) == 0) found = r.verdict.substr(7);
      if (found.empty()) found = "(info only)";
      cols.insert(found);
      ++m[r.expected][found];
    }
    md << "\n| expected \\ found | " << join(std::vector<std::string>(cols.begin(), cols.end()), " | ") << " |\n|---|";
    for (std::size_t i = 0; i < cols.size(); ++i) md << "---|";
    md << "\n";
    for (const auto& [exp, row] : m) {
      md << "| " << exp << " |";
      for (const auto& c : cols) {
        auto it = row.find(c);
        md << " " << (it == row.end() ? "" : std::to_string(it->second)) << " |";
      }
      md << "\n";
    }
    int ok = 0, n = 0;
    for (const auto& r : rows)
      if (r.heldout == ho) {
        ++n;
        ok += r.ok ? 1 : 0;
      }
    md << "\n" << ok << " of " << n << " correct (expected finding present, no wrong finding at warning or above).\n";
  }
  if (out_path.empty())
    std::cout << md.str();
  else
    std::ofstream(out_path) << md.str();
  int bad = 0;
  for (const auto& r : rows) bad += r.ok ? 0 : 1;
  return bad == 0 ? 0 : 1;
}

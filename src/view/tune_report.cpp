#include "view/tune_report.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/numeric.hpp"
#include "core/text.hpp"
#include "view/html_page.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {
namespace {

std::string join_words(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string interval_text(const tune::Judgement& j) {
  if (!j.interval) return "—";
  return fmt::format("[{:+.1f}, {:+.1f}]", j.interval->low_percent, j.interval->high_percent);
}

std::string work_text(const tune::Report& r) {
  if (r.work.wall()) return "the wall time of each whole run (the job prints no step figure)";
  return fmt::format("{} ({} is better), {} warm-up + {} measured samples per trial", r.work.figure,
                     r.work.higher_is_better ? "higher" : "lower", r.work.warmup, r.work.steps);
}

std::string reference_text(const std::vector<tune::Trial>& ref, const tune::Report& r) {
  std::vector<double> all;
  std::size_t ok = 0, failed = 0;
  for (const auto& t : ref) {
    if (t.ok()) {
      ++ok;
      all.insert(all.end(), t.samples.begin(), t.samples.end());
    } else {
      ++failed;
    }
  }
  std::string s = fmt::format("without them: {} trial{}", ok, ok == 1 ? "" : "s");
  if (!all.empty())
    s += fmt::format(", median {:.4g} {}", core::median(all),
                     r.work.wall()             ? std::string("s a run")
                     : r.work.higher_is_better ? "(1 / " + r.work.figure + ")"
                                               : r.work.figure);
  if (failed > 0) s += fmt::format(", {} failed", failed);
  return s;
}

std::string layer_text(const tune::LayerResult& l, const tune::Report& r) {
  std::string out =
      fmt::format("\nLayer: {} (planned {:.0f} s, spent {:.0f} s){}\n", tune::layer_title(l.layer), l.planned_s,
                  l.spent_s, l.base.empty() ? "" : fmt::format("; on top of {}", join_words(l.base)));
  std::vector<std::vector<std::string>> rows = {{"change", "speed-up", "95 % interval", "trials", "outcome"}};
  for (const auto& a : l.arms) {
    const tune::Judgement* j = a.overall ? &*a.overall : (a.first ? &*a.first : nullptr);
    rows.push_back({a.change.id, j != nullptr ? fmt::format("{:+.1f} %", j->speedup_percent) : "—",
                    j != nullptr ? interval_text(*j) : "—", fmt::format("{}", a.trials.size()), a.outcome});
  }
  out += core::render_table(rows);
  for (const auto& a : l.arms)
    out += fmt::format("  {}: {} — {}\n    {}\n", a.change.id, a.change.what, a.outcome,
                       core::terminal_safe(a.reason, core::Newlines::kKeep));
  out += "  " + reference_text(l.reference, r) + "\n";
  if (!l.note.empty()) out += "  note: " + l.note + "\n";
  return out;
}

std::string budget_text(const tune::Report& r) {
  std::string s =
      fmt::format("\nBudget: {:.0f} s; spent {:.0f} s ({:+.0f} %) in {} trials: plain run {:.0f} s", r.budget.budget_s,
                  r.budget.spent_s, (r.budget.spent_s / r.budget.budget_s - 1) * 100, r.trials, r.budget.plain_s);
  for (const auto& l : r.layers)
    s += fmt::format(", {} {:.0f} s (planned {:.0f})", tune::to_string(l.layer), l.spent_s, l.planned_s);
  if (r.budget.final_planned_s > 0 || r.budget.final_spent_s > 0)
    s += fmt::format(", final check {:.0f} s (planned {:.0f})", r.budget.final_spent_s, r.budget.final_planned_s);
  s += fmt::format("; {} trials of each arm in a first block, {} in a confirmation\n", r.budget.repetitions,
                   r.budget.confirm_repetitions);
  return s;
}

}  // namespace

std::string tune_headline(const tune::Report& r) {
  if (r.stopped_by) return "Stopped before the end: what was measured until then is below.";
  if (r.kept.empty())
    return "Nothing worth changing: no change was kept (each one's measurement and reason are below).";
  if (!r.overall)
    return fmt::format("{} change{} kept, but the tuned job could not be measured against the unchanged one.",
                       r.kept.size(), r.kept.size() == 1 ? "" : "s");
  const tune::Judgement& o = *r.overall;
  return fmt::format("{:.2f}x as much work per second: {:+.1f} % (95 % interval {}), {}", 1 + o.speedup_percent / 100,
                     o.speedup_percent, interval_text(o) + " %",
                     r.overall_from == "final" ? "the tuned job against the unchanged one, measured at the end"
                                               : "measured for " + r.overall_from + " against the unchanged job");
}

std::string tune_text(const tune::Report& r) {
  std::string out = fmt::format("gpudoc tune: {}\n", join_words(r.command));
  out += "Work measured: " + work_text(r) + "\n";
  if (r.diagnosis.diagnosed) {
    out += "Diagnosis of the plain run:";
    if (r.diagnosis.findings.empty()) out += " no finding";
    out += "\n";
    for (const auto& f : r.diagnosis.findings)
      out += fmt::format("  {} ({}): {}\n", f.id, findings::to_string(f.severity), f.message);
  } else {
    out += "Diagnosis: none (" + r.diagnosis.why_not + "); only changes named by --only are tried\n";
  }
  if (const tune::ShimSeen& s = r.plain.seen; s.observed)
    out += !s.torch ? "The plain run, under the shim's observe patch: the job did not import torch\n"
                    : fmt::format(
                          "The plain run, under the shim's observe patch: torch {}{}; {} DataLoader{} (at most {} "
                          "workers{}); {} module{} moved to the GPU ({} with 2-D convolutions)\n",
                          s.torch_version, s.compile ? "" : " (no torch.compile)", s.dataloaders,
                          s.dataloaders == 1 ? "" : "s", s.max_workers, s.pinned ? ", pinned" : "", s.cuda_modules,
                          s.cuda_modules == 1 ? "" : "s", s.conv_modules);
  out += "\n" + tune_headline(r) + "\n";
  for (const auto& l : r.layers) out += layer_text(l, r);
  if (!r.kept.empty()) {
    out += "\nTo apply (kept: ";
    for (std::size_t i = 0; i < r.kept.size(); ++i) out += (i ? ", " : "") + r.kept[i].id;
    out += "):\n";
    for (const auto& line : r.apply_lines) out += "  " + line + "\n";
    for (const auto& c : r.kept)
      if (!c.patches.empty()) {
        out += "  (the shim is the gpudoc Python package: pip install /usr/share/gpudoc/python/gpudoc-*.whl)\n";
        break;
      }
  }
  if (!r.not_tried.empty()) {
    out += "\nNot tried:\n";
    for (const auto& n : r.not_tried) out += fmt::format("  {} ({}): {}\n", n.id, tune::to_string(n.layer), n.why);
  }
  if (!r.advice.empty()) {
    out += "\nAdvice only (never applied):\n";
    for (const auto& a : r.advice) out += fmt::format("  {} = {}: {} ({})\n", a.title, a.current, a.advice, a.why);
  }
  out += budget_text(r);
  return out;
}

core::Result<std::string> tune_html(const tune::Report& r) {
  auto assets = web_assets();
  if (!assets) return core::Error(core::ErrorKind::kEnvironment, std::string(kWebAssetsMissing));
  std::string page = html_page_start("gpudoc tune: " + join_words(r.command), *assets, report_file("tune.css"));
  page += "<p class=\"verdict\">" + html_escape(tune_headline(r)) + "</p>\n";
  if (!r.apply_lines.empty() && !r.kept.empty()) {
    page += "<h2>To apply</h2>\n<pre class=\"apply\">";
    for (const auto& line : r.apply_lines) page += html_escape(line) + "\n";
    page += "</pre>\n";
  }
  page +=
      "<h2>Every trial, in the order it ran</h2>\n<div id=\"trials\"></div>\n"
      "<p class=\"hint\">Each point is one trial's median time per unit of work (lower is faster); the changes "
      "of a layer took turns with the job without them.</p>\n";
  page += "<h2>Report</h2>\n<pre>" + html_escape(tune_text(r)) + "</pre>\n";
  nlohmann::json trials = nlohmann::json::array();
  auto add = [&](const tune::Trial& t) {
    if (t.ok() && !t.samples.empty())
      trials.push_back({{"n", t.number}, {"arm", t.arm}, {"block", t.block}, {"median", core::median(t.samples)}});
  };
  add(r.plain);
  for (const auto& l : r.layers) {
    for (const auto& t : l.reference) add(t);
    for (const auto& a : l.arms)
      for (const auto& t : a.trials) add(t);
  }
  for (const auto& t : r.final_trials) add(t);
  page += html_page_end({{"trials", trials},
                         {"unit", r.work.wall()             ? std::string("s per run")
                                  : r.work.higher_is_better ? "1 / " + r.work.figure
                                                            : r.work.figure}},
                        report_file("tune.js"), *assets);
  return page;
}

}  // namespace gpudoc::view

// The diagnosis views: the terminal report and the HTML page render every part of a Diagnosis
// (ids, numbers, next steps, caveats, changes, unseen), escape what they insert, and stay small.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>

#include "core/text.hpp"
#include "view/dashboard_assets.hpp"
#include "view/diagnose_html.hpp"
#include "view/diagnose_render.hpp"

namespace gpudoc::view {
namespace {

using findings::Severity;
using gpu::Metric;

gpu::DeviceInfo h200(int index) {
  gpu::DeviceInfo d;
  d.index = index;
  d.name = "NVIDIA H200";
  d.memory_total_bytes = 143771ULL << 20;
  d.sm_clock_max_mhz = 1980;
  d.power_limit_default_watts = 700;
  return d;
}

// A sawtooth on every GPU: period 1 s, duty 50 %, sampled at the native rates.
telemetry::Trace make_trace(int gpus, double seconds) {
  telemetry::Trace t;
  t.header.host = "node7";
  for (int g = 0; g < gpus; ++g) t.header.gpus.push_back(h200(g));
  t.gpus.resize(static_cast<std::size_t>(gpus));
  for (auto& gt : t.gpus) {
    auto add = [&](Metric m, double period, auto f) {
      auto& s = gt.metric(m);
      for (double x = 0; x < seconds; x += period) {
        s.t.push_back(x);
        s.v.push_back(f(x));
      }
    };
    auto on = [](double x) { return std::fmod(x, 1.0) < 0.5; };
    add(Metric::kGpuUtilizationPercent, 0.2, [&](double x) { return on(x) ? 100.0 : 0.0; });
    add(Metric::kGpmSmActivityPercent, 0.2, [&](double x) { return on(x) ? 80.0 : 1.0; });
    add(Metric::kGpmTensorActivityPercent, 0.2, [&](double x) { return on(x) ? 60.0 : 0.0; });
    add(Metric::kGpmDramActivityPercent, 0.2, [&](double x) { return on(x) ? 20.0 : 0.0; });
    add(Metric::kPowerWatts, 0.1, [&](double x) { return on(x) ? 600.0 : 120.0; });
    add(Metric::kSmClockMhz, 0.1, [&](double) { return 1980.0; });
    add(Metric::kMemoryUsedBytes, 0.1, [&](double) { return 40.0 * (1ULL << 30); });
  }
  t.duration_s = seconds;
  return t;
}

findings::Finding finding(const std::string& id, Severity sev) {
  findings::Finding f;
  f.id = id;
  f.severity = sev;
  return f;
}

diagnose::Diagnosis make_diagnosis(const telemetry::Trace& t) {
  diagnose::Diagnosis d;
  d.source = "run.jsonl";
  d.input_format = "gpudoc-trace";
  d.duration_s = t.duration_s;
  for (std::size_t g = 0; g < t.gpus.size(); ++g) {
    diagnose::GpuSummary s;
    s.gpu = static_cast<int>(g);
    s.name = "NVIDIA H200";
    s.analysed_from_s = 3.25;
    s.analysed_to_s = t.duration_s;
    s.mean_utilization_percent = 49.6;
    s.mean_sm_activity_percent = 40.4;
    s.mean_tensor_activity_percent = 30.2;
    s.mean_dram_activity_percent = 10.1;
    s.mean_power_watts = 361;
    s.primary = "sawtooth";
    d.gpus.push_back(s);
  }
  auto saw = finding("sawtooth", Severity::kWarning);
  saw.gpus = {0};
  saw.window = {3.25, 19.5};
  saw.confidence = 0.87;
  saw.message = "GPU 0 works in bursts: period 1.00 s, duty 50 %, 8.1 s of GPU time lost";
  saw.evidence = {{"period_s", 1.0, "s", "autocorrelation peak of gpu_utilization_percent"},
                  {"duty_cycle_percent", 50.4, "percent", "share of time above the midpoint"},
                  {"gpu_time_lost_s", 8.125, "s", "trough time over the window"},
                  {"peak_memory_bytes", 1.5 * (1ULL << 30), "By", "max of memory_used_bytes"}};
  saw.next_steps = {"torch.utils.data.DataLoader(..., num_workers=8, pin_memory=True)",
                    "nsys profile -t cuda,nvtx,osrt -o gaps python3 train.py"};
  saw.caveats = {"utilization sampled every 200 ms: faster gaps are not resolved"};
  auto thr = finding("throttled", Severity::kCritical);
  thr.gpus = {0};
  thr.window = {10.0, 12.5};
  thr.confidence = 0.55;
  thr.message = "Clocks held at 1410 MHz by sw_power_cap 34 % of the time";
  thr.evidence = {{"slowdown_share_percent", 34.2, "percent", "clock_event_reasons_mask"}};
  thr.next_steps = {"nvidia-smi -q -d PERFORMANCE"};
  auto idle = finding("idle", Severity::kInfo);
  idle.window = {0, 3.25};
  idle.message = "start-up: nothing ran for 3.2 s";
  d.findings = {thr, saw, idle};
  d.changes = {{0, 3.25, "idle", "sawtooth"}};
  d.unseen = {"per-process utilization", "NVLink traffic"};
  return d;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(FormatEvidence, UnitsAndPrecision) {
  EXPECT_EQ(format_evidence_value(1.0, "s"), "1.00 s");
  EXPECT_EQ(format_evidence_value(50.44, "percent"), "50.4 %");
  EXPECT_EQ(format_evidence_value(1410.4, "MHz"), "1410 MHz");
  EXPECT_EQ(format_evidence_value(3, "count"), "3.00");
  EXPECT_EQ(format_evidence_value(1.5 * (1ULL << 30), "By"), "1.5 GiB");
  EXPECT_EQ(format_evidence_value(std::nan(""), "s"), "—");
}

TEST(BucketMeans, MeansPerColumnAndEmptyColumnsAbsent) {
  telemetry::Series s{{0.0, 0.5, 1.0, 3.5}, {10.0, 30.0, 50.0, 70.0}};
  auto b = bucket_means(s, 0, 4, 4);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_DOUBLE_EQ(*b[0], 20.0);
  EXPECT_DOUBLE_EQ(*b[1], 50.0);
  EXPECT_FALSE(b[2].has_value());
  EXPECT_DOUBLE_EQ(*b[3], 70.0);
}

TEST(RenderDiagnosis, EveryFindingWithNumbersEvidenceAndNextSteps) {
  auto t = make_trace(2, 20);
  auto d = make_diagnosis(t);
  std::string out = render_diagnosis(t, d, {});
  for (const auto& f : d.findings) {
    EXPECT_TRUE(contains(out, f.id)) << f.id;
    EXPECT_TRUE(contains(out, f.message)) << f.message;
    for (const auto& e : f.evidence) {
      EXPECT_TRUE(contains(out, e.name)) << e.name;
      EXPECT_TRUE(contains(out, format_evidence_value(e.value, e.unit))) << e.name;
      EXPECT_TRUE(contains(out, e.how)) << e.how;
    }
    for (const auto& s : f.next_steps) EXPECT_TRUE(contains(out, s)) << s;
    for (const auto& c : f.caveats) EXPECT_TRUE(contains(out, c)) << c;
  }
  EXPECT_TRUE(contains(out, "1.5 GiB"));
  EXPECT_TRUE(contains(out, "confidence 87 %"));
  EXPECT_TRUE(contains(out, "confidence 55 %"));
  EXPECT_TRUE(contains(out, "3.2–19.5 s"));
  EXPECT_TRUE(contains(out, "GPU 0 NVIDIA H200 · analysed 3.2–20.0 s · sawtooth"));
  EXPECT_TRUE(contains(out, "means    util 50 % · SM 40 % · tensor 30 % · DRAM 10 % · power 361 W"));
  EXPECT_TRUE(contains(out, "GPU 1 NVIDIA H200"));
  EXPECT_TRUE(contains(out, "all GPUs"));  // idle has no GPU list
  EXPECT_TRUE(contains(out, "GPU 0 at 3.2 s: idle → sawtooth"));
  EXPECT_TRUE(contains(out, "Could not see: per-process utilization, NVLink traffic"));
  EXPECT_TRUE(contains(out, "node7, 2 GPUs"));
  // Most severe first, as given.
  EXPECT_LT(out.find("CRITICAL"), out.find("WARNING"));
  EXPECT_LT(out.find("WARNING"), out.find("INFO"));
  // Charts: a sawtooth shows both the floor and the top of the sparkline, and the windows row.
  EXPECT_TRUE(contains(out, " util "));
  EXPECT_TRUE(contains(out, "█"));
  EXPECT_TRUE(contains(out, "━"));
  EXPECT_TRUE(contains(out, "20.0 s"));
  EXPECT_FALSE(contains(out, "\x1b["));  // no colour unless asked
}

TEST(RenderDiagnosis, FitsTheWidthAndColoursOnlyWhenAsked) {
  auto t = make_trace(1, 20);
  auto d = make_diagnosis(t);
  std::string out = render_diagnosis(t, d, {.color = false, .width = 80});
  std::size_t pos = 0;
  bool in_findings = false;
  while (pos < out.size()) {
    auto nl = out.find('\n', pos);
    std::string line = out.substr(pos, nl - pos);
    if (contains(line, "Findings (")) in_findings = true;
    // Header and chart lines fit in 80 columns (finding text wraps in the terminal as it is).
    if (!in_findings && !contains(line, "gpudoc diagnose")) {
      EXPECT_LE(core::display_width(line), 80u) << line;
    }
    pos = nl + 1;
  }
  std::string coloured = render_diagnosis(t, d, {.color = true});
  EXPECT_TRUE(contains(coloured, "\x1b[1;31mCRITICAL"));
}

TEST(RenderDiagnosis, NoFindingsAndNoSamples) {
  telemetry::Trace t;
  t.header.gpus.push_back(h200(0));
  t.gpus.resize(1);
  diagnose::Diagnosis d;
  d.source = "empty.jsonl";
  d.gpus.push_back({});
  std::string out = render_diagnosis(t, d, {.banner = "REPLAY, not this machine"});
  EXPECT_TRUE(contains(out, "No findings"));
  EXPECT_TRUE(contains(out, "REPLAY, not this machine"));
}

TEST(RenderDiagnosis, TextFromTheInputCannotDriveTheTerminal) {
  auto t = make_trace(1, 20);
  t.header.host = "node7\x1b]0;owned\x07";
  t.header.command = {"python3", "tr\x1b[2Jain.py"};
  auto d = make_diagnosis(t);
  d.source = "run\x1b[31m.jsonl";
  d.gpus[0].name =
      "H200\xc2\x9b"
      "31m";
  d.findings[1].message = "GPU 0 shared by py\x1b[1mthon";
  d.warnings = {"run.jsonl line 9: cut \x1b[2K here"};
  for (bool color : {false, true}) {
    const std::string out = render_diagnosis(t, d, {.color = color});
    // Colour codes are gpudoc's own; none of the input's escapes survive.
    for (const char* raw : {"\x1b]0;", "\x1b[2J", "\x1b[31m.", "\x1b[1mthon", "\x1b[2K", "\xc2\x9b"})
      EXPECT_FALSE(contains(out, raw)) << raw << "\n" << out;
    EXPECT_FALSE(contains(out, "\x07"));
    EXPECT_TRUE(contains(out, "node7\\x1b]0;owned\\x07")) << out;
    EXPECT_TRUE(contains(out, "tr\\x1b[2Jain.py")) << out;
    EXPECT_TRUE(contains(out, "run\\x1b[31m.jsonl")) << out;
    EXPECT_TRUE(contains(out, "H200\\u{009b}31m")) << out;
    EXPECT_TRUE(contains(out, "py\\x1b[1mthon")) << out;
    EXPECT_TRUE(contains(out, "dropped: run.jsonl line 9: cut \\x1b[2K here")) << out;
  }
}

WebAssets fake_assets() {
  return {"/*uplot*/ window.uPlot = function(){}; var s = '</script>';", ".u-legend{}", "uplot test"};
}

TEST(DiagnoseHtml, EveryFindingEvidenceNextStepAndTheData) {
  auto t = make_trace(2, 20);
  auto d = make_diagnosis(t);
  HtmlReport r{&t, &d};
  std::string page = render_diagnose_html({&r, 1}, {.title = "run.jsonl"}, fake_assets());
  EXPECT_TRUE(page.starts_with("<!doctype html>"));
  for (const auto& f : d.findings) {
    EXPECT_TRUE(contains(page, "<code>" + f.id + "</code>")) << f.id;
    EXPECT_TRUE(contains(page, html_escape(f.message))) << f.message;
    for (const auto& e : f.evidence)
      EXPECT_TRUE(contains(page, html_escape(format_evidence_value(e.value, e.unit)))) << e.name;
    for (const auto& s : f.next_steps) EXPECT_TRUE(contains(page, html_escape(s))) << s;
  }
  EXPECT_TRUE(contains(page, "confidence 87 %"));
  EXPECT_TRUE(contains(page, "idle → sawtooth"));
  EXPECT_TRUE(contains(page, "Could not see: per-process utilization, NVLink traffic"));
  EXPECT_TRUE(contains(page, "id=\"plots-0-0\""));
  EXPECT_TRUE(contains(page, "id=\"plots-0-1\""));
  // The data: each curve per GPU, the findings' windows, and the assets inlined (no URL to fetch).
  auto a = page.find("id=\"gpudoc-data\">");
  ASSERT_NE(a, std::string::npos);
  a += 17;
  auto json = nlohmann::json::parse(page.substr(a, page.find("</script>", a) - a));
  ASSERT_EQ(json["traces"].size(), 1u);
  const auto& g0 = json["traces"][0]["gpus"][0];
  for (const char* k : {"gpu_utilization_percent", "gpm_sm_activity_percent", "gpm_tensor_activity_percent",
                        "gpm_dram_activity_percent", "power_watts", "sm_clock_mhz", "memory_used_bytes"})
    EXPECT_TRUE(g0["series"].contains(k)) << k;
  EXPECT_DOUBLE_EQ(g0["series"]["memory_used_bytes"][1][0].get<double>(), 40.0);  // in GiB, the unit plotted
  // The plots come from web/dashboard/plot_catalog.json's "report" layout, carried in the data.
  ASSERT_EQ(json["catalog"]["report"].size(), 3u);
  EXPECT_EQ(json["catalog"]["report"][1]["title"], "power (W) and SM clock (MHz)");
  EXPECT_EQ(json["catalog"]["series"]["memory_used_bytes"]["unit"], "GiB");
  ASSERT_EQ(g0["windows"].size(), 3u);  // throttled and sawtooth on GPU 0, idle on all
  EXPECT_EQ(g0["windows"][0]["id"], "throttled");
  EXPECT_EQ(g0["windows"][0]["severity"], "critical");
  EXPECT_EQ(json["traces"][0]["gpus"][1]["windows"].size(), 1u);
  EXPECT_TRUE(contains(page, "/*uplot*/"));
  EXPECT_TRUE(contains(page, ".u-legend{}"));
  EXPECT_FALSE(contains(page, "src=\"http"));
  EXPECT_FALSE(contains(page, "href=\"http"));
  // An asset holding "</script>" cannot end its element early.
  EXPECT_TRUE(contains(page, "'<\\/script>'"));
}

TEST(DiagnoseHtml, TheFindingsShadingIsServesOwnScriptEmbeddedOnce) {
  auto t = make_trace(1, 20);
  auto d = make_diagnosis(t);
  HtmlReport r{&t, &d};
  const std::string page = render_diagnose_html({&r, 1}, {.title = "run.jsonl"}, fake_assets());
  const auto shading = dashboard_asset("/assets/findings_shading.js");
  ASSERT_TRUE(shading.has_value());
  const auto at = page.find(std::string(shading->body));
  ASSERT_NE(at, std::string::npos);  // the dashboard's file, byte for byte
  EXPECT_EQ(page.find(std::string(shading->body), at + 1), std::string::npos);
  EXPECT_EQ(page.find("var SHADE"), page.rfind("var SHADE"));  // drawn by that file only
  EXPECT_TRUE(contains(page, "gpudocShading.plugin("));
}

TEST(DiagnoseHtml, HostileStringsAreEscapedEverywhere) {
  const std::string evil = "</script><script>alert(1)</script><img src=x onerror=alert(2)>\"'&";
  auto t = make_trace(1, 5);
  t.header.host = evil;
  t.header.gpus[0].name = evil;
  t.header.command = {"python3", evil};
  auto d = make_diagnosis(t);
  d.source = evil;
  d.gpus[0].name = evil;
  d.findings[0].message = evil;
  d.findings[0].evidence[0].name = evil;
  d.findings[0].evidence[0].how = evil;
  d.findings[0].next_steps = {evil};
  d.findings[0].caveats = {evil};
  d.findings[0].id = evil;  // not a catalog id: rendered, escaped, no catalog lookup
  d.changes = {{0, 1, evil, evil}};
  d.unseen = {evil};
  HtmlReport r{&t, &d};
  std::string page = render_diagnose_html({&r, 1}, {.title = evil, .banner = evil}, fake_assets());
  // No raw copy anywhere: every insertion point escaped it (HTML) or \u-escaped it (the data).
  EXPECT_FALSE(contains(page, "<script>alert(1)"));
  EXPECT_FALSE(contains(page, "<img src=x"));
  EXPECT_TRUE(contains(
      page, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;"));
  EXPECT_TRUE(contains(page, "\\u003c/script\\u003e"));
  // Exactly the page's own script elements: the error hook, data, the library, the page's code.
  std::size_t scripts = 0;
  for (std::size_t p = 0; (p = page.find("<script", p)) != std::string::npos; ++p) ++scripts;
  EXPECT_EQ(scripts, 4u);
  std::size_t ends = 0;
  for (std::size_t p = 0; (p = page.find("</script", p)) != std::string::npos; ++p) ++ends;
  EXPECT_EQ(ends, 4u);
}

TEST(DiagnoseHtml, ScriptSafeJson) {
  nlohmann::json j = {{"s", "a</script>&\u2028b"}};
  std::string s = script_safe_json(j);
  EXPECT_EQ(s, R"({"s":"a\u003c/script\u003e\u0026\u2028b"})");
  EXPECT_EQ(nlohmann::json::parse(s)["s"], "a</script>&\u2028b");
}

TEST(Downsample, KeepsEachBucketsMinAndMaxInTimeOrder) {
  telemetry::Series s;
  for (int i = 0; i < 10000; ++i) {
    s.t.push_back(i * 0.1);
    s.v.push_back(i == 5000 ? 1000.0 : i == 7000 ? -5.0 : static_cast<double>(i % 7));
  }
  auto d = downsample_min_max(s, 100);
  EXPECT_LE(d.size(), 200u);
  EXPECT_GE(d.size(), 100u);
  EXPECT_TRUE(std::is_sorted(d.t.begin(), d.t.end()));
  EXPECT_DOUBLE_EQ(*std::max_element(d.v.begin(), d.v.end()), 1000.0);  // the spike survives
  EXPECT_DOUBLE_EQ(*std::min_element(d.v.begin(), d.v.end()), -5.0);    // and the trough
  EXPECT_DOUBLE_EQ(d.t.front(), 0.0);
  auto small = downsample_min_max(telemetry::Series{{0, 1, 2}, {1, 2, 3}}, 100);
  EXPECT_EQ(small.size(), 3u);
}

TEST(DiagnoseHtml, AnHourOfEightGpusStaysSmall) {
  auto t = make_trace(8, 3600);
  auto d = make_diagnosis(t);
  HtmlReport r{&t, &d};
  std::string page = render_diagnose_html({&r, 1}, {}, fake_assets());
  EXPECT_LT(page.size(), 1'500'000u) << page.size();
}

TEST(DiagnoseHtml, TwoTracesOnOnePage) {
  auto t1 = make_trace(1, 10), t2 = make_trace(2, 10);
  auto d1 = make_diagnosis(t1), d2 = make_diagnosis(t2);
  d2.source = "second.jsonl";
  std::vector<HtmlReport> r{{&t1, &d1}, {&t2, &d2}};
  std::string page = render_diagnose_html(r, {.banner = "REPLAY, not this machine"}, fake_assets());
  EXPECT_TRUE(contains(page, "id=\"trace-1\""));
  EXPECT_TRUE(contains(page, "id=\"plots-1-1\""));
  EXPECT_TRUE(contains(page, "second.jsonl"));
  EXPECT_TRUE(contains(page, "<p class=\"banner\">REPLAY, not this machine</p>"));
  EXPECT_TRUE(contains(page, "data-trace=\"1\""));
}

TEST(DiagnoseHtml, WithoutAssetsTheBuildSaysHowToInstallThem) {
  auto t = make_trace(1, 5);
  auto d = make_diagnosis(t);
  HtmlReport r{&t, &d};
  auto page = render_diagnose_html({&r, 1}, {});
  if (web_assets()) {
    ASSERT_TRUE(page.ok());
    EXPECT_TRUE(contains(*page, "uPlot"));
  } else {
    ASSERT_FALSE(page.ok());
    EXPECT_EQ(page.error().kind(), core::ErrorKind::kEnvironment);
    EXPECT_TRUE(contains(page.error().message(), "npm ci --prefix web"));
  }
}

}  // namespace
}  // namespace gpudoc::view

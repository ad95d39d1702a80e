// gpudoc::view::render_diagnose_html — `gpudoc diagnose --html FILE`: one self-contained page that
// opens offline. Per trace and GPU, zoomable plots (uPlot, embedded) of utilization, SM/tensor/
// DRAM activity, power, SM clock and memory used, with the findings' windows shaded on them; the
// findings with evidence and next steps as plain HTML (readable without JavaScript). Pure: no I/O.
//
//   view::HtmlReport r{&trace, &diagnosis};
//   auto page = view::render_diagnose_html({&r, 1}, {.title = "run.jsonl"});   // Result<std::string>
//
// Everything taken from the input (trace names, hosts, commands, messages) is escaped for HTML,
// and the embedded data is JSON with <, >, & escaped, so no input can end a <script> element.
// Curves longer than 2 × buckets points keep each bucket's minimum and maximum (in time order),
// so spikes and troughs survive and an hour of 8 GPUs stays a few hundred kB.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "cost/prices.hpp"
#include "diagnose/diagnose.hpp"
#include "telemetry/trace.hpp"
#include "view/html_page.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::view {

struct HtmlReport {
  const telemetry::Trace* trace = nullptr;         // the curves
  const diagnose::Diagnosis* diagnosis = nullptr;  // what they mean
};

struct HtmlOptions {
  std::string title{};        // page title ("run.jsonl")
  std::string banner{};       // shown prominently, e.g. "REPLAY of recorded traces, not this machine"
  std::size_t buckets = 600;  // per curve: at most 2 × buckets points
  // When set, each trace's section says what its run cost at these prices (view/cost_view.hpp).
  const cost::PriceBook* prices = nullptr;
};

// Errors: kEnvironment when this build has no web assets (the message says how to install them).
[[nodiscard]] core::Result<std::string> render_diagnose_html(std::span<const HtmlReport> reports,
                                                             const HtmlOptions& options);
// The same with the given assets (tests).
[[nodiscard]] std::string render_diagnose_html(std::span<const HtmlReport> reports, const HtmlOptions& options,
                                               const WebAssets& assets);

// Min/max downsampling: at most 2 points per bucket over the series' span, in time order.
// Series of at most 2 × buckets points are returned unchanged.
[[nodiscard]] telemetry::Series downsample_min_max(const telemetry::Series& s, std::size_t buckets);

}  // namespace gpudoc::view

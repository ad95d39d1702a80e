#include "view/bench_details.hpp"

#include <fmt/format.h>

#include "bench/multi_gpu.hpp"

namespace gpudoc::view {
namespace {

std::string datasheet_suffix(const nlohmann::json& params, bool bidirectional) {
  const auto it = params.find("datasheet");
  if (it == params.end() || !it->is_object()) return "";
  const auto& d = *it;
  const double v = bidirectional ? d.value("bidirectional_gb_per_s", 0.0) : d.value("per_direction_gb_per_s", 0.0);
  return fmt::format("; datasheet {} {:.0f} GB/s {}", d.value("link", std::string("NVLink")), v,
                     bidirectional ? "both directions" : "per direction");
}

std::string matrix_text(const bench::BenchResult& r) {
  const auto& m = r.params.at("matrix");
  const auto& values = m.at("values");
  if (!values.is_array()) return "";
  std::vector<std::vector<std::optional<double>>> cells;
  for (const auto& row : values) {
    if (!row.is_array()) return "";
    std::vector<std::optional<double>> out;
    for (const auto& v : row) out.push_back(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
    cells.push_back(std::move(out));
  }
  const std::string rows = m.value("rows", std::string("row"));
  const std::string columns = m.value("columns", std::string("column"));
  const bool latency = r.unit == "us";
  const bool bidirectional = rows == "gpu";
  std::string title =
      fmt::format("{}: {} {}, median per pair, {} rows, {} columns{}\n", r.key, r.unit,
                  latency ? "per dependent load" : (bidirectional ? "both directions summed" : "one direction"), rows,
                  columns, latency ? "" : datasheet_suffix(r.params, bidirectional));
  return title + bench::render_pair_matrix(cells, rows, columns, latency ? 2 : 1) + "\n";
}

std::string curve_text(const bench::BenchResult& r) {
  const auto& curve = r.params.at("curve");
  if (!curve.is_array()) return "";
  std::vector<bench::CurvePoint> points;
  for (const auto& p : curve) {
    bench::CurvePoint c;
    c.bytes = p.value("bytes", std::size_t{0});
    c.time_us = p.value("time_us", 0.0);
    c.algbw_gb_per_s = p.value("algbw_gb_per_s", 0.0);
    c.busbw_gb_per_s = p.value("busbw_gb_per_s", 0.0);
    c.verified = p.value("verified", false);
    points.push_back(c);
  }
  std::string title = fmt::format("{}: {} ranks, {}{}\n", r.key, r.params.value("ranks", 0),
                                  r.params.value("formula", std::string()), datasheet_suffix(r.params, false));
  return title + bench::render_curve(points) + "\n";
}

}  // namespace

std::string details_text(const bench::BenchResult& r) {
  if (!r.params.is_object()) return "";
  try {
    if (r.params.contains("matrix")) return matrix_text(r);
    if (r.params.contains("curve")) return curve_text(r);
  } catch (const nlohmann::json::exception&) {
    return "";  // malformed params (a hand-edited file): no section rather than a crash
  }
  return "";
}

std::string spread_text(const bench::BenchResult& r) {
  if (!r.params.is_object()) return "";
  const auto it = r.params.find("host_spread");
  if (it == r.params.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) return "";
  return fmt::format("{}: CV {:.2f} %: {}\n", r.key, r.cv * 100, it->get_ref<const std::string&>());
}

}  // namespace gpudoc::view

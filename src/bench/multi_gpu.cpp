#include "bench/multi_gpu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "core/text.hpp"

namespace gpudoc::bench {

std::vector<GpuPair> ordered_pairs(int gpus) {
  std::vector<GpuPair> out;
  for (int i = 0; i < gpus; ++i)
    for (int j = 0; j < gpus; ++j)
      if (i != j) out.push_back({i, j});
  return out;
}

std::vector<GpuPair> unordered_pairs(int gpus) {
  std::vector<GpuPair> out;
  for (int i = 0; i < gpus; ++i)
    for (int j = i + 1; j < gpus; ++j) out.push_back({i, j});
  return out;
}

std::vector<std::size_t> size_schedule(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor) {
  std::vector<std::size_t> out;
  if (min_bytes == 0 || factor < 2 || min_bytes > max_bytes) return out;
  for (std::size_t s = min_bytes; s <= max_bytes;) {
    out.push_back(s);
    if (s > std::numeric_limits<std::size_t>::max() / factor) break;
    s *= factor;
  }
  if (out.back() != max_bytes) out.push_back(max_bytes);
  return out;
}

const char* to_string(Collective c) noexcept {
  switch (c) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
  }
  return "?";
}

CollectiveCounts collective_counts(Collective c, std::size_t size_bytes, int ranks, std::size_t elem_bytes) {
  CollectiveCounts out;
  if (ranks < 1 || elem_bytes == 0) return out;
  const auto n = static_cast<std::size_t>(ranks);
  switch (c) {
    case Collective::kAllReduce:
      out.count = size_bytes / elem_bytes;
      out.send_elems = out.count;
      out.recv_elems = out.count;
      out.bytes = out.count * elem_bytes;
      break;
    case Collective::kAllGather:
      out.count = size_bytes / (elem_bytes * n);
      out.send_elems = out.count;
      out.recv_elems = out.count * n;
      out.bytes = out.count * n * elem_bytes;
      break;
    case Collective::kReduceScatter:
      out.count = size_bytes / (elem_bytes * n);
      out.send_elems = out.count * n;
      out.recv_elems = out.count;
      out.bytes = out.count * n * elem_bytes;
      break;
  }
  return out;
}

double bus_bandwidth_factor(Collective c, int ranks) {
  if (ranks < 1) return 0;
  const double n = ranks;
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter: return (n - 1) / n;
  }
  return 0;
}

std::optional<LinkDatasheet> nvlink_datasheet(const std::string& gpu_name) {
  // Hopper SXM: 18 NVLink 4 links of 25 GB/s per direction each. PCIe Hopper boards (H100 PCIe,
  // H200 NVL) use NVLink bridges with other figures and are not listed: better no figure than a
  // wrong one.
  const bool hopper_sxm = gpu_name.find("H200") != std::string::npos && gpu_name.find("NVL") == std::string::npos;
  const bool h100_sxm =
      gpu_name.find("H100 80GB HBM3") != std::string::npos || gpu_name.find("H100 SXM") != std::string::npos;
  if (!hopper_sxm && !h100_sxm) return std::nullopt;
  LinkDatasheet d;
  d.link = "NVLink 4 (18 links)";
  d.per_direction_gb_per_s = 450;
  d.bidirectional_gb_per_s = 900;
  d.source = "NVIDIA H100/H200 SXM datasheet: NVLink 900 GB/s per GPU, total of both directions";
  return d;
}

std::string render_pair_matrix(const std::vector<std::vector<std::optional<double>>>& m, const std::string& row_label,
                               const std::string& column_label, int decimals) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header{row_label + "\\" + column_label};
  for (std::size_t j = 0; j < m.size(); ++j) header.push_back(std::to_string(j));
  cells.push_back(std::move(header));
  for (std::size_t i = 0; i < m.size(); ++i) {
    std::vector<std::string> row{std::to_string(i)};
    for (std::size_t j = 0; j < m.size(); ++j) {
      const auto& v = j < m[i].size() ? m[i][j] : std::optional<double>{};
      row.push_back(v ? fmt::format("{:.{}f}", *v, decimals) : std::string("—"));
    }
    cells.push_back(std::move(row));
  }
  std::vector<std::size_t> widths;
  for (const auto& r : cells) {
    widths.resize(std::max(widths.size(), r.size()), 0);
    for (std::size_t k = 0; k < r.size(); ++k) widths[k] = std::max(widths[k], core::display_width(r[k]));
  }
  std::string out;
  for (const auto& r : cells) {
    std::string line;
    for (std::size_t k = 0; k < r.size(); ++k) {
      if (k > 0) line += "  ";
      line += std::string(widths[k] - core::display_width(r[k]), ' ') + r[k];  // right-aligned
    }
    out += line + "\n";
  }
  return out;
}

std::string format_bytes(std::size_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t v = bytes;
  std::size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++unit;
  }
  return fmt::format("{} {}", v, kUnits[unit]);
}

std::string render_curve(const std::vector<CurvePoint>& points) {
  std::vector<std::vector<std::string>> rows{{"size", "time us", "algbw GB/s", "busbw GB/s", "verified"}};
  auto num = [](double v) { return v >= 100 ? fmt::format("{:.1f}", v) : fmt::format("{:.2f}", v); };
  for (const CurvePoint& p : points)
    rows.push_back({format_bytes(p.bytes), num(p.time_us), num(p.algbw_gb_per_s), num(p.busbw_gb_per_s),
                    p.verified ? "yes" : "NO"});
  return core::render_table(rows);
}

}  // namespace gpudoc::bench

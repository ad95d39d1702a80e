// The trace reader: validates a trace line by line and hands each record to a TraceVisitor
// (docs/trace-format.md); TraceColumns (telemetry/trace_builder.hpp), the visitor behind
// read_trace_file, turns them into columns. The file is never held: memory is one line plus what the visitor keeps.
//
// Sample and process lines (nearly all of a trace) go through detail::parse_flat_line, which
// splits a flat object without allocating; every other line, and any line the fast path is not
// certain about, goes through nlohmann::json (non-throwing mode). Both feed the same handlers,
// so a line means the same whichever parser read it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <new>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>

#include "telemetry/input.hpp"
#include "telemetry/trace.hpp"
#include "telemetry/trace_builder.hpp"
#include "telemetry/trace_line.hpp"

namespace gpudoc::telemetry {
namespace {

using detail::FlatField;
using detail::FlatKind;
using detail::FlatValue;
using json = nlohmann::json;

// start_unix_ns + t * 1e9 must not overflow for any accepted t (year 2096 is plenty).
constexpr std::int64_t kMaxStartUnixNs = 4'000'000'000'000'000'000;
constexpr double kMinT = -1.0;  // utilization samples may predate the start a little
constexpr double kTwoTo64 = 18446744073709551616.0;

// A key or kind from the file as messages quote it: a JSON string, so that control characters in
// it are escapes ("\u001b"), not bytes that reach the terminal with the error.
std::string quote_key(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

// ---- typed access, shared by both parsers ------------------------------------------------------

std::optional<double> number_of(const FlatValue& v) {
  if (v.kind != FlatKind::kNumber) return std::nullopt;
  return v.number;
}

std::optional<std::uint64_t> u64_of(const FlatValue& v) {
  if (v.kind != FlatKind::kNumber) return std::nullopt;
  if (v.exact_u64) return v.u64;
  // 1234.0 or 1e3 is still a whole number; accept it as one.
  if (v.number >= 0 && v.number < kTwoTo64 && std::floor(v.number) == v.number)
    return static_cast<std::uint64_t>(v.number);
  return std::nullopt;
}

// nlohmann values seen through the same lens as the fast path's.
FlatValue flat_of(const json& j) {
  FlatValue v;
  switch (j.type()) {
    case json::value_t::number_unsigned:
      v.kind = FlatKind::kNumber;
      v.u64 = j.get<std::uint64_t>();
      v.exact_u64 = true;
      v.number = static_cast<double>(v.u64);
      break;
    case json::value_t::number_integer:
      v.kind = FlatKind::kNumber;
      v.number = static_cast<double>(j.get<std::int64_t>());
      break;
    case json::value_t::number_float:
      v.number = j.get<double>();
      v.kind = std::isfinite(v.number) ? FlatKind::kNumber : FlatKind::kNested;
      break;
    case json::value_t::string:
      v.kind = FlatKind::kString;
      v.text = j.get_ref<const std::string&>();
      break;
    case json::value_t::boolean: v.kind = j.get<bool>() ? FlatKind::kTrue : FlatKind::kFalse; break;
    case json::value_t::null: v.kind = FlatKind::kNull; break;
    default: v.kind = FlatKind::kNested; break;
  }
  return v;
}

std::optional<double> number_of(const json& j) { return number_of(flat_of(j)); }
std::optional<std::uint64_t> u64_of(const json& j) { return u64_of(flat_of(j)); }
std::optional<std::int64_t> i64_of(const json& j) {
  FlatValue v = flat_of(j);
  if (v.kind != FlatKind::kNumber) return std::nullopt;
  if (v.exact_u64) {
    if (v.u64 > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
    return static_cast<std::int64_t>(v.u64);
  }
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (v.number >= -9.2e18 && v.number <= 9.2e18 && std::floor(v.number) == v.number)
    return static_cast<std::int64_t>(v.number);
  return std::nullopt;
}

// The parse error without nlohmann's "[json.exception.parse_error.101] parse error at line 1, "
// prefix. Only runs on a line already known to be invalid, so the exception costs nothing.
std::string json_error_detail(std::string_view line) {
  try {
    json ignored = json::parse(line);
    (void)ignored;
  } catch (const std::exception& e) {
    std::string what = e.what();
    auto at = what.find("line 1, ");
    if (at != std::string::npos) return what.substr(at + 8);
    auto bracket = what.find("] ");
    return bracket == std::string::npos ? what : what.substr(bracket + 2);
  }
  return "invalid JSON";
}

// Event kinds this version knows, with the keys it checks. Unknown kinds pass unchecked: that is
// how later versions add kinds without a format break.
enum class FieldType : std::uint8_t { kInteger, kUnsigned, kNumber, kString, kStringArray };
struct KnownField {
  std::string_view key;
  FieldType type;
  bool required;
};
struct KnownKind {
  std::string_view kind;
  bool needs_gpu;
  std::vector<KnownField> fields;
};

const std::vector<KnownKind>& known_kinds() {
  static const std::vector<KnownKind> kinds = {
      {"process_start", false, {{"pid", FieldType::kUnsigned, true}, {"command", FieldType::kStringArray, false}}},
      {"process_exit",
       false,
       {{"pid", FieldType::kUnsigned, true},
        {"exit_code", FieldType::kInteger, false},
        {"signal", FieldType::kInteger, false}}},
      {"xid", true, {{"code", FieldType::kUnsigned, true}}},
      {"step", false, {}},
      {"finding",
       false,
       {{"id", FieldType::kString, true},
        {"severity", FieldType::kString, true},
        {"message", FieldType::kString, true}}},
      {"annotation", false, {{"text", FieldType::kString, true}}},
      {"gpu_lost", true, {{"message", FieldType::kString, false}}},
      {"gpu_unresponsive",
       true,
       {{"call", FieldType::kString, false},
        {"group", FieldType::kString, false},
        {"waited_ms", FieldType::kNumber, false}}},
      {"gpu_recovered", true, {{"after", FieldType::kString, false}}},
      {"sampler_overrun", false, {{"dropped", FieldType::kUnsigned, true}}},
  };
  return kinds;
}

const char* describe(FieldType t) {
  switch (t) {
    case FieldType::kInteger: return "an integer";
    case FieldType::kUnsigned: return "a non-negative integer";
    case FieldType::kNumber: return "a number";
    case FieldType::kString: return "a string";
    case FieldType::kStringArray: return "a list of strings";
  }
  return "?";
}

bool has_type(const json& v, FieldType t) {
  switch (t) {
    case FieldType::kInteger: return i64_of(v).has_value();
    case FieldType::kUnsigned: return u64_of(v).has_value();
    case FieldType::kNumber: return number_of(v).has_value();
    case FieldType::kString: return v.is_string();
    case FieldType::kStringArray:
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_string(); });
  }
  return false;
}

class Reader {
 public:
  Reader(LineReader& lines, TraceVisitor& visitor) : lines_(lines), visitor_(visitor), name_(lines.name()) {}

  core::Status parse() {
    while (true) {
      auto next = lines_.next();
      if (!next) return next.error();
      if (!*next) break;
      line_no_ = lines_.line_no();
      const std::string_view line = **next;
      if (line.empty()) return bad("empty line (a trace has no blank lines)");
      if (auto st = parse_line(line, !lines_.terminated()); !st) {
        if (dropped_last_line_) break;
        return st.error();
      }
    }
    if (line_no_ == 0)
      return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: empty file (not a gpudoc trace)", name_));
    visitor_.finish(max_t_);
    return core::ok_status();
  }

 private:
  core::Error bad(const std::string& message) const {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{} line {}: {}", name_, line_no_, message));
  }

  // A line that is not JSON. The last line, without its newline, that starts like a record was
  // cut off by a crash or a full disk: after the header, what came before it is kept and the cut
  // is reported; the header itself cut off leaves nothing to read.
  core::Error invalid_json(std::string_view line, bool last_without_newline) {
    if (last_without_newline && line.front() == '{') {
      if (line_no_ > 1) {
        dropped_last_line_ = true;
        visitor_.warning(
            fmt::format("{} line {}: the recording was cut off in the middle of this line ({} bytes "
                        "without a newline): it is dropped; lines 1-{} are read",
                        name_, line_no_, line.size(), line_no_ - 1));
      }
      return core::Error(core::ErrorKind::kBadInput,
                         fmt::format("{}: truncated at line {}: the recording was cut off", name_, line_no_));
    }
    if (line_no_ == 1)
      return bad(fmt::format("not a gpudoc trace: the first line is not JSON ({})", json_error_detail(line)));
    return bad(fmt::format("not valid JSON: {}", json_error_detail(line)));
  }

  core::Status parse_line(std::string_view line, bool last_without_newline) {
    if (line_no_ == 1) {
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded()) return invalid_json(line, last_without_newline);
      if (auto st = parse_header(j); !st) return st;
      visitor_.header(header_);
      return core::ok_status();
    }
    if (end_line_ != 0) return bad(fmt::format("a record after the end line (line {})", end_line_));

    if (detail::parse_flat_line(line, fields_) == detail::FlatParse::kOk) {
      std::string_view type;
      for (const auto& f : fields_)
        if (f.key == "type" && f.value.kind == FlatKind::kString) type = f.value.text;
      if (type == "sample") return parse_sample();
      if (type == "process") return parse_process();
    }

    json j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return invalid_json(line, last_without_newline);
    if (!j.is_object()) return bad("a record must be a JSON object");
    auto type_it = j.find("type");
    if (type_it == j.end()) return bad("missing \"type\"");
    if (!type_it->is_string()) return bad("\"type\" must be a string");
    const std::string type = type_it->get<std::string>();
    if (type == "sample" || type == "process") {
      fields_.clear();
      for (auto it = j.begin(); it != j.end(); ++it) fields_.push_back({it.key(), flat_of(it.value())});
      return type == "sample" ? parse_sample() : parse_process();
    }
    if (type == "event") return parse_event(std::move(j));
    if (type == "end") return parse_end(j);
    if (type == "header") return bad("a second header (only line 1 is a header)");
    return bad(
        fmt::format("unknown record type {} (this gpudoc reads header, sample, process, event, end)", quote_key(type)));
  }

  // ---- header --------------------------------------------------------------------------------

  core::Status parse_header(const json& j) {
    if (!j.is_object() || !j.contains("type") || j["type"] != "header")
      return bad("not a gpudoc trace: the first line must be the header ({\"type\":\"header\",...})");
    auto format = j.find("format");
    if (format == j.end() || !format->is_string() || *format != "gpudoc-trace")
      return bad(fmt::format("not a gpudoc trace: \"format\" is {}, expected \"gpudoc-trace\"",
                             format == j.end() ? std::string("missing") : format->dump()));
    auto version = j.find("version");
    if (version == j.end()) return bad("\"version\" is missing");
    auto v = i64_of(*version);
    if (!v) return bad("\"version\" must be an integer");
    if (*v > kTraceFormatVersion)
      return bad(fmt::format("trace format version {} was written by a newer gpudoc; this one reads version {}", *v,
                             kTraceFormatVersion));
    if (*v != kTraceFormatVersion)
      return bad(fmt::format("trace format version {} is not supported; this gpudoc reads version {}", *v,
                             kTraceFormatVersion));
    TraceHeader& h = header_;
    h.version = static_cast<int>(*v);

    auto start = j.find("start_unix_ns");
    if (start == j.end()) return bad("\"start_unix_ns\" is missing");
    auto s = i64_of(*start);
    if (!s || *s < 0 || *s > kMaxStartUnixNs)
      return bad(fmt::format("\"start_unix_ns\" must be an integer between 0 and {}", kMaxStartUnixNs));
    h.start_unix_ns = *s;

    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      const json& val = it.value();
      core::Status st;
      if (key == "type" || key == "format" || key == "version" || key == "start_unix_ns") continue;
      if (key == "gpudoc_version")
        st = get_string(val, key, h.gpudoc_version);
      else if (key == "host")
        st = get_string(val, key, h.host);
      else if (key == "backend")
        st = get_string(val, key, h.system.backend);
      else if (key == "driver_version")
        st = get_string(val, key, h.system.driver_version);
      else if (key == "cuda_driver_version")
        st = get_string(val, key, h.system.cuda_driver_version);
      else if (key == "nvml_version")
        st = get_string(val, key, h.system.nvml_version);
      else if (key == "command")
        st = parse_command(val);
      else if (key == "gpus")
        st = parse_gpus(val);
      else if (key == "metrics")
        st = parse_metrics(val);
      else
        h.extra[key] = val;
      if (!st) return st;
    }
    if (!j.contains("gpus")) return bad("\"gpus\" is missing");
    if (!j.contains("metrics")) return bad("\"metrics\" is missing");

    ngpus_ = h.gpus.size();
    // Sample keys: this gpudoc's catalog, plus what the header declares (a newer gpudoc's metric
    // is then checked and skipped, not an error).
    for (gpu::Metric m : gpu::all_metrics()) metric_keys_.emplace(gpu::info(m).name, static_cast<int>(gpu::index(m)));
    for (const auto& col : h.metrics) metric_keys_.emplace(col.name, -1);
    return core::ok_status();
  }

  core::Status get_string(const json& v, std::string_view path, std::string& out) {
    if (!v.is_string()) return bad(fmt::format("{} must be a string", quote_key(path)));
    out = v.get<std::string>();
    return core::ok_status();
  }

  template <class T>
  core::Status get_opt_u(const json& obj, std::string_view path, const char* key, std::optional<T>& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return core::ok_status();
    auto u = u64_of(*it);
    if (!u || *u > std::numeric_limits<T>::max())
      return bad(fmt::format("\"{}.{}\" must be a non-negative integer", path, key));
    out = static_cast<T>(*u);
    return core::ok_status();
  }

  core::Status get_opt_int(const json& obj, std::string_view path, const char* key, std::optional<int>& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return core::ok_status();
    auto i = i64_of(*it);
    if (!i || *i < std::numeric_limits<int>::min() || *i > std::numeric_limits<int>::max())
      return bad(fmt::format("\"{}.{}\" must be an integer", path, key));
    out = static_cast<int>(*i);
    return core::ok_status();
  }

  core::Status get_opt_double(const json& obj, std::string_view path, const char* key, std::optional<double>& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return core::ok_status();
    auto d = number_of(*it);
    if (!d) return bad(fmt::format("\"{}.{}\" must be a number", path, key));
    out = *d;
    return core::ok_status();
  }

  core::Status get_opt_string(const json& obj, std::string_view path, const char* key, std::string& out) {
    auto it = obj.find(key);
    if (it == obj.end()) return core::ok_status();
    return get_string(*it, fmt::format("{}.{}", path, key), out);
  }

  core::Status parse_command(const json& v) {
    if (!v.is_array()) return bad("\"command\" must be a list of strings");
    for (const auto& a : v) {
      if (!a.is_string()) return bad("\"command\" must be a list of strings");
      header_.command.push_back(a.get<std::string>());
    }
    return core::ok_status();
  }

  core::Status parse_gpus(const json& v) {
    if (!v.is_array()) return bad("\"gpus\" must be a list");
    if (v.size() > kMaxGpus)
      return bad(fmt::format("the header lists {} GPUs; at most {} are supported", v.size(), kMaxGpus));
    auto& gpus = header_.gpus;
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json& g = v[i];
      std::string path = fmt::format("gpus[{}]", i);
      if (!g.is_object()) return bad(fmt::format("{} must be an object", quote_key(path)));
      gpu::DeviceInfo d;
      d.index = static_cast<int>(i);
      std::optional<int> index;
      core::Status st;
      if (!(st = get_opt_int(g, path, "index", index))) return st;
      if (index) {
        if (*index < 0) return bad(fmt::format("\"{}.index\" must be a non-negative integer", path));
        d.index = *index;
      }
      if (!(st = get_opt_string(g, path, "name", d.name))) return st;
      if (!(st = get_opt_string(g, path, "uuid", d.uuid))) return st;
      if (!(st = get_opt_string(g, path, "pci_bus_id", d.pci_bus_id))) return st;
      if (!(st = get_opt_u(g, path, "memory_total_bytes", d.memory_total_bytes))) return st;
      if (!(st = get_opt_double(g, path, "sm_clock_max_mhz", d.sm_clock_max_mhz))) return st;
      if (!(st = get_opt_double(g, path, "memory_clock_max_mhz", d.memory_clock_max_mhz))) return st;
      if (!(st = get_opt_int(g, path, "pcie_link_generation_max", d.pcie_link_generation_max))) return st;
      if (!(st = get_opt_int(g, path, "pcie_link_width_max", d.pcie_link_width_max))) return st;
      if (!(st = get_opt_double(g, path, "power_limit_default_watts", d.power_limit_default_watts))) return st;
      if (!(st = get_opt_double(g, path, "temperature_slowdown_celsius", d.temperature_slowdown_celsius))) return st;
      if (!(st = get_opt_double(g, path, "temperature_shutdown_celsius", d.temperature_shutdown_celsius))) return st;
      if (!(st = get_opt_double(g, path, "temperature_gpu_max_celsius", d.temperature_gpu_max_celsius))) return st;
      if (!(st = get_opt_double(g, path, "temperature_memory_max_celsius", d.temperature_memory_max_celsius)))
        return st;
      if (!(st = get_opt_int(g, path, "compute_capability_major", d.compute_capability_major))) return st;
      if (!(st = get_opt_int(g, path, "compute_capability_minor", d.compute_capability_minor))) return st;
      if (auto it = g.find("mig_enabled"); it != g.end()) {
        if (!it->is_boolean()) return bad(fmt::format("\"{}.mig_enabled\" must be true or false", path));
        d.mig_enabled = it->get<bool>();
      }
      if (auto it = g.find("mig_instances"); it != g.end()) {
        if (!it->is_array()) return bad(fmt::format("\"{}.mig_instances\" must be a list", path));
        for (std::size_t k = 0; k < it->size(); ++k) {
          const json& mj = (*it)[k];
          std::string mpath = fmt::format("{}.mig_instances[{}]", path, k);
          if (!mj.is_object()) return bad(fmt::format("{} must be an object", quote_key(mpath)));
          gpu::MigInstance m;
          std::optional<std::uint32_t> gi;
          std::optional<std::uint32_t> ci;
          if (!(st = get_opt_u(mj, mpath, "gpu_instance_id", gi))) return st;
          if (!(st = get_opt_u(mj, mpath, "compute_instance_id", ci))) return st;
          m.gpu_instance_id = gi.value_or(0);
          m.compute_instance_id = ci.value_or(0);
          if (!(st = get_opt_string(mj, mpath, "uuid", m.uuid))) return st;
          if (!(st = get_opt_u(mj, mpath, "memory_total_bytes", m.memory_total_bytes))) return st;
          if (!(st = get_opt_u(mj, mpath, "multiprocessor_count", m.multiprocessor_count))) return st;
          d.mig_instances.push_back(std::move(m));
        }
      }
      gpus.push_back(std::move(d));
    }
    return core::ok_status();
  }

  core::Status parse_metrics(const json& v) {
    if (!v.is_array()) return bad("\"metrics\" must be a list");
    for (std::size_t i = 0; i < v.size(); ++i) {
      const json& mj = v[i];
      std::string path = fmt::format("metrics[{}]", i);
      if (!mj.is_object()) return bad(fmt::format("{} must be an object", quote_key(path)));
      MetricColumn col;
      auto name = mj.find("name");
      if (name == mj.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
        return bad(fmt::format("\"{}.name\" must be a non-empty string", path));
      col.name = name->get<std::string>();
      core::Status st;
      if (!(st = get_opt_string(mj, path, "unit", col.unit))) return st;
      if (!(st = get_opt_string(mj, path, "group", col.group))) return st;
      std::optional<std::uint32_t> period;
      if (!(st = get_opt_u(mj, path, "period_ms", period))) return st;
      col.period_ms = period.value_or(0);
      header_.metrics.push_back(std::move(col));
    }
    return core::ok_status();
  }

  // ---- records -------------------------------------------------------------------------------

  core::Status check_t(std::optional<double> t, bool present, double& out) {
    if (!present) return bad("\"t\" is missing");
    if (!t || !(*t >= kMinT && *t <= kMaxTraceSeconds))
      return bad(fmt::format("\"t\" must be a number of seconds between -1 and {:.0f}", kMaxTraceSeconds));
    out = *t;
    max_t_ = std::max(max_t_, *t);
    return core::ok_status();
  }

  core::Status check_gpu(std::optional<std::uint64_t> g, bool present, std::size_t& out) {
    if (!present) return bad("\"gpu\" is missing");
    if (!g) return bad("\"gpu\" must be a non-negative integer");
    if (*g >= ngpus_)
      return bad(ngpus_ == 0
                     ? fmt::format("\"gpu\" is {} but the header lists no GPUs", *g)
                     : fmt::format("\"gpu\" is {} but the header lists {} GPUs (0..{})", *g, ngpus_, ngpus_ - 1));
    out = static_cast<std::size_t>(*g);
    return core::ok_status();
  }

  core::Status parse_sample() {
    const FlatValue* t = nullptr;
    const FlatValue* g = nullptr;
    for (const auto& f : fields_) {
      if (f.key == "t")
        t = &f.value;
      else if (f.key == "gpu")
        g = &f.value;
    }
    double tv = 0;
    std::size_t gi = 0;
    if (auto st = check_t(t ? number_of(*t) : std::nullopt, t != nullptr, tv); !st) return st;
    if (auto st = check_gpu(g ? u64_of(*g) : std::nullopt, g != nullptr, gi); !st) return st;
    // (An error ends the whole read, so values handed on before a bad one in the same line do
    // not matter.)
    for (const auto& f : fields_) {
      if (f.key == "type" || f.key == "t" || f.key == "gpu") continue;
      auto it = metric_keys_.find(f.key);
      if (it == metric_keys_.end())
        return bad(
            fmt::format("unknown metric {} in a sample (neither in the header's \"metrics\" nor in this "
                        "gpudoc's catalog)",
                        quote_key(f.key)));
      auto v = number_of(f.value);
      if (!v) return bad(fmt::format("{} must be a number", quote_key(f.key)));
      if (it->second >= 0) visitor_.sample(gi, static_cast<gpu::Metric>(it->second), tv, *v);
    }
    return core::ok_status();
  }

  core::Status parse_process() {
    ProcessPoint p;
    const FlatValue* t = nullptr;
    const FlatValue* g = nullptr;
    bool have_pid = false;
    for (const auto& f : fields_) {
      const std::string_view k = f.key;
      const FlatValue& v = f.value;
      if (k == "t")
        t = &v;
      else if (k == "gpu")
        g = &v;
      else if (k == "pid") {
        auto u = u64_of(v);
        if (!u || *u > std::numeric_limits<std::uint32_t>::max()) return bad("\"pid\" must be a process id");
        p.sample.pid = static_cast<std::uint32_t>(*u);
        have_pid = true;
      } else if (k == "name") {
        if (v.kind != FlatKind::kString) return bad("\"name\" must be a string");
        p.sample.name.assign(v.text);
      } else if (k == "sm_utilization_percent" || k == "memory_utilization_percent") {
        auto d = number_of(v);
        if (!d) return bad(fmt::format("{} must be a number", quote_key(k)));
        (k == "sm_utilization_percent" ? p.sample.sm_utilization_percent : p.sample.memory_utilization_percent) = *d;
      } else if (k == "memory_used_bytes") {
        auto u = u64_of(v);
        if (!u) return bad("\"memory_used_bytes\" must be a non-negative integer");
        p.sample.memory_used_bytes = *u;
      } else if (k == "gpu_instance_id" || k == "compute_instance_id") {
        auto u = u64_of(v);
        if (!u || *u > std::numeric_limits<std::uint32_t>::max())
          return bad(fmt::format("{} must be a non-negative integer", quote_key(k)));
        (k == "gpu_instance_id" ? p.sample.gpu_instance_id : p.sample.compute_instance_id) =
            static_cast<std::uint32_t>(*u);
      }
      // Other keys: a newer gpudoc's additions; ignored (docs/trace-format.md, "Versions").
    }
    std::size_t gi = 0;
    if (auto st = check_t(t ? number_of(*t) : std::nullopt, t != nullptr, p.t); !st) return st;
    if (auto st = check_gpu(g ? u64_of(*g) : std::nullopt, g != nullptr, gi); !st) return st;
    if (!have_pid) return bad("\"pid\" is missing");
    p.sample.time_unix_ns = header_.start_unix_ns + std::llround(p.t * 1e9);
    visitor_.process(gi, std::move(p));
    return core::ok_status();
  }

  core::Status parse_event(json j) {
    Event e;
    auto t = j.find("t");
    if (auto st = check_t(t != j.end() ? number_of(*t) : std::nullopt, t != j.end(), e.t); !st) return st;
    auto kind = j.find("kind");
    if (kind == j.end()) return bad("\"kind\" is missing");
    if (!kind->is_string() || kind->get_ref<const std::string&>().empty())
      return bad("\"kind\" must be a non-empty string");
    e.kind = kind->get<std::string>();
    if (auto g = j.find("gpu"); g != j.end()) {
      std::size_t gi = 0;
      if (auto st = check_gpu(u64_of(*g), true, gi); !st) return st;
      e.gpu = static_cast<int>(gi);
    }
    for (const auto& k : known_kinds()) {
      if (k.kind != e.kind) continue;
      if (k.needs_gpu && !e.gpu) return bad(fmt::format("a {} event needs \"gpu\"", quote_key(e.kind)));
      for (const auto& f : k.fields) {
        auto it = j.find(f.key);
        if (it == j.end()) {
          if (f.required) return bad(fmt::format("a {} event needs {}", quote_key(e.kind), quote_key(f.key)));
          continue;
        }
        if (!has_type(*it, f.type))
          return bad(fmt::format("{} of a {} event must be {}", quote_key(f.key), quote_key(e.kind), describe(f.type)));
      }
    }
    j.erase("type");
    j.erase("t");
    j.erase("kind");
    j.erase("gpu");
    e.fields = std::move(j);
    visitor_.event(std::move(e));
    return core::ok_status();
  }

  core::Status parse_end(const json& j) {
    TraceSummary s;
    auto t = j.find("t");
    if (auto st = check_t(t != j.end() ? number_of(*t) : std::nullopt, t != j.end(), s.t); !st) return st;
    for (const char* key : {"sample_lines", "dropped_records"}) {
      auto it = j.find(key);
      if (it == j.end()) return bad(fmt::format("\"{}\" is missing", key));
      auto u = u64_of(*it);
      if (!u) return bad(fmt::format("\"{}\" must be a non-negative integer", key));
      (std::string_view(key) == "sample_lines" ? s.sample_lines : s.dropped_records) = *u;
    }
    auto reason = j.find("reason");
    if (reason == j.end()) return bad("\"reason\" is missing");
    if (!reason->is_string()) return bad("\"reason\" must be a string");
    s.reason = reason->get<std::string>();
    visitor_.end(s);
    end_line_ = line_no_;
    return core::ok_status();
  }

  LineReader& lines_;
  TraceVisitor& visitor_;
  std::string name_;
  TraceHeader header_;
  std::size_t ngpus_ = 0;
  std::size_t line_no_ = 0;
  std::size_t end_line_ = 0;
  bool dropped_last_line_ = false;
  double max_t_ = 0;
  std::vector<FlatField> fields_;                          // reused: no per-line allocation
  std::unordered_map<std::string_view, int> metric_keys_;  // name -> metric index, -1 = declared, unknown
};

// Runs `read` with the reader's promise: never an exception out, an allocation failure is the
// input's size, not a crash.
template <class F>
auto guarded(std::string_view name, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const std::bad_alloc&) {
    return core::Error(core::ErrorKind::kBadInput, fmt::format("{}: too large to read into memory", name));
  } catch (const std::exception& e) {
    // Not expected (the parsers run in non-throwing mode); a bug, but never an escape.
    return core::Error(core::ErrorKind::kInternal, fmt::format("{}: reading the trace failed: {}", name, e.what()));
  }
}

}  // namespace

core::Status visit_trace_lines(LineReader& lines, TraceVisitor& visitor) {
  return guarded(lines.name(), [&]() -> core::Status { return Reader(lines, visitor).parse(); });
}

core::Result<Trace> read_trace_lines(LineReader& lines, const ReadOptions& options) {
  return guarded(lines.name(), [&]() -> core::Result<Trace> {
    TraceColumns columns(options);
    if (auto st = Reader(lines, columns).parse(); !st) return st.error();
    return columns.take_trace();
  });
}

core::Result<Trace> parse_trace(std::string_view content, std::string_view name, const ReadOptions& options) {
  LineReader lines = LineReader::of_text(content, std::string(name));
  return read_trace_lines(lines, options);
}

core::Result<Trace> read_trace_file(const std::string& path, const ReadOptions& options) {
  auto lines = LineReader::open(path);
  if (!lines) return lines.error();
  return read_trace_lines(*lines, options);
}

void visit_trace(const Trace& trace, TraceVisitor& visitor) {
  visitor.header(trace.header);
  for (std::size_t g = 0; g < trace.gpus.size(); ++g)
    for (gpu::Metric m : gpu::all_metrics()) {
      const Series& s = trace.gpus[g].metric(m);
      for (std::size_t i = 0; i < s.size(); ++i) visitor.sample(g, m, s.t[i], s.v[i]);
    }
  for (std::size_t g = 0; g < trace.gpus.size(); ++g)
    for (ProcessPoint p : trace.gpus[g].processes) visitor.process(g, std::move(p));
  for (Event e : trace.events) visitor.event(std::move(e));
  if (trace.end) visitor.end(*trace.end);
  for (const auto& w : trace.warnings) visitor.warning(w);
  visitor.finish(trace.duration_s);
}

}  // namespace gpudoc::telemetry

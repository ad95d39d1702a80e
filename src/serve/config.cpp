#include "serve/config.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/file.hpp"
#include "serve/pod_resources.hpp"
#include "serve/web_state.hpp"
#include "store/database.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::serve {
namespace {

core::Error usage(std::string message) { return core::Error(core::ErrorKind::kUsage, std::move(message)); }

constexpr std::string_view kListenForms =
    "HOST:PORT, [IPV6]:PORT or PORT, loopback (e.g. 127.0.0.1:9401, 0.0.0.0:9401, [::1]:9401, 9401)";

core::Result<int> parse_port(std::string_view text, std::string_view whole) {
  int port = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || port < 0 || port > 65535)
    return usage(
        fmt::format("--listen {}: the port must be a number from 0 to 65535; expected {}", whole, kListenForms));
  return port;
}

core::Result<double> seconds(const nlohmann::json& v, std::string_view key, double lo, double hi,
                             std::string_view name) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    return usage(fmt::format("{}: \"{}\" must be a number of seconds from {} to {}", name, key, lo, hi));
  return v.get<double>();
}

core::Result<std::string> text_value(const nlohmann::json& v, std::string_view key, std::string_view name) {
  if (!v.is_string() || v.get<std::string>().empty())
    return usage(fmt::format("{}: \"{}\" must be a non-empty string", name, key));
  return v.get<std::string>();
}

core::Status read_periods(const nlohmann::json& v, std::string_view name, ConfigFile& c) {
  if (!v.is_object())
    return usage(fmt::format("{}: \"periods\" must be an object of group names and milliseconds", name));
  for (const auto& [group, ms] : v.items()) {
    if (!ms.is_number_integer() || ms.get<long long>() < 0 || ms.get<long long>() > 3600000)
      return usage(
          fmt::format("{}: periods.{} must be a whole number of milliseconds (0 turns the group off)", name, group));
    c.periods[group] = static_cast<int>(ms.get<long long>());
  }
  return core::ok_status();
}

// The keys of who holds each GPU: whether `key` is one (false: unknown here), read into `c`.
core::Result<bool> read_attribution_key(const std::string& key, const nlohmann::json& v, std::string_view name,
                                        ConfigFile& c) {
  if (key == "kubernetes_pod_resources") {
    if (v.is_boolean()) {
      c.kubernetes_pod_resources = v.get<bool>() ? std::string(kDefaultPodResourcesSocket) : std::string();
      return true;
    }
    if (!v.is_string() || v.get<std::string>().empty())
      return usage(fmt::format("{}: \"kubernetes_pod_resources\" must be true, false or the kubelet's socket", name));
    c.kubernetes_pod_resources = v.get<std::string>();
    return true;
  }
  if (key == "hpc_job_mapping_dir") {
    auto s = text_value(v, key, name);
    if (!s) return s.error();
    c.hpc_job_mapping_dir = *s;
    return true;
  }
  if (key == "attribution_every_s") {
    auto s = seconds(v, key, 1, 3600, name);
    if (!s) return s.error();
    c.attribution_every_s = *s;
    return true;
  }
  return false;
}

}  // namespace

core::Result<ListenAddress> parse_listen(std::string_view text) {
  if (text.empty()) return usage(fmt::format("--listen: empty; expected {}", kListenForms));
  ListenAddress a;
  std::string_view port_text;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close == 1 || close + 1 >= text.size() || text[close + 1] != ':')
      return usage(fmt::format("--listen {}: expected {}", text, kListenForms));
    a.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else if (const auto colon = text.rfind(':'); colon == std::string_view::npos) {
    a.host = "127.0.0.1";
    port_text = text;
  } else {
    if (text.find(':') != colon)
      return usage(fmt::format("--listen {}: an IPv6 address goes in brackets; expected {}", text, kListenForms));
    // Exporters read ":PORT" as every interface; gpudoc serve listens on loopback unless told, so
    // the form is refused rather than read either way.
    if (colon == 0)
      return usage(
          fmt::format("--listen {0}: say where: 127.0.0.1{0} for this machine only, or 0.0.0.0{0} for "
                      "every interface (reachable from the network; what exporters mean by {0})",
                      text));
    a.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  auto port = parse_port(port_text, text);
  if (!port) return port.error();
  a.port = *port;
  return a;
}

core::Result<ConfigFile> parse_config(std::string_view text, std::string_view name) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return usage(fmt::format("{}: not valid JSON", name));
  if (!j.is_object()) return usage(fmt::format("{}: expected a JSON object of settings", name));
  ConfigFile c;
  for (const auto& [key, v] : j.items()) {
    if (key == "listen") {
      auto s = text_value(v, key, name);
      if (!s) return s.error();
      c.listen = *s;
    } else if (key == "store") {
      auto s = text_value(v, key, name);
      if (!s) return s.error();
      c.store = *s;
    } else if (key == "dcgm_compatible") {
      if (!v.is_boolean()) return usage(fmt::format("{}: \"dcgm_compatible\" must be true or false", name));
      c.dcgm_compatible = v.get<bool>();
    } else if (key == "diagnose_window_s" || key == "diagnose_every_s" || key == "history_s") {
      const bool history = key == "history_s";
      const bool window = key == "diagnose_window_s";
      auto s = seconds(v, key, history ? 60 : window ? 2 : 1, history ? 86400 : 3600, name);
      if (!s) return s.error();
      (history ? c.history_s : window ? c.diagnose_window_s : c.diagnose_every_s) = *s;
    } else if (key == "periods") {
      if (auto s = read_periods(v, name, c); !s) return s.error();
    } else if (key == "web_config_file") {
      auto s = text_value(v, key, name);
      if (!s) return s.error();
      c.web_config_file = *s;
    } else if (key == "log_format") {
      auto f = v.is_string() ? core::parse_log_format(v.get<std::string>()) : core::parse_log_format("");
      if (!f) return usage(fmt::format("{}: \"log_format\" must be \"text\", \"logfmt\" or \"json\"", name));
      c.log_format = *f;
    } else if (auto attribution = read_attribution_key(key, v, name, c); !attribution) {
      return attribution.error();
    } else if (!*attribution) {
      return usage(
          fmt::format("{}: unknown setting \"{}\" (known: listen, dcgm_compatible, diagnose_window_s, "
                      "diagnose_every_s, history_s, store, periods, web_config_file, log_format, "
                      "kubernetes_pod_resources, hpc_job_mapping_dir, attribution_every_s)",
                      name, key));
    }
  }
  return c;
}

core::Result<ConfigFile> load_config(const std::string& path) {
  auto text = core::read_file(path, {.max_bytes = 4 << 20, .what = "a serve config"});
  if (!text) return core::Error(core::ErrorKind::kUsage, fmt::format("--config: {}", text.error().message()));
  return parse_config(*text, path);
}

std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> default_periods() {
  auto periods = telemetry::SamplerConfig::default_periods();
  periods[gpu::index(gpu::MetricGroup::kGpm)] = kGpmPeriod;
  return periods;
}

std::vector<std::string> period_overrides(const ConfigFile& file, const std::vector<std::string>& flags) {
  std::vector<std::string> periods;
  for (const auto& [group, ms] : file.periods) periods.push_back(fmt::format("{}={}", group, ms));
  periods.insert(periods.end(), flags.begin(), flags.end());
  return periods;
}

core::Result<telemetry::SamplerConfig> sampler_config(const Settings& settings, const std::vector<int>& gpus,
                                                      bool read_events) {
  return telemetry::SamplerConfig::with_periods(default_periods(), settings.periods, gpus, read_events);
}

core::Result<Settings> resolve_settings(const SettingFlags& f, const ConfigFile& file) {
  Settings s;
  const std::string listen = !f.listen.empty() ? f.listen : file.listen.value_or("");
  if (!listen.empty()) {
    auto a = parse_listen(listen);
    if (!a) return a.error();
    s.listen = *a;
  }
  s.dcgm_compatible = f.dcgm_compatible || file.dcgm_compatible.value_or(false);
  s.diagnose_window_s = f.diagnose_window_s > 0 ? f.diagnose_window_s : file.diagnose_window_s.value_or(120);
  s.diagnose_every_s = f.diagnose_every_s > 0 ? f.diagnose_every_s : file.diagnose_every_s.value_or(10);
  s.history_s = f.history_s > 0 ? f.history_s : file.history_s.value_or(600);
  const std::string socket =
      !f.kubernetes_pod_resources.empty() ? f.kubernetes_pod_resources : file.kubernetes_pod_resources.value_or("");
  if (!socket.empty()) s.attribution.pod_resources_socket = socket;
  const std::string dir =
      !f.hpc_job_mapping_dir.empty() ? f.hpc_job_mapping_dir : file.hpc_job_mapping_dir.value_or("");
  if (!dir.empty()) s.attribution.hpc_job_mapping_dir = dir;
  const double every = f.attribution_every_s > 0 ? f.attribution_every_s : file.attribution_every_s.value_or(10);
  s.attribution.every = std::chrono::milliseconds(static_cast<std::int64_t>(every * 1000));
  s.web_config_file = !f.web_config_file.empty() ? f.web_config_file : file.web_config_file.value_or("");
  if (!f.log_format.empty()) {
    auto format = core::parse_log_format(f.log_format);
    if (!format) return format.error();
    s.log_format = *format;
  } else {
    s.log_format = file.log_format.value_or(core::LogFormat::kText);
  }
  return s;
}

core::LogFormat flag_log_format(const SettingFlags& flags) {
  auto format = core::parse_log_format(flags.log_format);
  return format ? *format : core::LogFormat::kText;
}

core::Result<Settings> resolve(const SettingFlags& flags) {
  ConfigFile file;
  if (!flags.config.empty()) {
    auto parsed = load_config(flags.config);
    if (!parsed) return parsed.error();
    file = std::move(*parsed);
  }
  auto s = resolve_settings(flags, file);
  if (!s) return s.error();
  if (!flags.no_store) {
    auto path = store::default_store_path(flags.store ? flags.store : file.store);
    if (!path) return path.error();
    s->store = *path;
  }
  s->periods = period_overrides(file, flags.periods);
  // Checked now, as the server will read it at start: a bad file is said before any GPU is opened.
  if (!s->web_config_file.empty())
    if (auto web = load_web_state(s->web_config_file, nullptr); !web) return web.error();
  return s;
}

}  // namespace gpudoc::serve

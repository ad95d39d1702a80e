// gpudoc::serve config — what `gpudoc serve` is told: where to listen, how it diagnoses, what it
// reads of the store, from flags and an optional JSON file (flags win). Pure: text in, values or a
// usage error naming the key and the file out.
//
//   auto a = serve::parse_listen("10.0.0.7:9401");        // Result<ListenAddress>
//   auto c = serve::parse_config(text, "/etc/gpudoc/serve.json");   // Result<ConfigFile>
//
// The file (every key optional, any other key an error):
//   {"listen": "127.0.0.1:9401", "dcgm_compatible": false, "diagnose_window_s": 120,
//    "diagnose_every_s": 10, "history_s": 600, "store": "/var/lib/gpudoc/gpudoc.db",
//    "periods": {"fast": 100, "utilization": 1000}, "web_config_file": "/etc/gpudoc/web.yml",
//    "log_format": "logfmt", "kubernetes_pod_resources": true, "hpc_job_mapping_dir": "/run/gpu-jobs",
//    "attribution_every_s": 10}
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.hpp"
#include "core/structured_log.hpp"
#include "gpu/metrics.hpp"
#include "serve/attributor.hpp"
#include "telemetry/sampler.hpp"

namespace gpudoc::serve {

inline constexpr int kDefaultPort = 9401;  // beside dcgm-exporter's 9400 (9402 is cert-manager's); deploy/ uses it

struct ListenAddress {
  std::string host;  // "127.0.0.1", "::1", "0.0.0.0", "node7"
  int port = 0;      // 0..65535 (0: any free port)
};

// "HOST:PORT", "[IPV6]:PORT", or ":PORT" / "PORT" (loopback). Errors: kUsage saying which form was
// expected and what was wrong (no port, a port out of range, an empty host in brackets).
[[nodiscard]] core::Result<ListenAddress> parse_listen(std::string_view text);

struct ConfigFile {
  std::optional<std::string> listen;
  std::optional<bool> dcgm_compatible;
  std::optional<double> diagnose_window_s;
  std::optional<double> diagnose_every_s;
  std::optional<double> history_s;
  std::optional<std::string> store;
  std::map<std::string, int> periods;  // group name -> ms, checked by the sampler flags' rules
  std::optional<std::string> web_config_file{};
  std::optional<core::LogFormat> log_format{};
  std::optional<std::string> kubernetes_pod_resources{};  // true: the default socket; false: "" (off)
  std::optional<std::string> hpc_job_mapping_dir{};
  std::optional<double> attribution_every_s{};
};

// Errors: kUsage naming `name` and the key: not JSON, not an object, an unknown key, a value of the
// wrong type or out of range (seconds: window 2..3600, every 1..3600, history 60..86400,
// attribution_every_s 1..3600; log_format: text, logfmt or json).
[[nodiscard]] core::Result<ConfigFile> parse_config(std::string_view text, std::string_view name);

// parse_config of the file at `path` (at most 4 MiB). Errors: kUsage "--config: ..." when it cannot
// be read, else parse_config's.
[[nodiscard]] core::Result<ConfigFile> load_config(const std::string& path);

// What serve runs with: each flag given (a number above 0, a text not empty, a flag set) over the
// file's value over the default.
struct SettingFlags {
  std::string listen;
  bool dcgm_compatible = false;
  double diagnose_window_s = 0;            // 0: the file's, else 120
  double diagnose_every_s = 0;             // 0: the file's, else 10
  double history_s = 0;                    // 0: the file's, else 600
  std::string config{};                    // --config FILE; empty: none
  std::optional<std::string> store{};      // --store; nullopt: the file's, else store::default_store_path's
  bool no_store = false;                   // --no-store
  std::vector<std::string> periods{};      // --period GROUP=MS
  std::string web_config_file{};           // --web-config-file FILE; empty: the file's, else none
  std::string log_format{};                // --log-format; empty: the file's, else text
  std::string kubernetes_pod_resources{};  // --kubernetes-pod-resources[=SOCKET]; empty: the file's, else off
  std::string hpc_job_mapping_dir{};       // --hpc-job-mapping-dir DIR; empty: the file's, else none
  double attribution_every_s = 0;          // --attribution-every; 0: the file's, else 10
};
struct Settings {
  ListenAddress listen{"127.0.0.1", kDefaultPort};
  bool dcgm_compatible = false;
  double diagnose_window_s = 120;
  double diagnose_every_s = 10;
  double history_s = 600;
  std::optional<std::string> store{};  // the store's path (resolve only); nullopt: no store
  std::vector<std::string> periods{};  // GROUP=MS over default_periods(): period_overrides (resolve only)
  std::string web_config_file{};       // TLS and basic auth (serve/web_config.hpp); empty: none
  core::LogFormat log_format = core::LogFormat::kText;
  AttributionOptions attribution{};  // the kubelet's socket, the mapping folder, how often they are read
};
// Errors: parse_listen's for the address in effect, --log-format's.
[[nodiscard]] core::Result<Settings> resolve_settings(const SettingFlags& flags, const ConfigFile& file);
// The whole of it: the file at flags.config read (when given), resolve_settings, the store's path,
// the period overrides, and the web config checked as the server will read it (its certificate
// and key loaded). Errors: load_config's, resolve_settings', store::default_store_path's, the web
// config's (serve/web_state.hpp: kUsage naming the file, and the key or the certificate file).
[[nodiscard]] core::Result<Settings> resolve(const SettingFlags& flags);
// The log format the flags ask for, to say an error of resolve's in it: --log-format's when valid,
// else text (the config file's is not known before it is read).
[[nodiscard]] core::LogFormat flag_log_format(const SettingFlags& flags);

// How often serve reads GPM: every second, not every 200 ms as the recorder does (--period gpm=200
// restores that). GPM's metrics are differences of two counter snapshots, whose interval is ours to
// choose (no sensor ticks under it); docs/results/serve.md has what each period costs.
inline constexpr std::chrono::milliseconds kGpmPeriod{1000};
// The sampler's periods serve starts from: the recorder's (telemetry::SamplerConfig) but GPM at
// kGpmPeriod. Utilization is drained every 10 s as in a recording: each drain costs CPU whatever it
// returns, and every sample still arrives, with the driver's timestamp, at most ~10 s late.
[[nodiscard]] std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> default_periods();
// The GROUP=MS values laid over default_periods(): the config file's, then the flags' --period
// (the later wins).
[[nodiscard]] std::vector<std::string> period_overrides(const ConfigFile& file, const std::vector<std::string>& flags);
// The sampler serve runs for `settings`: default_periods() with settings.periods laid over them, on
// `gpus` (empty: all), listening for XID events when `read_events`. Errors: kUsage, a period
// telemetry::SamplerConfig::set_periods refuses (an unknown group, faster than the sensor allows).
[[nodiscard]] core::Result<telemetry::SamplerConfig> sampler_config(const Settings& settings,
                                                                    const std::vector<int>& gpus, bool read_events);

}  // namespace gpudoc::serve

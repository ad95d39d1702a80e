#include "serve/announce.hpp"

#include <fmt/format.h>

namespace gpudoc::serve {

std::string address_text(const ListenAddress& listen, int port) {
  const bool v6 = listen.host.find(':') != std::string::npos;
  return v6 ? fmt::format("[{}]:{}", listen.host, port) : fmt::format("{}:{}", listen.host, port);
}

core::LogRecord backend_record(std::string_view banner) {
  return {.level = core::LogLevel::kInfo, .msg = "backend", .fields = {{"note", banner}}, .text = std::string(banner)};
}

core::LogRecord listening_record(const ListenAddress& listen, int port, int gpus, const Security& security) {
  const std::string where = address_text(listen, port);
  const char* scheme = security.tls ? "https" : "http";
  std::string how;
  if (security.tls) how += "; TLS";
  if (security.client_certificates) how += ", client certificates";
  if (security.basic_auth) how += security.tls ? ", basic authentication" : "; basic authentication";
  return {.level = core::LogLevel::kInfo,
          .msg = "listening",
          .fields = {{"address", where},
                     {"scheme", scheme},
                     {"gpus", gpus},
                     {"tls", security.tls},
                     {"basic_auth", security.basic_auth},
                     {"client_certificates", security.client_certificates}},
          .text = fmt::format("serving {} GPU{} on {}://{}/ (metrics: /metrics, API: /api/v1/snapshot{})", gpus,
                              gpus == 1 ? "" : "s", scheme, where, how)};
}

std::optional<core::LogRecord> exposure_record(const ListenAddress& listen, int port, const Security& security) {
  if (is_loopback(listen.host) || security.basic_auth || security.client_certificates) return std::nullopt;
  const std::string where = address_text(listen, port);
  return core::LogRecord{
      .level = core::LogLevel::kWarn,
      .msg = "listening beyond loopback without authentication",
      .fields = {{"address", where}},
      .text = fmt::format("{} is reachable from other machines and gpudoc serve has no authentication: keep it "
                          "behind a firewall that admits only your Prometheus servers, or give it a "
                          "--web-config-file with basic_auth_users or client certificates (docs/serve.md)",
                          where)};
}

core::LogRecord replay_ended_record(std::string_view trace) {
  return {.level = core::LogLevel::kInfo,
          .msg = "replay ended",
          .fields = {{"trace", trace}},
          .text = fmt::format("the replay of {} ended; serving on (its values are now stale, so absent)", trace)};
}

core::LogRecord stopped_record(std::uint64_t scrapes) {
  return {.level = core::LogLevel::kInfo,
          .msg = "stopped",
          .fields = {{"scrapes", scrapes}},
          .text = fmt::format("stopped after {} scrapes", scrapes)};
}

core::LogRecord error_record(const core::Error& error) {
  return {.level = core::LogLevel::kError,
          .msg = error.message(),
          .fields = {{"kind", core::to_string(error.kind())}, {"exit_code", core::exit_code(error.kind())}},
          .text = error.message()};
}

}  // namespace gpudoc::serve

// gpudoc::serve announce — what `gpudoc serve` says on stderr, as log records
// (core/structured_log.hpp): each a message and fields for logfmt and JSON, and the sentence the
// text format shows (the one gpudoc serve has always printed).
//
//   core::LogSink log(settings.log_format);
//   log.write(serve::listening_record(settings.listen, port, gpus, server.security()));
//   if (auto w = serve::exposure_record(settings.listen, port, server.security())) log.write(*w);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "core/structured_log.hpp"
#include "serve/config.hpp"
#include "serve/server.hpp"

namespace gpudoc::serve {

// "127.0.0.1:9401", "[::1]:9401".
[[nodiscard]] std::string address_text(const ListenAddress& listen, int port);
// The backend's banner ("FAKE GPUs: ...", "REPLAY, not live: ...").
[[nodiscard]] core::LogRecord backend_record(std::string_view banner);
// Where it listens, how many GPUs, http or https, with which authentication.
[[nodiscard]] core::LogRecord listening_record(const ListenAddress& listen, int port, int gpus,
                                               const Security& security);
// A warning when the address is reachable from other machines and nothing authenticates clients
// (no basic_auth_users, no verified client certificates); nullopt otherwise.
[[nodiscard]] std::optional<core::LogRecord> exposure_record(const ListenAddress& listen, int port,
                                                             const Security& security);
[[nodiscard]] core::LogRecord replay_ended_record(std::string_view trace);
[[nodiscard]] core::LogRecord stopped_record(std::uint64_t scrapes);
// An error that ends serve: its message, and its kind (usage, environment, ...).
[[nodiscard]] core::LogRecord error_record(const core::Error& error);

}  // namespace gpudoc::serve

// gpudoc::serve web config — TLS and basic authentication for `gpudoc serve`, from a file in the
// format of the Prometheus exporter toolkit's web configuration (--web-config-file, as
// node_exporter's --web.config.file), so that one file, made one way, serves every exporter of a
// node. docs/serve.md ("TLS and authentication") has an example and how to make a bcrypt hash.
//
//   auto c = serve::load_web_config("/etc/gpudoc/web.yml");   // Result<WebConfig>
//   if (!c) return c.error();                                  // kUsage: exit 2, naming file, line and key
//   for (const auto& w : c->warnings) log(w);                   // e.g. hashes readable by every user
//
// The file (YAML; every key optional; any other key is an error naming it):
//   tls_server_config:
//     cert_file: server.crt          # relative paths are relative to the file's folder
//     key_file: server.key
//     client_auth_type: RequireAndVerifyClientCert   # NoClientCert (default), RequestClientCert,
//                                    # RequireAnyClientCert (or RequireClientCert),
//                                    # VerifyClientCertIfGiven, RequireAndVerifyClientCert
//     client_ca_file: clients-ca.crt # needed by the two that verify; refused with NoClientCert
//     min_version: TLS12             # TLS10, TLS11, TLS12 (default), TLS13
//     max_version: TLS13             # default TLS13
//     cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]   # TLS 1.2's, by their IANA names
//     curve_preferences: [X25519, CurveP256]                      # CurveP256/P384/P521, X25519
//     prefer_server_cipher_suites: true
//   http_server_config:
//     http2: true                    # accepted; gpudoc serve speaks HTTP/1.1
//     headers: {Strict-Transport-Security: max-age=31536000}     # the exporter toolkit's five
//   basic_auth_users:
//     prometheus: $2y$10$...         # bcrypt ($2a$, $2b$, $2y$)
// The exporter toolkit's inline `cert`, `key` and `client_ca`, `client_allowed_sans` and
// `rate_limit` are refused, saying gpudoc does not support them. TLS is on when any of cert_file,
// key_file, client_ca_file or client_auth_type is set; then cert_file and key_file are required.
//
// parse_web_config is pure (text in, values or a usage error out); load_web_config reads the file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.hpp"

namespace gpudoc::serve {

enum class ClientAuth { kNone, kRequest, kRequireAny, kVerifyIfGiven, kRequireAndVerify };
// The exporter toolkit's name of each ("NoClientCert", ..., "RequireAndVerifyClientCert").
[[nodiscard]] std::string_view client_auth_name(ClientAuth auth) noexcept;

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

struct TlsServerConfig {
  std::string cert_file{};  // absolute, or as given when the file's folder is not known
  std::string key_file{};
  ClientAuth client_auth = ClientAuth::kNone;
  std::string client_ca_file{};  // empty: none
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
  std::vector<std::string> cipher_suites{};      // IANA names, as given; empty: OpenSSL's defaults
  std::vector<std::string> curve_preferences{};  // the toolkit's names, as given; empty: defaults
  bool prefer_server_cipher_suites = true;
};

struct WebConfig {
  std::optional<TlsServerConfig> tls{};  // nullopt: plain HTTP
  // http_server_config.headers: each name one of the toolkit's five, its value checked; sent with
  // every answer in place of gpudoc's own header of that name. A blank value keeps gpudoc's.
  std::vector<std::pair<std::string, std::string>> headers{};
  std::map<std::string, std::string> users{};  // basic_auth_users: user -> bcrypt hash; empty: no auth
  bool http2 = true;                           // accepted for the toolkit's files; HTTP/1.1 is served
  std::vector<std::string> warnings{};         // load_web_config's: things that work but should not be so
};

// True for a bcrypt hash: $2a$, $2b$ or $2y$, a cost from 04 to 31, '$' and 53 characters of
// bcrypt's base64 alphabet.
[[nodiscard]] bool is_bcrypt_hash(std::string_view hash) noexcept;

// `name` is the file's path: it names the file in errors, and relative certificate paths are
// joined to its folder. Errors: kUsage "--web-config-file NAME line N: ..." naming the key: not
// YAML, not a mapping, an unknown or unsupported key, a repeated key, a value of the wrong type, an
// unknown client_auth_type or TLS version, min_version above max_version, cert_file without
// key_file or the reverse, client_ca_file without a client_auth_type that asks for a certificate,
// a verifying client_auth_type without client_ca_file, a header the toolkit does not allow or a
// value with a control character, a user whose password is not a bcrypt hash or whose name holds
// ':'.
[[nodiscard]] core::Result<WebConfig> parse_web_config(std::string_view text, std::string_view name);

// parse_web_config of the file at `path` (at most 1 MiB), with warnings when it holds password
// hashes and other users may read it, or when the key file is readable by other users. Errors:
// kUsage "--web-config-file PATH: <why it cannot be read>", else parse_web_config's.
[[nodiscard]] core::Result<WebConfig> load_web_config(const std::string& path);

}  // namespace gpudoc::serve

#include "serve/tls.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/file.hpp"
#include "core/text.hpp"

namespace gpudoc::serve {
namespace {

core::Error usage(std::string message) { return core::Error(core::ErrorKind::kUsage, std::move(message)); }

// OpenSSL's reason for the oldest error in the queue ("no start line"), and the queue emptied.
std::string openssl_reason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "no reason given";
  const char* r = ERR_reason_error_string(e);
  return r != nullptr ? r : fmt::format("OpenSSL error {:#x}", e);
}

int version_of(TlsVersion v) {
  switch (v) {
    case TlsVersion::kTls10: return TLS1_VERSION;
    case TlsVersion::kTls11: return TLS1_1_VERSION;
    case TlsVersion::kTls12: return TLS1_2_VERSION;
    default: return TLS1_3_VERSION;
  }
}

// The file must be readable (named with the reason when not), before OpenSSL's own reading, whose
// errors say less.
core::Status readable(const std::string& path, std::string_view key) {
  auto text = core::read_file(path, {.max_bytes = 1 << 20, .what = "a PEM file"});
  if (!text) return usage(fmt::format("--web-config-file: {}: {}", key, text.error().message()));
  return core::ok_status();
}

// TLS 1.2's cipher suites, named as IANA (and the exporter toolkit) name them, as OpenSSL's list.
core::Result<std::string> cipher_list(ssl_ctx_st* ctx, const std::vector<std::string>& names) {
  SSL_CTX* all = SSL_CTX_new(TLS_server_method());
  if (all == nullptr || SSL_CTX_set_cipher_list(all, "ALL:COMPLEMENTOFALL") != 1) {
    SSL_CTX_free(all);
    return usage("--web-config-file: cipher_suites: OpenSSL lists no cipher suites");
  }
  std::string list;
  const STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(all);
  for (const std::string& name : names) {
    const SSL_CIPHER* found = nullptr;
    for (int i = 0; i < sk_SSL_CIPHER_num(ciphers) && found == nullptr; ++i) {
      const SSL_CIPHER* c = sk_SSL_CIPHER_value(ciphers, i);
      const char* standard = SSL_CIPHER_standard_name(c);
      // Go's ..._CHACHA20_POLY1305 is IANA's ..._CHACHA20_POLY1305_SHA256
      if (standard != nullptr && (name == standard || name + "_SHA256" == standard)) found = c;
    }
    if (found == nullptr) {
      SSL_CTX_free(all);
      return usage(
          fmt::format("--web-config-file: cipher_suites: \"{}\" is no cipher suite this OpenSSL knows "
                      "(IANA names, as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)",
                      core::terminal_safe(name)));
    }
    // TLS 1.3's are not configurable (as in Go's crypto/tls): skipped
    if (std::string_view(SSL_CIPHER_get_version(found)) == "TLSv1.3") continue;
    if (!list.empty()) list += ':';
    list += SSL_CIPHER_get_name(found);
  }
  SSL_CTX_free(all);
  if (!list.empty() && SSL_CTX_set_cipher_list(ctx, list.c_str()) != 1)
    return usage(fmt::format("--web-config-file: cipher_suites: OpenSSL refuses them ({})", openssl_reason()));
  return list;
}

core::Status set_groups(ssl_ctx_st* ctx, const std::vector<std::string>& curves) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kGroups = {
      {{"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}}};
  std::string list;
  for (const std::string& c : curves) {
    const auto it = std::find_if(kGroups.begin(), kGroups.end(), [&](const auto& g) { return g.first == c; });
    if (it == kGroups.end())
      return usage(
          fmt::format("--web-config-file: curve_preferences: \"{}\" is none of CurveP256, CurveP384, "
                      "CurveP521, X25519",
                      core::terminal_safe(c)));
    if (!list.empty()) list += ':';
    list += it->second;
  }
  if (!list.empty() && SSL_CTX_set1_groups_list(ctx, list.c_str()) != 1)
    return usage(fmt::format("--web-config-file: curve_preferences: OpenSSL refuses them ({})", openssl_reason()));
  return core::ok_status();
}

int no_passphrase(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*user*/) { return 0; }

core::Status load_identity(ssl_ctx_st* ctx, const TlsServerConfig& c) {
  if (auto s = readable(c.cert_file, "cert_file"); !s) return s;
  if (auto s = readable(c.key_file, "key_file"); !s) return s;
  if (SSL_CTX_use_certificate_chain_file(ctx, c.cert_file.c_str()) != 1)
    return usage(fmt::format("--web-config-file: cert_file {}: not a PEM certificate ({})",
                             core::terminal_safe(c.cert_file), openssl_reason()));
  // Read with a passphrase callback that has none to give: an encrypted key is refused, never
  // prompted for on the terminal (OpenSSL's default).
  std::FILE* f = std::fopen(c.key_file.c_str(), "r");
  EVP_PKEY* key = f != nullptr ? PEM_read_PrivateKey(f, nullptr, no_passphrase, nullptr) : nullptr;
  if (f != nullptr) std::fclose(f);
  if (key == nullptr)
    return usage(fmt::format("--web-config-file: key_file {}: not a PEM private key, or one with a passphrase ({})",
                             core::terminal_safe(c.key_file), openssl_reason()));
  const bool used = SSL_CTX_use_PrivateKey(ctx, key) == 1;
  EVP_PKEY_free(key);
  if (!used || SSL_CTX_check_private_key(ctx) != 1)
    return usage(fmt::format("--web-config-file: key_file {} is not the key of cert_file {} ({})",
                             core::terminal_safe(c.key_file), core::terminal_safe(c.cert_file), openssl_reason()));
  return core::ok_status();
}

int accept_any_certificate(int /*preverified*/, X509_STORE_CTX* /*store*/) { return 1; }

core::Status set_client_policy(ssl_ctx_st* ctx, const TlsServerConfig& c) {
  static constexpr unsigned char kContext[] = "gpudoc-serve";
  (void)SSL_CTX_set_session_id_context(ctx, kContext, sizeof kContext - 1);
  if (!c.client_ca_file.empty()) {
    if (auto s = readable(c.client_ca_file, "client_ca_file"); !s) return s;
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.client_ca_file.c_str());
    if (names == nullptr || sk_X509_NAME_num(names) == 0 ||
        SSL_CTX_load_verify_locations(ctx, c.client_ca_file.c_str(), nullptr) != 1) {
      sk_X509_NAME_pop_free(names, X509_NAME_free);
      return usage(fmt::format("--web-config-file: client_ca_file {}: holds no PEM certificate ({})",
                               core::terminal_safe(c.client_ca_file), openssl_reason()));
    }
    SSL_CTX_set_client_CA_list(ctx, names);  // the CAs named to clients in the handshake
  }
  switch (c.client_auth) {
    case ClientAuth::kNone: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); break;
    case ClientAuth::kRequest: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any_certificate); break;
    case ClientAuth::kRequireAny:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
      break;
    case ClientAuth::kVerifyIfGiven: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr); break;
    case ClientAuth::kRequireAndVerify:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      break;
  }
  return core::ok_status();
}

std::vector<std::string> validity_warnings(ssl_ctx_st* ctx, const std::string& cert_file) {
  std::vector<std::string> out;
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (cert == nullptr) return out;
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0)
    out.push_back(fmt::format("the certificate of cert_file {} has expired: clients will refuse it",
                              core::terminal_safe(cert_file)));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0)
    out.push_back(fmt::format("the certificate of cert_file {} is not valid yet: clients will refuse it",
                              core::terminal_safe(cert_file)));
  return out;
}

}  // namespace

core::Result<std::shared_ptr<const TlsContext>> TlsContext::load(const TlsServerConfig& c) {
  ERR_clear_error();
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (raw == nullptr) return core::Error(core::ErrorKind::kInternal, "cannot make a TLS context: " + openssl_reason());
  std::shared_ptr<TlsContext> ctx(new TlsContext(raw));
  SSL_CTX_set_default_passwd_cb(raw, no_passphrase);  // nothing in it ever prompts on the terminal
  if (SSL_CTX_set_min_proto_version(raw, version_of(c.min_version)) != 1 ||
      SSL_CTX_set_max_proto_version(raw, version_of(c.max_version)) != 1)
    return usage(
        fmt::format("--web-config-file: min_version/max_version: OpenSSL refuses them ({})", openssl_reason()));
  std::uint64_t options = SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF;
  if (c.prefer_server_cipher_suites) options |= SSL_OP_CIPHER_SERVER_PREFERENCE;
  SSL_CTX_set_options(raw, options);
  // Partial writes, from a buffer that may move between tries (an event stream's grows); buffers
  // given back while a connection is idle.
  SSL_CTX_set_mode(raw, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
  if (auto s = load_identity(raw, c); !s) return s.error();
  if (auto s = set_client_policy(raw, c); !s) return s.error();
  if (!c.cipher_suites.empty())
    if (auto l = cipher_list(raw, c.cipher_suites); !l) return l.error();
  if (auto s = set_groups(raw, c.curve_preferences); !s) return s.error();
  ctx->warnings_ = validity_warnings(raw, c.cert_file);
  ERR_clear_error();
  return std::shared_ptr<const TlsContext>(std::move(ctx));
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsConnection::TlsConnection(const TlsContext& context, int fd) : ssl_(SSL_new(context.native())) {
  if (ssl_ == nullptr) return;
  if (SSL_set_fd(ssl_, fd) != 1) {
    SSL_free(ssl_);
    ssl_ = nullptr;
    return;
  }
  SSL_set_accept_state(ssl_);
}

TlsConnection::~TlsConnection() { SSL_free(ssl_); }

TlsIo TlsConnection::classify(int result) {
  const int e = SSL_get_error(ssl_, result);
  switch (e) {
    case SSL_ERROR_WANT_READ: return TlsIo::kWantRead;
    case SSL_ERROR_WANT_WRITE: return TlsIo::kWantWrite;
    case SSL_ERROR_ZERO_RETURN: return TlsIo::kClosed;
    case SSL_ERROR_SYSCALL:
      if (ERR_peek_error() == 0) {
        error_ = errno != 0 ? std::strerror(errno) : "the peer went away";
        return errno == 0 || errno == ECONNRESET || errno == EPIPE ? TlsIo::kClosed : TlsIo::kFailed;
      }
      [[fallthrough]];
    default: error_ = openssl_reason(); return TlsIo::kFailed;
  }
}

TlsIo TlsConnection::handshake() {
  ERR_clear_error();
  errno = 0;
  const int r = SSL_do_handshake(ssl_);
  return r == 1 ? TlsIo::kDone : classify(r);
}

TlsResult TlsConnection::read(char* buffer, std::size_t size) {
  ERR_clear_error();
  errno = 0;
  std::size_t n = 0;
  const int r = SSL_read_ex(ssl_, buffer, size, &n);
  if (r == 1) return {TlsIo::kDone, n};
  return {classify(r), 0};
}

TlsResult TlsConnection::write(const char* data, std::size_t size) {
  ERR_clear_error();
  errno = 0;
  std::size_t n = 0;
  const int r = SSL_write_ex(ssl_, data, size, &n);
  if (r == 1) return {TlsIo::kDone, n};
  return {classify(r), 0};
}

bool TlsConnection::pending() const { return SSL_has_pending(ssl_) == 1; }

void TlsConnection::close_notify() {
  if (ssl_ == nullptr || SSL_is_init_finished(ssl_) != 1) return;
  ERR_clear_error();
  (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

}  // namespace gpudoc::serve

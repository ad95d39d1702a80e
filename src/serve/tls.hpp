// gpudoc::serve TLS — OpenSSL under serve::Server's event loop: the server context that a web
// config's tls_server_config describes (serve/web_config.hpp), and one connection's TLS, never
// blocking: each call does what the socket allows now and says what it waits for (to read or to
// write), so a slow or silent TLS client costs a socket, never a thread.
//
//   auto ctx = serve::TlsContext::load(config.tls.value());     // Result<shared_ptr<const TlsContext>>
//   serve::TlsConnection tls(*ctx, fd);                           // per accepted socket
//   switch (tls.handshake()) { case TlsIo::kDone: ...; case TlsIo::kWantRead: ... wait for EPOLLIN }
//   auto r = tls.read(buf, sizeof buf);                           // {kDone, n} or what it waits for
//
// The context: the certificate chain and key (they must match), the TLS versions, the client
// certificate policy (RequireAndVerifyClientCert: a certificate chaining to client_ca_file, else
// the handshake fails), TLS 1.2's cipher suites by their IANA names, the curves; renegotiation off;
// a peer's close without close_notify is an end, not an error.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "serve/web_config.hpp"

struct ssl_ctx_st;
struct ssl_st;

namespace gpudoc::serve {

class TlsContext {
 public:
  // Errors: kUsage naming the file and what is wrong with it: a cert_file, key_file or
  // client_ca_file that cannot be read or holds no PEM certificate or key, a key that is not the
  // certificate's, a cipher suite OpenSSL does not know, a TLS version OpenSSL refuses.
  [[nodiscard]] static core::Result<std::shared_ptr<const TlsContext>> load(const TlsServerConfig& config);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Things that work but should not be so: the certificate has expired or is not valid yet.
  [[nodiscard]] const std::vector<std::string>& warnings() const noexcept { return warnings_; }
  [[nodiscard]] ssl_ctx_st* native() const noexcept { return ctx_; }

 private:
  explicit TlsContext(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ssl_ctx_st* ctx_;
  std::vector<std::string> warnings_;
};

enum class TlsIo {
  kDone,       // done (read/write: `bytes` moved)
  kWantRead,   // call again once the socket is readable
  kWantWrite,  // call again once the socket is writable
  kClosed,     // the peer ended the connection
  kFailed,     // a TLS error (a bad certificate, a protocol error): close; error() says which
};

struct TlsResult {
  TlsIo io = TlsIo::kFailed;
  std::size_t bytes = 0;
};

// The server side of one accepted, non-blocking socket. Not thread-safe (the event loop's).
class TlsConnection {
 public:
  TlsConnection(const TlsContext& context, int fd);
  ~TlsConnection();
  TlsConnection(const TlsConnection&) = delete;
  TlsConnection& operator=(const TlsConnection&) = delete;

  [[nodiscard]] bool ok() const noexcept { return ssl_ != nullptr; }
  [[nodiscard]] TlsIo handshake();
  [[nodiscard]] TlsResult read(char* buffer, std::size_t size);
  [[nodiscard]] TlsResult write(const char* data, std::size_t size);
  // Bytes already received and decrypted (or being) that no socket readiness will announce.
  [[nodiscard]] bool pending() const;
  // Sends close_notify when the handshake is done; never waits for the peer's.
  void close_notify();
  // The reason of the last kFailed ("certificate verify failed", "no shared cipher").
  [[nodiscard]] const std::string& error() const noexcept { return error_; }

 private:
  TlsIo classify(int result);
  ssl_st* ssl_ = nullptr;
  std::string error_;
};

}  // namespace gpudoc::serve

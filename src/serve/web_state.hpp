// gpudoc::serve web state — the web config in force in serve::Server (TLS context, basic auth,
// headers), and its re-reading: the file and the certificate, key and CA files it names are looked
// at (stat) at most once a second, when a connection arrives or a request does; when any of them
// changed (its inode, size, modification or change time: an edit, a rotation, a Kubernetes secret's
// new version), the file is read again and a new state built. New connections get the new TLS
// context; every request is checked against the users in force when it arrives. A file that has
// become invalid is refused, not ignored: until it is valid again every new connection is closed
// and every request answered 503, and the error is said once (the server fails closed, as the
// exporter toolkit does; the previous credentials are not kept working behind the operator's back).
//
//   auto w = serve::WebWatch::open("/etc/gpudoc/web.yml");     // Result<unique_ptr<WebWatch>>
//   std::vector<core::LogRecord> said;
//   auto state = (*w)->current(std::chrono::steady_clock::now(), said);   // loop thread
//
// Not thread-safe: the event loop's (a state, once made, is never changed and may be shared).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/result.hpp"
#include "core/structured_log.hpp"
#include "serve/basic_auth.hpp"
#include "serve/tls.hpp"
#include "serve/web_config.hpp"

namespace gpudoc::serve {

struct WebState {
  std::shared_ptr<const TlsContext> tls{};  // null: plain HTTP
  std::shared_ptr<BasicAuth> auth{};        // null: no authentication
  ClientAuth client_auth = ClientAuth::kNone;
  std::vector<std::pair<std::string, std::string>> headers{};  // http_server_config.headers
  std::string failure{};  // not empty: the file is invalid now (this says why): refuse everything
};

// A web config file and its TLS context made: what a web config costs to check at start.
// Errors: load_web_config's and TlsContext::load's (kUsage, naming the file).
[[nodiscard]] core::Result<std::shared_ptr<const WebState>> load_web_state(const std::string& path,
                                                                           std::vector<std::string>* warnings);

class WebWatch {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kLookEvery{1};

  // Errors: load_web_state's. `warnings` receives the first load's.
  [[nodiscard]] static core::Result<std::unique_ptr<WebWatch>> open(std::string path,
                                                                    std::vector<std::string>* warnings);
  // The state in force, the files looked at first when kLookEvery has passed since the last look.
  // A reload appends what it has to say to `said` (reloaded, with its warnings; or refused, why).
  [[nodiscard]] std::shared_ptr<const WebState> current(Clock::time_point now, std::vector<core::LogRecord>& said);
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  struct Seen {
    int error = 0;  // errno of stat, 0: the fields below hold
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    std::int64_t ctime_ns = 0;
    bool operator==(const Seen&) const = default;
  };
  WebWatch(std::string path, std::shared_ptr<const WebState> state)
      : path_(std::move(path)), state_(std::move(state)) {}
  [[nodiscard]] std::vector<Seen> look() const;

  std::string path_;
  std::vector<std::string> files_;  // the file and the ones it names, as last read
  std::vector<Seen> seen_;
  std::shared_ptr<const WebState> state_;
  Clock::time_point next_look_{};
};

}  // namespace gpudoc::serve

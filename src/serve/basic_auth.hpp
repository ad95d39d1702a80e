// gpudoc::serve basic auth — HTTP basic authentication against a web config's bcrypt hashes
// (serve/web_config.hpp), as the Prometheus exporter toolkit does it: every route, 401 with
// WWW-Authenticate when the credentials are missing or wrong.
//
//   serve::BasicAuth auth(config.users);
//   switch (auth.check_cached(req.header("Authorization"))) {   // the event loop: never runs bcrypt
//     case BasicAuth::Verdict::kAllowed: ... answer
//     case BasicAuth::Verdict::kDenied: ... 401
//     case BasicAuth::Verdict::kUnknown: ... a handler thread: auth.verify(header), then answer or 401
//   }
//
// bcrypt is meant to be slow (a cost of 10 is tens of milliseconds of CPU), and Prometheus sends
// the same credentials every scrape: a verdict is remembered, keyed by a SHA-256 of user and
// password (the password is not kept), so only the first scrape pays bcrypt. The good ones are
// kept apart from the bad (up to kAllowedKept and kDeniedKept), so a client trying passwords
// cannot push Prometheus's out. An unknown user costs a bcrypt all the same (against one of the
// configured hashes, the answer forced to no), so timing does not tell which users exist; the
// hash libxcrypt's crypt_rn computes is compared in constant time. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace gpudoc::serve {

struct Credentials {
  std::string user{};
  std::string password{};
};

// Standard base64 (RFC 4648, with padding); nullopt when it is not.
[[nodiscard]] std::optional<std::string> base64_decode(std::string_view text);
// An Authorization header's "Basic base64(user:password)" (the scheme in any case); nullopt for
// another scheme or a malformed value.
[[nodiscard]] std::optional<Credentials> parse_basic_authorization(std::string_view header);
// True when bcrypt of `password` with the salt and cost of `hash` is `hash` (compared in constant
// time). False for a password holding a NUL byte (crypt would stop there) or a malformed hash.
[[nodiscard]] bool bcrypt_matches(std::string_view password, const std::string& hash);

class BasicAuth {
 public:
  static constexpr std::size_t kAllowedKept = 64;
  static constexpr std::size_t kDeniedKept = 1024;

  explicit BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

  enum class Verdict { kAllowed, kDenied, kUnknown };
  // What is known without bcrypt: kDenied for a missing or malformed header, or credentials found
  // wrong before; kAllowed for credentials found right before; kUnknown otherwise.
  [[nodiscard]] Verdict check_cached(std::optional<std::string_view> authorization) const;
  // The verdict, with bcrypt when it is not known yet (then remembered).
  [[nodiscard]] bool verify(std::optional<std::string_view> authorization);
  [[nodiscard]] bool empty() const noexcept { return users_.empty(); }

 private:
  [[nodiscard]] static std::string key_of(const Credentials& c);
  std::map<std::string, std::string> users_;
  mutable std::mutex mu_;
  std::set<std::string> allowed_;
  std::set<std::string> denied_;
};

}  // namespace gpudoc::serve

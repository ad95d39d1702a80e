#include "serve/basic_auth.hpp"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cctype>
#include <cstring>
#include <memory>

#include "serve/web_config.hpp"

namespace gpudoc::serve {
namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

}  // namespace

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    if (pad == 1 && text[i + 2] == '=') return std::nullopt;  // "x=y=" is not padding
    std::uint32_t group = 0;
    for (int k = 0; k < 4 - pad; ++k) {
      const int v = base64_value(text[i + static_cast<std::size_t>(k)]);
      if (v < 0) return std::nullopt;
      group |= static_cast<std::uint32_t>(v) << (18 - 6 * k);
    }
    out += static_cast<char>((group >> 16) & 0xFF);
    if (pad < 2) out += static_cast<char>((group >> 8) & 0xFF);
    if (pad < 1) out += static_cast<char>(group & 0xFF);
  }
  return out;
}

std::optional<Credentials> parse_basic_authorization(std::string_view header) {
  while (!header.empty() && header.front() == ' ') header.remove_prefix(1);
  const auto space = header.find(' ');
  if (space == std::string_view::npos || !iequals(header.substr(0, space), "basic")) return std::nullopt;
  std::string_view token = header.substr(space + 1);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  const auto decoded = base64_decode(token);
  if (!decoded) return std::nullopt;
  const auto colon = decoded->find(':');
  if (colon == std::string::npos) return std::nullopt;
  return Credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

bool bcrypt_matches(std::string_view password, const std::string& hash) {
  if (password.find('\0') != std::string_view::npos || !is_bcrypt_hash(hash)) return false;
  const std::string phrase(password);
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on a handler thread's stack
  const char* out = ::crypt_rn(phrase.c_str(), hash.c_str(), data.get(), static_cast<int>(sizeof(crypt_data)));
  if (out == nullptr || std::strlen(out) != hash.size()) return false;
  const bool same = CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
  OPENSSL_cleanse(data.get(), sizeof(crypt_data));
  return same;
}

std::string BasicAuth::key_of(const Credentials& c) {
  std::string input = c.user;
  input += '\0';
  input += c.password;
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int n = 0;
  if (EVP_Digest(input.data(), input.size(), md.data(), &n, EVP_sha256(), nullptr) != 1) n = 0;
  OPENSSL_cleanse(input.data(), input.size());
  return std::string(reinterpret_cast<const char*>(md.data()), n);
}

BasicAuth::Verdict BasicAuth::check_cached(std::optional<std::string_view> authorization) const {
  if (!authorization) return Verdict::kDenied;
  const auto c = parse_basic_authorization(*authorization);
  if (!c) return Verdict::kDenied;
  const std::string key = key_of(*c);
  std::lock_guard lock(mu_);
  if (allowed_.contains(key)) return Verdict::kAllowed;
  if (denied_.contains(key)) return Verdict::kDenied;
  return Verdict::kUnknown;
}

bool BasicAuth::verify(std::optional<std::string_view> authorization) {
  const Verdict known = check_cached(authorization);
  if (known != Verdict::kUnknown) return known == Verdict::kAllowed;
  if (users_.empty()) return false;
  const auto c = parse_basic_authorization(*authorization);  // kUnknown: the header is there and well-formed
  const auto user = users_.find(c->user);
  // An unknown user is checked against a configured hash all the same: as slow as a known one.
  const std::string& hash = user != users_.end() ? user->second : users_.begin()->second;
  const bool ok = bcrypt_matches(c->password, hash) && user != users_.end();
  const std::string key = key_of(*c);
  std::lock_guard lock(mu_);
  auto& kept = ok ? allowed_ : denied_;
  if (kept.size() >= (ok ? kAllowedKept : kDeniedKept)) kept.clear();
  kept.insert(key);
  return ok;
}

}  // namespace gpudoc::serve

#include "serve/web_config.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>

#include "core/file.hpp"
#include "core/text.hpp"

namespace gpudoc::serve {
namespace {

constexpr std::array<std::pair<std::string_view, ClientAuth>, 6> kClientAuth = {{
    {"NoClientCert", ClientAuth::kNone},
    {"RequestClientCert", ClientAuth::kRequest},
    {"RequireAnyClientCert", ClientAuth::kRequireAny},
    {"RequireClientCert", ClientAuth::kRequireAny},  // the toolkit's older name
    {"VerifyClientCertIfGiven", ClientAuth::kVerifyIfGiven},
    {"RequireAndVerifyClientCert", ClientAuth::kRequireAndVerify},
}};

constexpr std::array<std::pair<std::string_view, TlsVersion>, 4> kVersions = {{
    {"TLS10", TlsVersion::kTls10},
    {"TLS11", TlsVersion::kTls11},
    {"TLS12", TlsVersion::kTls12},
    {"TLS13", TlsVersion::kTls13},
}};

// The headers the exporter toolkit lets a web config set, and the values it allows (none: any).
struct AllowedHeader {
  std::string_view name;
  std::vector<std::string_view> values;
};
const std::vector<AllowedHeader>& allowed_headers() {
  static const std::vector<AllowedHeader> kHeaders = {
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
      {"Content-Security-Policy", {}},
  };
  return kHeaders;
}

// Keys of the exporter toolkit's format that gpudoc serve does not implement.
constexpr std::array<std::string_view, 5> kUnsupported = {"cert", "key", "client_ca", "client_allowed_sans",
                                                          "rate_limit"};

bool unsupported(std::string_view key) {
  return std::find(kUnsupported.begin(), kUnsupported.end(), key) != kUnsupported.end();
}

class Parser {
 public:
  Parser(std::string_view name, std::string dir) : name_(name), dir_(std::move(dir)) {}

  core::Result<WebConfig> parse(std::string_view text) {
    YAML::Node root;
    try {
      root = YAML::Load(std::string(text));
    } catch (const YAML::Exception& e) {
      return error(e.mark, fmt::format("not valid YAML: {}", e.msg));
    }
    WebConfig c;
    if (root.IsNull() || !root.IsDefined()) return c;  // an empty file: plain HTTP, no authentication
    if (!root.IsMap())
      return error(root.Mark(), "expected a mapping of tls_server_config, http_server_config and basic_auth_users");
    try {
      return parse_root(root, c);
    } catch (const YAML::Exception& e) {  // a conversion the checks above did not foresee
      return error(e.mark, e.msg);
    }
  }

 private:
  core::Error error(const YAML::Mark& mark, std::string_view what) const {
    const std::string where = mark.line >= 0 ? fmt::format(" line {}", mark.line + 1) : std::string();
    return core::Error(core::ErrorKind::kUsage,
                       fmt::format("--web-config-file {}{}: {}", core::terminal_safe(name_), where, what));
  }

  // The keys of a mapping, each once, each one of `known`; `section` names it in errors.
  core::Status check_keys(const YAML::Node& map, std::string_view section,
                          std::initializer_list<std::string_view> known) {
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const std::string shown = core::terminal_safe(key);
      if (!seen.insert(key).second)
        return error(kv.first.Mark(), fmt::format("\"{}\" appears twice in {}", shown, section));
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      if (unsupported(key))
        return error(kv.first.Mark(),
                     fmt::format("\"{}\" in {} is the exporter toolkit's but gpudoc serve does not support it "
                                 "(docs/serve.md, \"TLS and authentication\")",
                                 shown, section));
      return error(kv.first.Mark(),
                   fmt::format("unknown key \"{}\" in {} (known: {})", shown, section, fmt::join(known, ", ")));
    }
    return core::ok_status();
  }

  // A scalar's text (a null value: empty).
  core::Result<std::string> text(const YAML::Node& v, std::string_view key) {
    if (v.IsNull()) return std::string();
    if (!v.IsScalar()) return error(v.Mark(), fmt::format("\"{}\" must be a string", key));
    return v.Scalar();
  }

  core::Result<bool> boolean(const YAML::Node& v, std::string_view key) {
    bool b = false;
    if (!v.IsScalar() || !YAML::convert<bool>::decode(v, b))
      return error(v.Mark(), fmt::format("\"{}\" must be true or false", key));
    return b;
  }

  core::Result<std::vector<std::string>> list(const YAML::Node& v, std::string_view key) {
    std::vector<std::string> out;
    if (v.IsNull()) return out;
    if (!v.IsSequence()) return error(v.Mark(), fmt::format("\"{}\" must be a list of names", key));
    for (const auto& item : v) {
      if (!item.IsScalar()) return error(item.Mark(), fmt::format("\"{}\" must be a list of names", key));
      out.push_back(item.Scalar());
    }
    return out;
  }

  std::string path(const std::string& p) const {
    if (p.empty() || p.front() == '/' || dir_.empty()) return p;
    return (std::filesystem::path(dir_) / p).lexically_normal().string();
  }

  core::Result<WebConfig> parse_root(const YAML::Node& root, WebConfig& c) {
    if (auto s = check_keys(root, "the file", {"tls_server_config", "http_server_config", "basic_auth_users"}); !s)
      return s.error();
    for (const auto& kv : root) {
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      if (v.IsNull()) continue;
      core::Status s = core::ok_status();
      if (key == "tls_server_config")
        s = parse_tls(v, c);
      else if (key == "http_server_config")
        s = parse_http(v, c);
      else
        s = parse_users(v, c);
      if (!s) return s.error();
    }
    return c;
  }

  core::Status parse_tls_value(const std::string& key, const YAML::Node& v, TlsServerConfig& t, bool& enabled) {
    if (key == "cipher_suites" || key == "curve_preferences") {
      auto l = list(v, key);
      if (!l) return l.error();
      (key == "cipher_suites" ? t.cipher_suites : t.curve_preferences) = std::move(*l);
      return core::ok_status();
    }
    if (key == "prefer_server_cipher_suites") {
      auto b = boolean(v, key);
      if (!b) return b.error();
      t.prefer_server_cipher_suites = *b;
      return core::ok_status();
    }
    auto s = text(v, key);
    if (!s) return s.error();
    if (key == "cert_file" || key == "key_file" || key == "client_ca_file") {
      (key == "cert_file" ? t.cert_file : key == "key_file" ? t.key_file : t.client_ca_file) = path(*s);
      enabled = enabled || !s->empty();
    } else if (key == "client_auth_type") {
      const auto it =
          std::find_if(kClientAuth.begin(), kClientAuth.end(), [&](const auto& p) { return p.first == *s; });
      if (!s->empty() && it == kClientAuth.end())
        return error(v.Mark(), fmt::format("client_auth_type \"{}\" is none of NoClientCert, RequestClientCert, "
                                           "RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert",
                                           core::terminal_safe(*s)));
      if (it != kClientAuth.end()) t.client_auth = it->second;
      enabled = enabled || !s->empty();
    } else {  // min_version, max_version
      const auto it = std::find_if(kVersions.begin(), kVersions.end(), [&](const auto& p) { return p.first == *s; });
      if (it == kVersions.end())
        return error(v.Mark(),
                     fmt::format("{} \"{}\" is none of TLS10, TLS11, TLS12, TLS13", key, core::terminal_safe(*s)));
      (key == "min_version" ? t.min_version : t.max_version) = it->second;
    }
    return core::ok_status();
  }

  core::Status parse_tls(const YAML::Node& node, WebConfig& c) {
    if (!node.IsMap()) return error(node.Mark(), "tls_server_config must be a mapping");
    if (auto s = check_keys(node, "tls_server_config",
                            {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version",
                             "max_version", "cipher_suites", "curve_preferences", "prefer_server_cipher_suites"});
        !s)
      return s;
    TlsServerConfig t;
    bool enabled = false;
    for (const auto& kv : node)
      if (auto s = parse_tls_value(kv.first.Scalar(), kv.second, t, enabled); !s) return s;
    if (!enabled) return core::ok_status();  // the toolkit's rule: no certificate, key or client auth: plain HTTP
    if (t.cert_file.empty()) return error(node.Mark(), "tls_server_config: missing cert_file");
    if (t.key_file.empty()) return error(node.Mark(), "tls_server_config: missing key_file");
    if (t.min_version > t.max_version) return error(node.Mark(), "tls_server_config: min_version is above max_version");
    if (!t.client_ca_file.empty() && t.client_auth == ClientAuth::kNone)
      return error(node.Mark(),
                   "tls_server_config: client_ca_file is set but client_auth_type asks for no client certificate "
                   "(RequireAndVerifyClientCert verifies them against it)");
    const bool verifies = t.client_auth == ClientAuth::kVerifyIfGiven || t.client_auth == ClientAuth::kRequireAndVerify;
    if (verifies && t.client_ca_file.empty())
      return error(node.Mark(), fmt::format("tls_server_config: client_auth_type {} needs client_ca_file (the CA "
                                            "certificates that client certificates must chain to)",
                                            client_auth_name(t.client_auth)));
    c.tls = std::move(t);
    return core::ok_status();
  }

  core::Status parse_headers(const YAML::Node& node, WebConfig& c) {
    if (!node.IsMap()) return error(node.Mark(), "http_server_config.headers must be a mapping");
    std::vector<std::string_view> names;
    for (const auto& h : allowed_headers()) names.push_back(h.name);
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
      const auto it = std::find_if(allowed_headers().begin(), allowed_headers().end(),
                                   [&](const AllowedHeader& h) { return h.name == name; });
      if (it == allowed_headers().end())
        return error(kv.first.Mark(), fmt::format("header \"{}\" cannot be set (the exporter toolkit allows {})",
                                                  core::terminal_safe(name), fmt::join(names, ", ")));
      if (!seen.insert(name).second) return error(kv.first.Mark(), fmt::format("header \"{}\" appears twice", name));
      auto v = text(kv.second, name);
      if (!v) return v.error();
      if (std::any_of(v->begin(), v->end(),
                      [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }))
        return error(kv.second.Mark(), fmt::format("header \"{}\": its value holds a control character", name));
      if (!it->values.empty() && !v->empty() && std::find(it->values.begin(), it->values.end(), *v) == it->values.end())
        return error(kv.second.Mark(),
                     fmt::format("header \"{}\" must be one of: {}", name, fmt::join(it->values, ", ")));
      if (!v->empty()) c.headers.emplace_back(name, *v);
    }
    return core::ok_status();
  }

  core::Status parse_http(const YAML::Node& node, WebConfig& c) {
    if (!node.IsMap()) return error(node.Mark(), "http_server_config must be a mapping");
    if (auto s = check_keys(node, "http_server_config", {"http2", "headers"}); !s) return s;
    for (const auto& kv : node) {
      if (kv.second.IsNull()) continue;
      if (kv.first.Scalar() == "http2") {
        auto b = boolean(kv.second, "http2");
        if (!b) return b.error();
        c.http2 = *b;
      } else if (auto s = parse_headers(kv.second, c); !s) {
        return s;
      }
    }
    return core::ok_status();
  }

  core::Status parse_users(const YAML::Node& node, WebConfig& c) {
    if (!node.IsMap()) return error(node.Mark(), "basic_auth_users must be a mapping of user names to bcrypt hashes");
    for (const auto& kv : node) {
      if (!kv.first.IsScalar()) return error(kv.first.Mark(), "basic_auth_users: a user name must be a string");
      const std::string user = kv.first.Scalar();
      const std::string shown = core::terminal_safe(user);
      if (user.find(':') != std::string::npos)
        return error(kv.first.Mark(), fmt::format("basic_auth_users: user \"{}\" holds ':', which basic "
                                                  "authentication cannot send",
                                                  shown));
      if (c.users.contains(user))
        return error(kv.first.Mark(), fmt::format("basic_auth_users: user \"{}\" appears twice", shown));
      // The hash itself is never quoted back: it is a secret too.
      if (!kv.second.IsScalar() || !is_bcrypt_hash(kv.second.Scalar()))
        return error(kv.second.Mark(),
                     fmt::format("basic_auth_users: the password of user \"{}\" is not a bcrypt hash ($2a$, $2b$ or "
                                 "$2y$, a cost, '$' and 53 characters; docs/serve.md says how to make one)",
                                 shown));
      c.users.emplace(user, kv.second.Scalar());
    }
    return core::ok_status();
  }

  std::string name_;
  std::string dir_;
};

}  // namespace

std::string_view client_auth_name(ClientAuth auth) noexcept {
  switch (auth) {
    case ClientAuth::kRequest: return "RequestClientCert";
    case ClientAuth::kRequireAny: return "RequireAnyClientCert";
    case ClientAuth::kVerifyIfGiven: return "VerifyClientCertIfGiven";
    case ClientAuth::kRequireAndVerify: return "RequireAndVerifyClientCert";
    default: return "NoClientCert";
  }
}

bool is_bcrypt_hash(std::string_view hash) noexcept {
  // $2b$10$ + 22 characters of salt + 31 of hash
  if (hash.size() != 60 || hash[0] != '$' || hash[1] != '2' || hash[3] != '$' || hash[6] != '$') return false;
  if (hash[2] != 'a' && hash[2] != 'b' && hash[2] != 'y') return false;
  if (hash[4] < '0' || hash[4] > '3' || hash[5] < '0' || hash[5] > '9') return false;
  const int cost = (hash[4] - '0') * 10 + (hash[5] - '0');
  if (cost < 4 || cost > 31) return false;
  return std::all_of(hash.begin() + 7, hash.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '/';
  });
}

core::Result<WebConfig> parse_web_config(std::string_view text, std::string_view name) {
  const std::string dir = std::filesystem::path(std::string(name)).parent_path().string();
  return Parser(name, dir.empty() ? std::string(".") : dir).parse(text);
}

core::Result<WebConfig> load_web_config(const std::string& path) {
  auto text = core::read_file(path, {.max_bytes = 1 << 20, .what = "a web config"});
  if (!text) return core::Error(core::ErrorKind::kUsage, fmt::format("--web-config-file: {}", text.error().message()));
  std::error_code ec;
  const std::string absolute = std::filesystem::absolute(path, ec).string();
  auto c = parse_web_config(*text, ec ? path : absolute);
  if (!c) return c.error();
  struct stat st {};
  if (!c->users.empty() && ::stat(path.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0)
    c->warnings.push_back(
        fmt::format("{} holds password hashes and every user of this machine may read it "
                    "(chmod o-r; the hashes can be attacked offline)",
                    core::terminal_safe(path)));
  if (c->tls && ::stat(c->tls->key_file.c_str(), &st) == 0 && (st.st_mode & S_IROTH) != 0)
    c->warnings.push_back(fmt::format("the key_file {} may be read by every user of this machine (chmod o-r)",
                                      core::terminal_safe(c->tls->key_file)));
  return c;
}

}  // namespace gpudoc::serve

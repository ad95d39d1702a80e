// The web config (--web-config-file): the exporter toolkit's schema read, every refusal naming
// the file, its line and the key; bcrypt hashes recognised; the TLS context's errors naming the
// certificate or key file; the warnings about files other users may read.
#include "serve/web_config.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <string>

#include "serve/tls.hpp"
#include "serve/web_state.hpp"
#include "support/temp_dir.hpp"
#include "test_certificates.hpp"

namespace gpudoc::serve {
namespace {

constexpr const char* kName = "/etc/gpudoc/web.yml";
const std::string kHash = "$2y$10$X0h1gDsPszWURQaxFh.zoubFi6DXncSjhoQNJgRrnGs7EsimhC7zG";

std::string error_of(const std::string& text) {
  auto c = parse_web_config(text, kName);
  if (c) return "(accepted)";
  EXPECT_EQ(c.error().kind(), core::ErrorKind::kUsage);
  return c.error().message();
}

TEST(WebConfig, TheToolkitsExampleIsRead) {
  const auto c = parse_web_config(
      "# the exporter toolkit's keys\n"
      "tls_server_config:\n"
      "  cert_file: server.crt\n"
      "  key_file: /etc/ssl/private/server.key\n"
      "  client_auth_type: RequireAndVerifyClientCert\n"
      "  client_ca_file: clients/ca.crt\n"
      "  min_version: TLS13\n"
      "  max_version: TLS13\n"
      "  cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n"
      "  curve_preferences: [X25519, CurveP256]\n"
      "  prefer_server_cipher_suites: false\n"
      "http_server_config:\n"
      "  http2: false\n"
      "  headers:\n"
      "    Strict-Transport-Security: max-age=31536000\n"
      "    X-Frame-Options: sameorigin\n"
      "basic_auth_users:\n"
      "  prometheus: " +
          kHash + "\n  \"grafana agent\": " + kHash + "\n",
      kName);
  ASSERT_TRUE(c) << c.error().message();
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->cert_file, "/etc/gpudoc/server.crt");  // relative to the file's folder
  EXPECT_EQ(c->tls->key_file, "/etc/ssl/private/server.key");
  EXPECT_EQ(c->tls->client_ca_file, "/etc/gpudoc/clients/ca.crt");
  EXPECT_EQ(c->tls->client_auth, ClientAuth::kRequireAndVerify);
  EXPECT_EQ(c->tls->min_version, TlsVersion::kTls13);
  EXPECT_EQ(c->tls->cipher_suites, std::vector<std::string>{"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"});
  EXPECT_EQ(c->tls->curve_preferences, (std::vector<std::string>{"X25519", "CurveP256"}));
  EXPECT_FALSE(c->tls->prefer_server_cipher_suites);
  EXPECT_FALSE(c->http2);
  ASSERT_EQ(c->headers.size(), 2u);
  EXPECT_EQ(c->headers[0], (std::pair<std::string, std::string>{"Strict-Transport-Security", "max-age=31536000"}));
  EXPECT_EQ(c->users.size(), 2u);
  EXPECT_EQ(c->users.at("grafana agent"), kHash);
}

TEST(WebConfig, NothingToSayIsPlainHttpWithoutAuthentication) {
  for (const char* text : {"", "# nothing\n", "tls_server_config:\n", "tls_server_config:\n  min_version: TLS13\n",
                           "basic_auth_users: {}\n", "http_server_config: {headers: {}}\n"}) {
    const auto c = parse_web_config(text, kName);
    ASSERT_TRUE(c) << text << ": " << c.error().message();
    EXPECT_FALSE(c->tls) << text;
    EXPECT_TRUE(c->users.empty()) << text;
  }
}

TEST(WebConfig, AnUnknownKeyIsNamedWithTheFileAndLine) {
  EXPECT_EQ(error_of("tls_server_config:\n  cert_file: a\n  key_fil: b\n"),
            "--web-config-file /etc/gpudoc/web.yml line 3: unknown key \"key_fil\" in tls_server_config (known: "
            "cert_file, key_file, client_auth_type, client_ca_file, min_version, max_version, cipher_suites, "
            "curve_preferences, prefer_server_cipher_suites)");
  EXPECT_EQ(error_of("basic_auth_user:\n  a: b\n"),
            "--web-config-file /etc/gpudoc/web.yml line 1: unknown key \"basic_auth_user\" in the file (known: "
            "tls_server_config, http_server_config, basic_auth_users)");
  EXPECT_NE(error_of("http_server_config:\n  http3: true\n").find("unknown key \"http3\" in http_server_config"),
            std::string::npos);
}

TEST(WebConfig, TheToolkitsKeysGpudocLacksAreRefusedAsSuch) {
  for (const char* text : {"rate_limit: {interval: 1s, burst: 5}\n", "tls_server_config:\n  cert: |\n    PEM\n",
                           "tls_server_config:\n  client_allowed_sans: [a]\n"}) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find("is the exporter toolkit's but gpudoc serve does not support it"), std::string::npos) << e;
  }
}

TEST(WebConfig, ValuesOfTheWrongKindAreRefused) {
  const std::pair<std::string, std::string> cases[] = {
      {"tls_server_config: [a]\n", "line 1: tls_server_config must be a mapping"},
      {"tls_server_config:\n  cert_file: [a]\n", "line 2: \"cert_file\" must be a string"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: Sometimes\n",
       "line 4: client_auth_type \"Sometimes\" is none of NoClientCert"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: SSL3\n",
       "line 4: min_version \"SSL3\" is none of TLS10, TLS11, TLS12, TLS13"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n",
       "min_version is above max_version"},
      {"tls_server_config:\n  cert_file: a\n", "tls_server_config: missing key_file"},
      {"tls_server_config:\n  key_file: a\n", "tls_server_config: missing cert_file"},
      {"tls_server_config:\n  client_auth_type: RequireAndVerifyClientCert\n", "missing cert_file"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n",
       "client_ca_file is set but client_auth_type asks for no client certificate"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
       "client_auth_type RequireAndVerifyClientCert needs client_ca_file"},
      {"tls_server_config:\n  cert_file: a\n  cert_file: b\n",
       "line 3: \"cert_file\" appears twice in tls_server_config"},
      {"tls_server_config:\n  prefer_server_cipher_suites: maybe\n",
       "\"prefer_server_cipher_suites\" must be true or false"},
      {"http_server_config:\n  headers:\n    Server: gpudoc\n", "header \"Server\" cannot be set"},
      {"http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
       "\"X-Frame-Options\" must be one of: deny, sameorigin"},
      {"http_server_config:\n  headers:\n    X-XSS-Protection: \"1\\r\\nSet-Cookie: a=b\"\n",
       "its value holds a control character"},
      {"- a\n- b\n", "line 1: expected a mapping"},
      {"tls_server_config: {cert_file: a\n", "not valid YAML"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(expected), std::string::npos) << text << "\n -> " << e;
    EXPECT_TRUE(e.starts_with("--web-config-file /etc/gpudoc/web.yml")) << e;
  }
}

TEST(WebConfig, UsersNeedBcryptHashesWhichAreNeverQuoted) {
  const std::string plain = error_of("basic_auth_users:\n  alice: hunter2\n");
  EXPECT_NE(plain.find("line 2: basic_auth_users: the password of user \"alice\" is not a bcrypt hash"),
            std::string::npos)
      << plain;
  EXPECT_EQ(plain.find("hunter2"), std::string::npos) << plain;
  EXPECT_NE(error_of("basic_auth_users:\n  \"a:b\": " + kHash + "\n").find("user \"a:b\" holds ':'"),
            std::string::npos);
  EXPECT_NE(error_of("basic_auth_users:\n  a: " + kHash + "\n  a: " + kHash + "\n").find("user \"a\" appears twice"),
            std::string::npos);
  // a name from the file cannot drive the terminal that shows the error
  const std::string e = error_of("basic_auth_users:\n  \"\\e]0;x\\a\": nope\n");
  EXPECT_EQ(e.find('\x1b'), std::string::npos) << e;
}

TEST(WebConfig, BcryptHashesAreRecognised) {
  EXPECT_TRUE(is_bcrypt_hash(kHash));
  EXPECT_TRUE(is_bcrypt_hash("$2b$04$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DVG"));
  EXPECT_TRUE(is_bcrypt_hash("$2a$31$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DVG"));
  EXPECT_FALSE(is_bcrypt_hash("$2x$10$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DVG"));  // the buggy one
  EXPECT_FALSE(is_bcrypt_hash("$2b$03$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DVG"));  // cost below 4
  EXPECT_FALSE(is_bcrypt_hash("$2b$32$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DVG"));
  EXPECT_FALSE(is_bcrypt_hash("$2b$10$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DV"));  // one short
  EXPECT_FALSE(is_bcrypt_hash("$2b$10$abcdefghijklmnopqrstuuj7m4XYqbm74SxoBcXyw8to0CQ061DV!"));
  EXPECT_FALSE(is_bcrypt_hash("$6$salt$hash"));
  EXPECT_FALSE(is_bcrypt_hash(""));
}

TEST(WebConfig, TheTlsContextNamesTheFileThatIsWrong) {
  gpudoc::testing::TempDir dir("gpudoc-webconfig");
  const auto pki = gpudoc::testing::make_pki(dir);
  TlsServerConfig t{.cert_file = pki.server_cert, .key_file = pki.server_key};
  ASSERT_TRUE(TlsContext::load(t));
  const auto with = [&](TlsServerConfig c) {
    auto r = TlsContext::load(c);
    EXPECT_FALSE(r);
    if (r) return std::string();
    EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage);
    return r.error().message();
  };
  TlsServerConfig missing = t;
  missing.cert_file = dir.file("nope.crt");
  EXPECT_NE(with(missing).find("cert_file: reading " + dir.file("nope.crt")), std::string::npos) << with(missing);
  TlsServerConfig not_pem = t;
  not_pem.cert_file = pki.server_key;  // a key where the certificate goes
  EXPECT_NE(with(not_pem).find("cert_file " + pki.server_key + ": not a PEM certificate"), std::string::npos)
      << with(not_pem);
  TlsServerConfig other_key = t;
  other_key.key_file = pki.client_key;
  EXPECT_NE(with(other_key).find("key_file " + pki.client_key + " is not the key of cert_file " + pki.server_cert),
            std::string::npos)
      << with(other_key);
  // a key with a passphrase: refused, not prompted for
  const std::string locked = dir.file("locked.key");
  {
    EVP_PKEY* k = EVP_EC_gen("P-256");
    std::FILE* f = std::fopen(locked.c_str(), "w");
    ASSERT_NE(f, nullptr);
    static char kPass[] = "secret";
    ASSERT_EQ(PEM_write_PrivateKey(f, k, EVP_aes_256_cbc(), nullptr, 0, nullptr, kPass), 1);
    std::fclose(f);
    EVP_PKEY_free(k);
  }
  TlsServerConfig passphrase = t;
  passphrase.key_file = locked;
  EXPECT_NE(with(passphrase).find("key_file " + locked + ": not a PEM private key, or one with a passphrase"),
            std::string::npos)
      << with(passphrase);
  TlsServerConfig bad_ca = t;
  bad_ca.client_auth = ClientAuth::kRequireAndVerify;
  bad_ca.client_ca_file = pki.server_key;
  EXPECT_NE(with(bad_ca).find("client_ca_file " + pki.server_key + ": holds no PEM certificate"), std::string::npos)
      << with(bad_ca);
  TlsServerConfig bad_suite = t;
  bad_suite.cipher_suites = {"TLS_RSA_WITH_NOTHING"};
  EXPECT_NE(with(bad_suite).find("cipher_suites: \"TLS_RSA_WITH_NOTHING\" is no cipher suite"), std::string::npos);
  TlsServerConfig bad_curve = t;
  bad_curve.curve_preferences = {"CurveP999"};
  EXPECT_NE(with(bad_curve).find("curve_preferences: \"CurveP999\""), std::string::npos);
  TlsServerConfig suites = t;
  suites.cipher_suites = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
                          "TLS_AES_128_GCM_SHA256"};
  suites.curve_preferences = {"X25519", "CurveP256"};
  EXPECT_TRUE(TlsContext::load(suites));
}

TEST(WebConfig, LoadingWarnsAboutFilesEveryoneMayRead) {
  gpudoc::testing::TempDir dir("gpudoc-webconfig");
  const auto pki = gpudoc::testing::make_pki(dir);
  const std::string path = dir.file("web.yml");
  std::ofstream(path) << "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                      << "basic_auth_users:\n  prometheus: " << kHash << "\n";
  ::chmod(path.c_str(), 0600);
  auto quiet = load_web_config(path);
  ASSERT_TRUE(quiet) << quiet.error().message();
  EXPECT_EQ(quiet->tls->cert_file, pki.server_cert);  // relative to the file's folder
  EXPECT_TRUE(quiet->warnings.empty());
  ::chmod(path.c_str(), 0644);
  ::chmod(pki.server_key.c_str(), 0644);
  auto loud = load_web_config(path);
  ASSERT_TRUE(loud);
  ASSERT_EQ(loud->warnings.size(), 2u);
  EXPECT_NE(loud->warnings[0].find("holds password hashes and every user of this machine may read it"),
            std::string::npos);
  EXPECT_NE(loud->warnings[1].find("the key_file " + pki.server_key + " may be read by every user"), std::string::npos);
  auto state = load_web_state(path, nullptr);
  ASSERT_TRUE(state) << state.error().message();
  EXPECT_TRUE((*state)->tls && (*state)->auth);
  auto missing = load_web_config(dir.file("none.yml"));
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("--web-config-file: reading " + dir.file("none.yml")), std::string::npos)
      << missing.error().message();
}

TEST(WebConfig, TheShippedExampleIsReadOnceItsHashIsReal) {
  const std::string path = std::string(GPUDOC_SOURCE_DIR) + "/deploy/systemd/web-config.yml";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // as shipped: refused, naming the user whose hash is a placeholder
  const auto shipped = parse_web_config(text, "/etc/gpudoc/web.yml");
  ASSERT_FALSE(shipped);
  EXPECT_NE(shipped.error().message().find("the password of user \"prometheus\" is not a bcrypt hash"),
            std::string::npos)
      << shipped.error().message();
  const auto at = text.find("REPLACE-WITH-A-BCRYPT-HASH");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, std::string("REPLACE-WITH-A-BCRYPT-HASH").size(), kHash);
  const auto c = parse_web_config(text, "/etc/gpudoc/web.yml");
  ASSERT_TRUE(c) << c.error().message();
  ASSERT_TRUE(c->tls);
  EXPECT_EQ(c->tls->cert_file, "/etc/gpudoc/tls.crt");
  EXPECT_EQ(c->tls->key_file, "/etc/gpudoc/tls.key");
  EXPECT_EQ(c->users.count("prometheus"), 1u);
}

}  // namespace
}  // namespace gpudoc::serve

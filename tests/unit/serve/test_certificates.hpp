// Certificates and bcrypt hashes made at run time for the TLS and authentication tests, with
// OpenSSL and libxcrypt (nothing kept in the tree, nothing expires): a CA, a server certificate for
// 127.0.0.1 and localhost, a client certificate, both signed by the CA; another CA with a client
// certificate of its own, which the first does not know; keys are P-256, files 0600.
//
//   gpudoc::testing::TempDir dir("gpudoc-tls");
//   const auto pki = gpudoc::testing::make_pki(dir);      // pki.ca, pki.server_cert, ...
//   const std::string hash = gpudoc::testing::bcrypt("secret");   // "$2b$04$..."
#pragma once

#include <crypt.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "support/temp_dir.hpp"

namespace gpudoc::testing {

struct Pki {
  std::string ca;  // PEM files
  std::string server_cert;
  std::string server_key;
  std::string client_cert;
  std::string client_key;
  std::string other_ca;
  std::string other_client_cert;
  std::string other_client_key;
};

namespace pki_detail {

inline void add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr || X509_add_ext(cert, ext, -1) != 1) throw std::runtime_error("X509 extension");
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named `cn`, signed by `issuer` (itself when null).
inline X509* certificate(EVP_PKEY* key, const char* cn, X509* issuer, EVP_PKEY* issuer_key, bool ca, long serial) {
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 30L * 86400);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : x;
  add_extension(x, signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  add_extension(x, signer, NID_key_usage,
                ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyEncipherment");
  add_extension(x, signer, NID_subject_key_identifier, "hash");
  if (!ca) {
    add_extension(x, signer, NID_ext_key_usage, "serverAuth,clientAuth");
    add_extension(x, signer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    add_extension(x, signer, NID_authority_key_identifier, "keyid:always");
  }
  if (X509_sign(x, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0) throw std::runtime_error("X509_sign");
  return x;
}

inline void write_pem(const std::string& path, X509* cert, EVP_PKEY* key) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) throw std::runtime_error("cannot write " + path);
  const bool ok = cert != nullptr ? PEM_write_X509(f, cert) == 1
                                  : PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  std::fclose(f);
  ::chmod(path.c_str(), 0600);
  if (!ok) throw std::runtime_error("cannot write PEM " + path);
}

}  // namespace pki_detail

inline Pki make_pki(const TempDir& dir) {
  using namespace pki_detail;
  Pki p{dir.file("ca.crt"),     dir.file("server.crt"),   dir.file("server.key"),       dir.file("client.crt"),
        dir.file("client.key"), dir.file("other-ca.crt"), dir.file("other-client.crt"), dir.file("other-client.key")};
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  EVP_PKEY* server_key = EVP_EC_gen("P-256");
  EVP_PKEY* client_key = EVP_EC_gen("P-256");
  EVP_PKEY* other_key = EVP_EC_gen("P-256");
  EVP_PKEY* other_client_key = EVP_EC_gen("P-256");
  X509* ca = certificate(ca_key, "gpudoc test CA", nullptr, nullptr, true, 1);
  X509* server = certificate(server_key, "localhost", ca, ca_key, false, 2);
  X509* client = certificate(client_key, "prometheus", ca, ca_key, false, 3);
  X509* other = certificate(other_key, "another CA", nullptr, nullptr, true, 4);
  X509* other_client = certificate(other_client_key, "prometheus", other, other_key, false, 5);
  write_pem(p.ca, ca, nullptr);
  write_pem(p.server_cert, server, nullptr);
  write_pem(p.server_key, nullptr, server_key);
  write_pem(p.client_cert, client, nullptr);
  write_pem(p.client_key, nullptr, client_key);
  write_pem(p.other_ca, other, nullptr);
  write_pem(p.other_client_cert, other_client, nullptr);
  write_pem(p.other_client_key, nullptr, other_client_key);
  for (X509* x : {ca, server, client, other, other_client}) X509_free(x);
  for (EVP_PKEY* k : {ca_key, server_key, client_key, other_key, other_client_key}) EVP_PKEY_free(k);
  return p;
}

// A bcrypt hash of `password` made by libxcrypt (crypt_gensalt_rn, crypt_rn), at bcrypt's lowest
// cost (4) unless told: the tests check the scheme, not its slowness.
inline std::string bcrypt(const std::string& password, int cost = 4, const char* prefix = "$2b$") {
  char salt[CRYPT_GENSALT_OUTPUT_SIZE];
  if (::crypt_gensalt_rn(prefix, static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt) == nullptr)
    throw std::runtime_error("crypt_gensalt_rn");
  crypt_data data{};
  const char* hash = ::crypt_rn(password.c_str(), salt, &data, sizeof data);
  if (hash == nullptr || hash[0] == '*') throw std::runtime_error("crypt_rn");
  return hash;
}

}  // namespace gpudoc::testing

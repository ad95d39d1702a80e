// Basic authentication: the Authorization header read, bcrypt hashes made here with libxcrypt
// checked in each of their three spellings, and the verdicts remembered (bcrypt runs once per
// credentials), the good ones apart from the bad.
#include "serve/basic_auth.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_certificates.hpp"

namespace gpudoc::serve {
namespace {

// Standard base64, for the tests' own headers.
std::string base64(const std::string& in) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    for (int k = 3; k >= 0; --k) out += kAlphabet[(v >> (6 * k)) & 63];
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += std::string{kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += std::string{kAlphabet[(v >> 18) & 63], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], '='};
  }
  return out;
}

std::string basic(const std::string& user_and_password) { return "Basic " + base64(user_and_password); }

TEST(BasicAuth, Base64) {
  EXPECT_EQ(base64_decode("cHJvbWV0aGV1czpzM2NyZXQ="), "prometheus:s3cret");
  EXPECT_EQ(base64_decode(""), "");
  EXPECT_EQ(base64_decode("YQ=="), "a");
  EXPECT_EQ(base64_decode("YWI="), "ab");
  EXPECT_EQ(base64_decode("YWJj"), "abc");
  EXPECT_FALSE(base64_decode("YWJ"));   // not a multiple of 4
  EXPECT_FALSE(base64_decode("Y=Jj"));  // padding in the middle
  EXPECT_FALSE(base64_decode("YW=j"));
  EXPECT_FALSE(base64_decode("YW*j"));
  EXPECT_FALSE(base64_decode("YQ==YWJj"));  // padding before the end
  for (const std::string& s :
       std::vector<std::string>{"x", "xy", "xyz", "prometheus:pass:with:colons", std::string("\0\xff\x01", 3)})
    EXPECT_EQ(base64_decode(base64(s)), s);
}

TEST(BasicAuth, TheAuthorizationHeader) {
  const auto c = parse_basic_authorization(basic("prometheus:pa:ss word"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->user, "prometheus");
  EXPECT_EQ(c->password, "pa:ss word");                              // the first ':' ends the user
  EXPECT_TRUE(parse_basic_authorization("basic " + base64("a:b")));  // the scheme in any case
  EXPECT_TRUE(parse_basic_authorization("BASIC  " + base64("a:b") + " "));
  EXPECT_EQ(parse_basic_authorization(basic(":"))->user, "");
  EXPECT_FALSE(parse_basic_authorization("Bearer " + base64("a:b")));
  EXPECT_FALSE(parse_basic_authorization(basic("no colon")));
  EXPECT_FALSE(parse_basic_authorization("Basic not-base64!"));
  EXPECT_FALSE(parse_basic_authorization("Basic"));
  EXPECT_FALSE(parse_basic_authorization(""));
}

TEST(BasicAuth, BcryptHashesOfEachSpellingMatch) {
  for (const char* prefix : {"$2b$", "$2a$", "$2y$"}) {
    const std::string hash = gpudoc::testing::bcrypt("s3cret", 4, prefix);
    ASSERT_TRUE(hash.starts_with(prefix)) << hash;
    EXPECT_TRUE(bcrypt_matches("s3cret", hash)) << hash;
    EXPECT_FALSE(bcrypt_matches("s3cret ", hash));
    EXPECT_FALSE(bcrypt_matches("S3cret", hash));
    EXPECT_FALSE(bcrypt_matches("", hash));
  }
  const std::string hash = gpudoc::testing::bcrypt("ab");
  // crypt would stop at the NUL and see "ab": refused instead
  EXPECT_FALSE(bcrypt_matches(std::string("ab\0cd", 5), hash));
  EXPECT_FALSE(bcrypt_matches("s3cret", "$1$not$bcrypt"));
  std::string tampered = gpudoc::testing::bcrypt("s3cret");
  tampered.back() = tampered.back() == 'a' ? 'b' : 'a';
  EXPECT_FALSE(bcrypt_matches("s3cret", tampered));
}

TEST(BasicAuth, VerdictsAreRememberedSoBcryptRunsOncePerCredentials) {
  BasicAuth auth({{"prometheus", gpudoc::testing::bcrypt("s3cret")}, {"grafana", gpudoc::testing::bcrypt("other")}});
  const std::string right = basic("prometheus:s3cret");
  const std::string wrong = basic("prometheus:guess");
  EXPECT_EQ(auth.check_cached(std::nullopt), BasicAuth::Verdict::kDenied);  // no header
  EXPECT_EQ(auth.check_cached("Bearer x"), BasicAuth::Verdict::kDenied);    // another scheme
  EXPECT_EQ(auth.check_cached(right), BasicAuth::Verdict::kUnknown);        // not checked yet
  EXPECT_TRUE(auth.verify(right));
  EXPECT_EQ(auth.check_cached(right), BasicAuth::Verdict::kAllowed);
  EXPECT_EQ(auth.check_cached(wrong), BasicAuth::Verdict::kUnknown);
  EXPECT_FALSE(auth.verify(wrong));
  EXPECT_EQ(auth.check_cached(wrong), BasicAuth::Verdict::kDenied);
  // another user's password, an unknown user: no
  EXPECT_FALSE(auth.verify(basic("grafana:s3cret")));
  EXPECT_FALSE(auth.verify(basic("nobody:s3cret")));
  EXPECT_EQ(auth.check_cached(basic("nobody:s3cret")), BasicAuth::Verdict::kDenied);
  EXPECT_TRUE(auth.verify(basic("grafana:other")));
  EXPECT_FALSE(auth.verify(std::nullopt));
}

TEST(BasicAuth, WrongGuessesDoNotPushTheGoodOnesOut) {
  // More wrong passwords than the denied verdicts kept (each a bcrypt at cost 4, about a
  // millisecond): the denied ones are forgotten, the good one is not.
  BasicAuth auth({{"prometheus", gpudoc::testing::bcrypt("s3cret")}});
  ASSERT_TRUE(auth.verify(basic("prometheus:s3cret")));
  for (std::size_t i = 0; i < BasicAuth::kDeniedKept + 10; ++i)
    ASSERT_FALSE(auth.verify(basic("prometheus:guess" + std::to_string(i))));
  EXPECT_EQ(auth.check_cached(basic("prometheus:s3cret")), BasicAuth::Verdict::kAllowed);
  EXPECT_EQ(auth.check_cached(basic("prometheus:guess0")), BasicAuth::Verdict::kUnknown);  // forgotten
  EXPECT_EQ(auth.check_cached(basic("prometheus:guess" + std::to_string(BasicAuth::kDeniedKept + 9))),
            BasicAuth::Verdict::kDenied);
}

}  // namespace
}  // namespace gpudoc::serve

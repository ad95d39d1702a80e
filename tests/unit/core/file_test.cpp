// core::read_file / write_file: a round trip, a truncating rewrite, and errors that name the path.
#include "core/file.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"

namespace gpudoc::core {
namespace {

class FileTest : public ::testing::Test {
 protected:
  testing::TempDir tmp_{"gpudoc-file"};
  const std::filesystem::path& dir_ = tmp_.path();
};

TEST_F(FileTest, WriteThenReadBackAndRewriteTruncates) {
  const std::string path = (dir_ / "page.html").string();
  std::string big(300000, 'x');
  big[1000] = '\0';  // bytes, not a C string
  ASSERT_TRUE(write_file(path, big).ok());
  auto back = read_file(path);
  ASSERT_TRUE(back.ok()) << back.error().message();
  EXPECT_EQ(*back, big);
  ASSERT_TRUE(write_file(path, "short").ok());
  EXPECT_EQ(*read_file(path), "short");
  ASSERT_TRUE(write_file(path, "").ok());
  EXPECT_EQ(*read_file(path), "");
}

TEST_F(FileTest, ErrorsNameThePathAndWhy) {
  const std::string missing_dir = (dir_ / "no" / "such" / "page.html").string();
  const auto w = write_file(missing_dir, "x");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().kind(), ErrorKind::kIo);
  EXPECT_EQ(w.error().message(), "writing " + missing_dir + ": No such file or directory");
  const auto r = read_file(missing_dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "reading " + missing_dir + ": No such file or directory");
  // A directory cannot be written as a file.
  const auto d = write_file(dir_.string(), "x");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message().find("writing " + dir_.string() + ": "), std::string::npos);
}

}  // namespace
}  // namespace gpudoc::core

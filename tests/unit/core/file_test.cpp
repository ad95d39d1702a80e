// core::read_file / write_file: a round trip, a truncating rewrite, errors that name the path, and a
// write that fails leaving the old file whole (no truncated page on a full disk).
#include "core/file.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A write that cannot finish (here: the file-size limit, as a full disk would) leaves the old file
// as it was and no temporary file behind. Run in a child: the limit must not reach other tests.
TEST_F(FileTest, FailedWriteLeavesTheOldFileWhole) {
  const std::string path = (dir_ / "page.html").string();
  ASSERT_TRUE(write_file(path, "the old page").ok());
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const auto st = write_file(path, std::string(100000, 'y'));
    const bool named =
        !st.ok() && st.error().kind() == ErrorKind::kIo && st.error().message().rfind("writing " + path + ": ", 0) == 0;
    ::_exit(named ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the failed write did not report a kIo error naming the file";
  EXPECT_EQ(*read_file(path), "the old page");
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_)) ++entries;
  EXPECT_EQ(entries, 1u) << "a temporary file was left beside the page";
}

// A device named as the output is written through, never replaced by a rename.
TEST_F(FileTest, DeviceIsWrittenThroughAndFullDeviceFails) {
  ASSERT_TRUE(write_file("/dev/null", "x").ok());
  struct stat st {};
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  if (::access("/dev/full", W_OK) == 0) {
    const auto full = write_file("/dev/full", std::string(100000, 'z'));
    ASSERT_FALSE(full.ok());
    EXPECT_EQ(full.error().message(), "writing /dev/full: No space left on device");
  }
}

// A new file gets the usual mode (0666 & ~umask), not mkstemp's private 0600; a rewrite keeps the
// file's own mode.
TEST_F(FileTest, ModeOfNewAndRewrittenFiles) {
  const mode_t old_mask = ::umask(022);
  const std::string path = (dir_ / "r.json").string();
  ASSERT_TRUE(write_file(path, "{}").ok());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  ASSERT_TRUE(write_file(path, "{\"a\":1}").ok());
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ::umask(old_mask);
}

}  // namespace
}  // namespace gpudoc::core

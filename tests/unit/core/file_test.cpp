// core::read_file / write_file: a round trip, a truncating rewrite, errors that name the path, and a
// write that fails leaving the old file whole (no truncated page on a full disk). Every read is
// bounded by its kind's InputLimits: a regular file over the limit is refused before it is read,
// /dev/zero and an endless FIFO once the limit has come, each naming the file and the limit; the
// line reader's limits (line length, line count, size) name the line.
#include "core/file.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
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

// A stream whose output cannot arrive (/dev/full: ENOSPC) is an I/O error naming the stream and the
// reason; one that took everything is fine.
TEST_F(FileTest, FlushStreamSaysWhenTheOutputIsIncomplete) {
  std::FILE* full = std::fopen("/dev/full", "w");
  ASSERT_NE(full, nullptr);
  std::fputs("lost", full);
  const auto st = flush_stream(full, "stdout");
  std::fclose(full);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), ErrorKind::kIo);
  EXPECT_EQ(st.error().message(), "writing to stdout failed (No space left on device): the output is incomplete");

  std::FILE* file = std::fopen((dir_ / "out.txt").c_str(), "w");
  ASSERT_NE(file, nullptr);
  std::fputs("kept", file);
  EXPECT_TRUE(flush_stream(file, "out.txt").ok());
  std::fclose(file);
  EXPECT_EQ(*read_file((dir_ / "out.txt").string()), "kept");
}

TEST(InputLimits, DescribedAsMessagesShowThem) {
  EXPECT_EQ(describe_limit(4ULL << 20), "4 MiB");
  EXPECT_EQ(describe_limit(1ULL << 30), "1 GiB");
  EXPECT_EQ(describe_limit(1ULL << 40), "1 TiB");
  EXPECT_EQ(describe_limit(64ULL << 10), "64 KiB");
  EXPECT_EQ(describe_limit(1000), "1000 bytes");
}

TEST_F(FileTest, AFileOverItsKindsLimitIsRefusedNamingFileAndLimit) {
  const std::string path = (dir_ / "policy").string();
  ASSERT_TRUE(write_file(path, std::string(2048, 'x')).ok());
  const InputLimits policy{.max_bytes = 2048, .what = "a guard policy"};
  EXPECT_EQ(read_file(path, policy)->size(), 2048u);  // at the limit: read
  const InputLimits small{.max_bytes = 2047, .what = "a guard policy"};
  auto over = read_file(path, small);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().kind(), ErrorKind::kBadInput);
  EXPECT_EQ(over.error().message(), path + ": larger than the limit of 2047 bytes for a guard policy");
}

// /dev/zero never ends: read up to the limit and refused, in memory near the limit (checked under an
// address-space limit far below what reading it whole takes).
TEST(FileLimits, DevZeroIsRefusedAtTheLimitInBoundedMemory) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const rlimit as{512ULL << 20, 512ULL << 20};
    ::setrlimit(RLIMIT_AS, &as);
    ::alarm(60);  // hang guard: this reads 4 MiB, well under a second
    auto r = read_file("/dev/zero", {.max_bytes = 4 << 20, .what = "a serve config"});
    const bool ok = !r.ok() && r.error().kind() == ErrorKind::kBadInput &&
                    r.error().message() == "/dev/zero: larger than the limit of 4 MiB for a serve config";
    ::_exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The default bound holds too.
  auto whole = read_file("/dev/zero");
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().message(), "/dev/zero: larger than the limit of 64 MiB for a file gpudoc reads whole");
}

// A FIFO whose writer never stops ends at the limit too.
TEST_F(FileTest, AnEndlessFifoIsRefusedAtTheLimit) {
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    ::signal(SIGPIPE, SIG_DFL);
    FILE* f = std::fopen(fifo.c_str(), "w");
    const std::string chunk(4096, '\n');
    while (f != nullptr && std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
    }
    ::_exit(0);
  }
  auto r = read_file(fifo, {.max_bytes = 1 << 20, .what = "a baseline config"});
  ::kill(writer, SIGKILL);
  ::waitpid(writer, nullptr, 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), fifo + ": larger than the limit of 1 MiB for a baseline config");
}

TEST(LineReaderLimits, ALineTooLongTooManyLinesAndTooManyBytesNameTheLine) {
  const InputLimits limits{.max_bytes = 20, .max_line_bytes = 4, .max_lines = 3, .what = "CUPTI records"};
  auto read_all = [&](std::string_view text) -> Status {
    LineReader lines = LineReader::of_text(text, "r.txt", limits);
    while (true) {
      auto line = lines.next();
      if (!line) return line.error();
      if (!*line) return ok_status();
    }
  };
  EXPECT_TRUE(read_all("abcd\nab\n\n").ok());  // at each limit
  EXPECT_EQ(read_all("abcde\n").error().message(), "r.txt line 1: the line is longer than the limit of 4 bytes");
  EXPECT_EQ(read_all("a\nb\n\nc\n").error().message(), "r.txt line 4: more than 3 lines, the limit for CUPTI records");
  // From a file, the size too (in memory it is already bounded by the text).
  auto zero = LineReader::open("/dev/zero", limits);
  ASSERT_TRUE(zero.ok());
  EXPECT_EQ(zero->next().error().message(), "/dev/zero line 1: the line is longer than the limit of 4 bytes");
  const testing::TempFile f("lines.txt", "a\nb\nc\n" + std::string(30, 'x'));
  auto file = LineReader::open(f.path(), {.max_bytes = 20, .max_line_bytes = 64, .what = "CUPTI records"});
  ASSERT_TRUE(file.ok());
  Status st = ok_status();
  while (st) {
    auto line = file->next();
    if (!line)
      st = line.error();
    else if (!*line)
      break;
  }
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message(), f.path() + " line 4: larger than the limit of 20 bytes for CUPTI records");
}

}  // namespace
}  // namespace gpudoc::core

// core::PrivateDir and create_new_file: a private folder nobody else can enter, removed with its
// contents; a new file that never opens or follows what another user planted at its name.
#include "core/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "core/file.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::core {
namespace {

TEST(PrivateDir, IsMode0700UnderTheBaseAndGoesWithItsFiles) {
  testing::TempDir base("gpudoc-base");
  std::string path;
  {
    auto dir = PrivateDir::create("gpudoc-run", base.str());
    ASSERT_TRUE(dir.ok()) << dir.error().message();
    path = dir->path();
    EXPECT_EQ(path.rfind(base.str() + "/gpudoc-run-", 0), 0u) << path;
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_EQ(st.st_uid, ::getuid());
    ASSERT_TRUE(write_file(dir->file("a.jsonl"), "x").ok());
    std::filesystem::create_directory(dir->file("sub"));
    ASSERT_TRUE(write_file(dir->file("sub/b"), "y").ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(PrivateDir, KeepLeavesItAndTwoAreNeverTheSame) {
  testing::TempDir base("gpudoc-base");
  auto a = PrivateDir::create("gpudoc-x", base.str());
  auto b = PrivateDir::create("gpudoc-x", base.str());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->path(), b->path());
  const std::string kept = a->path();
  a->keep();
  { PrivateDir gone = std::move(*a); }
  EXPECT_TRUE(std::filesystem::exists(kept));
}

TEST(PrivateDir, MissingBaseIsNamed) {
  auto dir = PrivateDir::create("gpudoc-x", "/nonexistent/gpudoc-base");
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().kind(), ErrorKind::kIo);
  EXPECT_EQ(dir.error().message(),
            "creating a private temporary folder in /nonexistent/gpudoc-base: No such file or directory");
}

// ---- folders left by a run that was killed ----

std::string slurp(const std::string& path) {
  auto t = read_file(path);
  return t ? *t : std::string("<unreadable>");
}

// A folder made by a child process that then dies without removing it (as kill -9 leaves it).
// `keep`: the child kept it on purpose first.
std::string left_by_a_dead_child(const std::string& base, bool keep = false) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    auto dir = PrivateDir::create("gpudoc-baseline", base);
    if (dir.ok() && keep) dir->keep();
    const std::string path = dir.ok() ? dir->path() : std::string();
    (void)!::write(fds[1], path.data(), path.size());
    ::_exit(0);  // no destructors: the folder stays
  }
  ::close(fds[1]);
  char buf[4096];
  const ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// A folder like PrivateDir's with an owner record written by hand.
std::string with_record(const testing::TempDir& base, const std::string& name, const std::string& record,
                        mode_t mode = 0700) {
  const std::string dir = base.file(name);
  std::filesystem::create_directory(dir);
  ::chmod(dir.c_str(), mode);
  std::ofstream(dir + "/" + kOwnerFile) << record;
  return dir;
}

std::string own_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? std::to_string(st.st_ino) : "0";
}

TEST(PrivateDir, RecordsTheProcessThatMadeIt) {
  testing::TempDir base("gpudoc-base");
  auto dir = PrivateDir::create("gpudoc-x", base.str());
  ASSERT_TRUE(dir.ok()) << dir.error().message();
  const std::string record = slurp(dir->file(kOwnerFile));
  EXPECT_EQ(record.rfind(std::to_string(::getpid()) + " ", 0), 0u) << record;
  EXPECT_EQ(record.substr(record.size() - own_namespace().size() - 2), " " + own_namespace() + "\n") << record;
  dir->keep();  // a kept folder is never swept: its record goes
  EXPECT_FALSE(std::filesystem::exists(dir->file(kOwnerFile)));
  std::filesystem::remove_all(dir->path());
}

TEST(RemoveOrphanedDirs, OnlyThisUsersGpudocFoldersWhoseOwnerIsGone) {
  testing::TempDir base("gpudoc-base");
  // In this order: each PrivateDir::create sweeps the base first.
  auto live = PrivateDir::create("gpudoc-live", base.str());
  ASSERT_TRUE(live.ok());
  const std::string kept = left_by_a_dead_child(base.str(), true);
  const std::string dead = left_by_a_dead_child(base.str());
  ASSERT_FALSE(dead.empty());
  const std::string record = slurp(dead + "/" + kOwnerFile);
  const std::string dead_pid = record.substr(0, record.find(' '));
  // This pid, started at another time: the pid was used again (by this process).
  const std::string reused =
      with_record(base, "gpudoc-reused-a", fmt::format("{} 1 {}\n", ::getpid(), own_namespace()));
  const std::string other_ns = with_record(base, "gpudoc-ns-a", dead_pid + " 1 1\n");
  const std::string other_name = with_record(base, "other-a", dead_pid + " 1 " + own_namespace() + "\n");
  const std::string open_mode = with_record(base, "gpudoc-open-a", dead_pid + " 1 " + own_namespace() + "\n", 0755);
  const std::string half = with_record(base, "gpudoc-half-a", dead_pid + " 1 " + own_namespace());  // no newline
  const std::string bare = base.file("gpudoc-bare-a");
  std::filesystem::create_directory(bare);
  ::chmod(bare.c_str(), 0700);
  testing::TempDir elsewhere("gpudoc-elsewhere");
  const std::string target = with_record(elsewhere, "gpudoc-t", dead_pid + " 1 " + own_namespace() + "\n");
  std::filesystem::create_directory_symlink(target, base.file("gpudoc-link"));

  EXPECT_EQ(remove_orphaned_dirs(base.str()), 2u);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_FALSE(std::filesystem::exists(reused));
  for (const std::string& stays : {kept, live->path(), other_ns, other_name, open_mode, half, bare, target})
    EXPECT_TRUE(std::filesystem::exists(stays)) << stays;
  EXPECT_TRUE(std::filesystem::is_symlink(base.file("gpudoc-link")));
  std::filesystem::remove_all(kept);
}

TEST(RemoveOrphanedDirs, ANewPrivateDirSweepsWhatADeadRunLeft) {
  testing::TempDir base("gpudoc-base");
  const std::string dead = left_by_a_dead_child(base.str());
  ASSERT_TRUE(std::filesystem::exists(dead));
  auto next = PrivateDir::create("gpudoc-baseline", base.str());
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(next->path()));
}

TEST(RemoveOrphanedDirs, AFolderOfAnotherUserStays) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a folder to another user";
  testing::TempDir base("gpudoc-base");
  const std::string dead = left_by_a_dead_child(base.str());
  ASSERT_EQ(::chown(dead.c_str(), 65534, 65534), 0);
  EXPECT_EQ(remove_orphaned_dirs(base.str()), 0u);
  EXPECT_TRUE(std::filesystem::exists(dead));
}

TEST(CreateNewFile, NeverOpensOrFollowsWhatIsPlanted) {
  testing::TempDir base("gpudoc-plant");
  const std::string victim = base.file("victim");
  { std::ofstream(victim) << "keep me"; }
  const std::string link = base.file("link");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  const std::string fifo = base.file("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  for (const std::string& planted : {link, fifo, victim}) {
    auto fd = create_new_file(planted);
    ASSERT_FALSE(fd.ok()) << planted;
    EXPECT_EQ(fd.error().message(), "creating " + planted + ": something already exists at that name");
  }
  EXPECT_EQ(*read_file(victim), "keep me");
  auto fresh = create_new_file(base.file("new"));
  ASSERT_TRUE(fresh.ok()) << fresh.error().message();
  ASSERT_TRUE(write_all(fresh->get(), "hello", "new").ok());
  EXPECT_EQ(*read_file(base.file("new")), "hello");
  struct stat st {};
  ASSERT_EQ(::stat(base.file("new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace gpudoc::core

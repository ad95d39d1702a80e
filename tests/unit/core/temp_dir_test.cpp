// core::PrivateDir and create_new_file: a private folder nobody else can enter, removed with its
// contents; a new file that never opens or follows what another user planted at its name.
#include "core/temp_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

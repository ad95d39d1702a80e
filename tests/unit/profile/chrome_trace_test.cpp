// profile::save_chrome_trace: `gpudoc profile -o`'s file is the Chrome trace of the records, and a
// file that cannot be written is kIo naming it.
#include "profile/chrome_trace.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/temp_dir.hpp"

namespace gpudoc::profile {
namespace {

RecordSet one_kernel() {
  auto set = read_records_text(
      "H\tgpudoc-profile\t1\t7\t130001\n"
      "K\t100\t200\t0\t7\t11\t64\t1\t1\t128\t1\t1\t0\t_Z3fooPf\n",
      "records-7.txt");
  EXPECT_TRUE(set.ok()) << set.error().message();
  return set ? std::move(*set) : RecordSet{};
}

TEST(ChromeTraceFile, HoldsTheRecordsAsTraceEvents) {
  auto dir = core::PrivateDir::create("gpudoc-test-profile");
  ASSERT_TRUE(dir.ok()) << dir.error().message();
  const std::string path = dir->file("trace.json");
  ASSERT_TRUE(save_chrome_trace(one_kernel(), path).ok());
  std::ifstream in(path);
  const auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.contains("traceEvents"));
  bool kernel = false;
  for (const auto& e : j["traceEvents"])
    if (e.value("cat", "") == "kernel" && e.value("name", "").find("foo") != std::string::npos) kernel = true;
  EXPECT_TRUE(kernel) << j.dump();
}

TEST(ChromeTraceFile, AFileThatCannotBeWrittenIsAnIoErrorNamingIt) {
  auto dir = core::PrivateDir::create("gpudoc-test-profile");
  ASSERT_TRUE(dir.ok()) << dir.error().message();
  const std::string path = dir->path() + "/no-such-folder/trace.json";
  const auto st = save_chrome_trace(one_kernel(), path);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().kind(), core::ErrorKind::kIo);
  EXPECT_NE(st.error().message().find(path), std::string::npos) << st.error().message();
}

}  // namespace
}  // namespace gpudoc::profile

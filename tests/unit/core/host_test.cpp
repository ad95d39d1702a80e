// core/host: the host name every record carries is the kernel's, never empty.
#include "core/host.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

namespace gpudoc::core {
namespace {

TEST(HostName, IsTheKernelsName) {
  char buf[256] = {};
  ASSERT_EQ(gethostname(buf, sizeof buf - 1), 0);
  const std::string expected = buf[0] == '\0' ? "unknown" : buf;
  EXPECT_EQ(host_name(), expected);
  EXPECT_FALSE(host_name().empty());
}

}  // namespace
}  // namespace gpudoc::core

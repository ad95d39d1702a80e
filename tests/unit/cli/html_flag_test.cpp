// cli::html_flag_status: --html is refused before any work when this build cannot write a page,
// with exit 3 and the path and the cure in the message; nothing is refused when no page is asked
// for or the plot library is built in.
#include <gtest/gtest.h>

#include <string>

#include "cli/common.hpp"
#include "view/web_assets.hpp"

namespace gpudoc::cli {
namespace {

TEST(HtmlFlag, RefusedWithoutThePlotLibraryNamingThePathAndTheCure) {
  const auto st = html_flag_status("out/tune.html", false);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(core::exit_code(st.error().kind()), core::kExitEnvironment);
  EXPECT_NE(st.error().message().find("--html out/tune.html"), std::string::npos) << st.error().message();
  EXPECT_NE(st.error().message().find("npm ci --prefix web"), std::string::npos) << st.error().message();
}

TEST(HtmlFlag, AcceptedWhenNoPageIsAskedForOrTheLibraryIsBuiltIn) {
  EXPECT_TRUE(html_flag_status("", false));
  EXPECT_TRUE(html_flag_status("", true));
  EXPECT_TRUE(html_flag_status("page.html", true));
  EXPECT_TRUE(check_html_flag(std::optional<std::string>{}));
}

TEST(HtmlFlag, ThisBuildAnswersAsItsAssetsAre) {
  EXPECT_EQ(static_cast<bool>(check_html_flag(std::optional<std::string>{"page.html"})),
            view::web_assets().has_value());
}

}  // namespace
}  // namespace gpudoc::cli

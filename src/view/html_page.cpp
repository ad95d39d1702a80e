#include "view/html_page.hpp"

#include <fmt/format.h>

#include "core/version.hpp"
#include "view/dashboard_assets.hpp"
#include "view/embedded_files.hpp"

namespace gpudoc::view {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A script/style body must not contain its own end tag; inside JS code "</" only occurs in
// strings, regular expressions and comments, where "<\\/" means the same.
std::string guard_end_tag(std::string_view body, std::string_view tag) {
  std::string out(body);
  std::string needle = "</" + std::string(tag);
  for (std::size_t p = 0; (p = out.find(needle, p)) != std::string::npos;) {
    out.replace(p, 2, "<\\/");
    p += 3;
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& j) {
  // Replacement on the dump is safe: <, >, & and U+2028/9 can only occur inside JSON strings,
  // where their \u escapes mean the same. Invalid UTF-8 in the input is replaced, not thrown.
  std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else if (c == '\xe2' && i + 2 < s.size() && s[i + 1] == '\x80' && (s[i + 2] == '\xa8' || s[i + 2] == '\xa9')) {
      out += s[i + 2] == '\xa8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string_view report_file(std::string_view name) {
  for (const auto& f : detail::report_files())
    if (f.name == name) return f.body;
  return {};
}

std::string html_page_start(std::string_view title, const WebAssets& assets, std::string_view page_css) {
  std::string page;
  page +=
      "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += fmt::format("<meta name=\"generator\" content=\"gpudoc {} ({})\">\n", core::kVersion,
                      html_escape(assets.version));
  page += "<title>" + html_escape(title) + "</title>\n";
  // Errors are recorded into the DOM so that a headless browser (and a person) can see them.
  const auto errors = dashboard_asset("/assets/errors.js");
  page += "<script>" + guard_end_tag(errors ? errors->body : std::string_view(), "script") + "</script>\n";
  page += "<style>" + guard_end_tag(assets.css, "style") + "</style>\n";
  page += "<style>" + std::string(page_css) + "</style>\n</head>\n<body data-rendered=\"no\">\n";
  page += "<h1>" + html_escape(title) + "</h1>\n";
  return page;
}

std::string html_page_end(const nlohmann::json& data, std::string_view page_js, const WebAssets& assets) {
  std::string end = "<script type=\"application/json\" id=\"gpudoc-data\">" + script_safe_json(data) + "</script>\n";
  end += "<script>" + guard_end_tag(assets.js, "script") + "</script>\n";
  end += "<script>" + std::string(page_js) + "</script>\n</body>\n</html>\n";
  return end;
}

}  // namespace gpudoc::view

#include "view/help_text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "view/embedded_files.hpp"

namespace gpudoc::view {
namespace {

core::Error bad(const std::string& message) { return core::Error(core::ErrorKind::kInternal, message); }

// A section's text without the blank lines that separate it from the next section line.
std::string trimmed(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return std::string(s);
}

core::Status fill_in(std::string& text, HelpFill fill) {
  for (const auto& [key, value] : fill) {
    const std::string marker = fmt::format("@{}@", key);
    for (auto at = text.find(marker); at != std::string::npos; at = text.find(marker, at + value.size()))
      text.replace(at, marker.size(), value);
  }
  // What is left of the form @key@ (lower-case letters and '_') is a placeholder nobody filled;
  // any other '@' is text ("replay:FILE[@SPEED]").
  for (auto open = text.find('@'); open != std::string::npos; open = text.find('@', open + 1)) {
    auto end = open + 1;
    while (end < text.size() && ((text[end] >= 'a' && text[end] <= 'z') || text[end] == '_')) ++end;
    if (end > open + 1 && end < text.size() && text[end] == '@')
      return bad(fmt::format("placeholder {} has no value", text.substr(open, end - open + 1)));
  }
  return core::ok_status();
}

bool indented(std::string_view line) { return !line.empty() && (line.front() == ' ' || line.front() == '\t'); }

std::string_view strip(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

// An entry's first line: "NAME [VALUE]" up to two spaces or more, then the start of its help.
core::Status open_option(std::string_view line, std::vector<HelpOption>& out) {
  const auto gap = line.find("  ");
  const auto head = strip(line.substr(0, gap));
  HelpOption o;
  o.name = std::string(head.substr(0, head.find(' ')));
  if (const auto space = head.find(' '); space != std::string_view::npos) {
    o.value = std::string(head.substr(space + 1));
    if (o.value.find(' ') != std::string::npos)
      return bad(fmt::format("[options] {}: a name and a value, then two spaces before the help", head));
  }
  if (gap != std::string_view::npos) o.text = std::string(strip(line.substr(gap)));
  for (const auto& seen : out)
    if (seen.name == o.name) return bad(fmt::format("[options] {} given twice", o.name));
  out.push_back(std::move(o));
  return core::ok_status();
}

core::Result<std::vector<HelpOption>> parse_options(std::string_view text) {
  std::vector<HelpOption> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto line = text.substr(pos, end - pos);
    pos = end + 1;
    if (strip(line).empty()) continue;
    if (!indented(line)) {
      if (auto st = open_option(line, out); !st) return st.error();
    } else if (out.empty()) {
      return bad(fmt::format("[options]: \"{}\" continues no entry", strip(line)));
    } else {
      auto& text_so_far = out.back().text;
      text_so_far += (text_so_far.empty() ? "" : " ") + std::string(strip(line));
    }
  }
  for (const auto& o : out)
    if (o.text.empty()) return bad(fmt::format("[options] {} has no help", o.name));
  return out;
}

}  // namespace

const HelpOption* HelpText::option(std::string_view name) const {
  for (const auto& o : options)
    if (o.name == name) return &o;
  return nullptr;
}

core::Result<std::string> option_text(const HelpOption& option, HelpFill fill) {
  std::string text = option.text;
  if (auto st = fill_in(text, fill); !st) return st.error().with_context(option.name);
  for (auto at = text.find(" \n"); at != std::string::npos; at = text.find(" \n")) text.erase(at, 1);
  return text;
}

core::Result<HelpText> parse_help(std::string_view text, HelpFill fill) {
  HelpText out;
  std::string options;
  std::string* into = nullptr;
  bool seen_description = false, seen_footer = false, seen_options = false;
  std::string current;
  auto close_section = [&] {
    if (into != nullptr) *into = trimmed(current);
    current.clear();
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const auto line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() > 2 && line.front() == '[' && line.back() == ']') {
      close_section();
      const auto name = line.substr(1, line.size() - 2);
      bool* seen = name == "description" ? &seen_description
                   : name == "footer"    ? &seen_footer
                   : name == "options"   ? &seen_options
                                         : nullptr;
      if (seen == nullptr) return bad(fmt::format("unknown section [{}]", name));
      if (*seen) return bad(fmt::format("section [{}] given twice", name));
      *seen = true;
      into = name == "description" ? &out.description : name == "footer" ? &out.footer : &options;
      continue;
    }
    if (into == nullptr) {
      if (line.empty()) continue;
      return bad("text before the first [description], [options] or [footer] line");
    }
    current.append(line);
    current.push_back('\n');
  }
  close_section();
  auto parsed = parse_options(options);
  if (!parsed) return parsed.error();
  out.options = std::move(*parsed);
  if (auto st = fill_in(out.description, fill); !st) return st.error();
  if (auto st = fill_in(out.footer, fill); !st) return st.error();
  return out;
}

core::Result<HelpText> HelpBook::open(const std::string& name, HelpFill fill) {
  const auto text = help_file(name);
  if (!text) return bad(fmt::format("docs/cli/{}.txt is not in the build", name));
  auto help = parse_help(*text, fill);
  if (!help) return help.error().with_context(fmt::format("docs/cli/{}.txt", name));
  files_.insert_or_assign(name, *help);
  return help;
}

core::Result<HelpOption> HelpBook::option(const std::string& name, const std::string& flag, HelpFill fill) {
  // NAME, then each name it continues ("baseline.record": "baseline"), then gpudoc's.
  std::vector<std::string> path{name};
  for (auto dot = name.rfind('.'); dot != std::string::npos && dot > 0; dot = name.rfind('.', dot - 1))
    path.push_back(name.substr(0, dot));
  if (name != "gpudoc") path.emplace_back("gpudoc");
  for (const auto& file : path) {
    const auto found = files_.find(file);
    const HelpOption* entry = found == files_.end() ? nullptr : found->second.option(flag);
    if (entry == nullptr) continue;
    auto text = option_text(*entry, fill);
    if (!text) return text.error().with_context(fmt::format("docs/cli/{}.txt", file));
    taken_.insert(file + " " + flag);
    return HelpOption{entry->name, entry->value, std::move(*text)};
  }
  return bad(fmt::format("{} of gpudoc {}: no help in docs/cli/{}.txt or the files above it", flag, name, name));
}

std::vector<std::string> HelpBook::untaken() const {
  std::vector<std::string> out;
  for (const auto& [name, file] : files_)
    for (const auto& o : file.options)
      if (taken_.count(name + " " + o.name) == 0) out.push_back(fmt::format("docs/cli/{}.txt {}", name, o.name));
  return out;
}

std::optional<std::string_view> help_file(std::string_view name) {
  const std::string file = fmt::format("{}.txt", name);
  for (const auto& f : detail::help_files())
    if (f.name == file) return f.body;
  return std::nullopt;
}

std::vector<std::string> help_names() {
  std::vector<std::string> out;
  for (const auto& f : detail::help_files()) out.emplace_back(f.name.substr(0, f.name.size() - 4));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gpudoc::view

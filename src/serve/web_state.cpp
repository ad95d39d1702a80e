#include "serve/web_state.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>

#include "core/text.hpp"

namespace gpudoc::serve {
namespace {

// The state, and the files it was made from (the config first).
core::Result<std::shared_ptr<const WebState>> load(const std::string& path, std::vector<std::string>* warnings,
                                                   std::vector<std::string>* files) {
  auto config = load_web_config(path);
  if (!config) return config.error();
  auto state = std::make_shared<WebState>();
  if (files != nullptr) files->assign({path});
  if (config->tls) {
    auto tls = TlsContext::load(*config->tls);
    if (!tls) return tls.error();
    state->tls = std::move(*tls);
    state->client_auth = config->tls->client_auth;
    if (warnings != nullptr)
      warnings->insert(warnings->end(), state->tls->warnings().begin(), state->tls->warnings().end());
    if (files != nullptr) {
      files->push_back(config->tls->cert_file);
      files->push_back(config->tls->key_file);
      if (!config->tls->client_ca_file.empty()) files->push_back(config->tls->client_ca_file);
    }
  }
  if (!config->users.empty()) state->auth = std::make_shared<BasicAuth>(config->users);
  state->headers = config->headers;
  if (warnings != nullptr) warnings->insert(warnings->end(), config->warnings.begin(), config->warnings.end());
  return std::shared_ptr<const WebState>(std::move(state));
}

}  // namespace

core::Result<std::shared_ptr<const WebState>> load_web_state(const std::string& path,
                                                             std::vector<std::string>* warnings) {
  return load(path, warnings, nullptr);
}

core::Result<std::unique_ptr<WebWatch>> WebWatch::open(std::string path, std::vector<std::string>* warnings) {
  std::vector<std::string> files;
  auto state = load(path, warnings, &files);
  if (!state) return state.error();
  std::unique_ptr<WebWatch> w(new WebWatch(std::move(path), std::move(*state)));
  w->files_ = std::move(files);
  w->seen_ = w->look();
  w->next_look_ = Clock::now() + kLookEvery;
  return w;
}

std::vector<WebWatch::Seen> WebWatch::look() const {
  std::vector<Seen> out;
  for (const std::string& f : files_) {
    struct stat st {};
    Seen s;
    if (::stat(f.c_str(), &st) != 0) {
      s.error = errno;
    } else {
      s = Seen{.error = 0,
               .dev = st.st_dev,
               .ino = st.st_ino,
               .size = st.st_size,
               .mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
               .ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1'000'000'000 + st.st_ctim.tv_nsec};
    }
    out.push_back(s);
  }
  return out;
}

std::shared_ptr<const WebState> WebWatch::current(Clock::time_point now, std::vector<core::LogRecord>& said) {
  if (now < next_look_) return state_;
  next_look_ = now + kLookEvery;
  auto seen = look();
  if (seen == seen_) return state_;
  std::vector<std::string> warnings, files;
  auto state = load(path_, &warnings, &files);
  const std::string shown = core::terminal_safe(path_);
  if (!state) {
    auto broken = std::make_shared<WebState>();
    broken->failure = state.error().message();
    state_ = std::move(broken);
    said.push_back(
        {.level = core::LogLevel::kError,
         .msg = "web config refused",
         .fields = {{"file", path_}, {"err", state_->failure}},
         .text = fmt::format("{}; refusing every connection until the file is valid again", state_->failure)});
    seen_ = std::move(seen);  // said once, until the files change again
    return state_;
  }
  state_ = std::move(*state);
  files_ = std::move(files);
  seen_ = look();
  said.push_back({.level = core::LogLevel::kInfo,
                  .msg = "web config reloaded",
                  .fields = {{"file", path_}, {"tls", state_->tls != nullptr}, {"basic_auth", state_->auth != nullptr}},
                  .text = fmt::format("{} changed: read again", shown)});
  for (const std::string& w : warnings)
    said.push_back(
        {.level = core::LogLevel::kWarn, .msg = "web config", .fields = {{"file", path_}, {"warning", w}}, .text = w});
  return state_;
}

}  // namespace gpudoc::serve

// gpudoc::core::Result — the one error model used across library boundaries.
//
// A Result<T> holds either a value or an Error. Errors carry a kind (which decides the exit code in
// main), a message, and the context they gathered on the way up:
//
//   Result<Trace> r = read_trace(path);
//   if (!r) return r.error().with_context(fmt::format("reading {}", path));
//   use(r.value());
//
// No exceptions cross a library boundary; code that can throw (parsers, std::filesystem) converts
// at its edge.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace gpudoc::core {

// What kind of failure this is. The CLI maps kinds to exit codes (see exit_code()).
enum class ErrorKind {
  kUsage,         // the user asked for something malformed (flags, arguments)        -> 2
  kBadInput,      // a file or value the user gave is invalid                          -> 2
  kEnvironment,   // no GPU, no driver, a missing library, permission denied           -> 3
  kNotSupported,  // this device or build does not support the request                 -> 3
  kGpuLost,       // the GPU fell off the bus or needs a reset                         -> 3
  kTimeout,       // a call or a child process did not finish in time                  -> 3
  kIo,            // reading or writing a file failed (disk full, permission)          -> 2
  kInternal,      // a bug in gpudoc                                                   -> 4
};

// Exit codes, documented in README.md and kept stable.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFinding = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitEnvironment = 3;
inline constexpr int kExitInternal = 4;

[[nodiscard]] int exit_code(ErrorKind kind) noexcept;
[[nodiscard]] const char* to_string(ErrorKind kind) noexcept;

class [[nodiscard]] Error {
 public:
  Error(ErrorKind kind, std::string message) : kind_(kind), message_(std::move(message)) {}

  [[nodiscard]] ErrorKind kind() const noexcept { return kind_; }
  // The full message, outermost context first: "reading run.jsonl line 812: expected a number".
  [[nodiscard]] const std::string& message() const noexcept { return message_; }

  // Returns a copy whose message is prefixed with `context` and ": ".
  [[nodiscard]] Error with_context(const std::string& context) const { return Error(kind_, context + ": " + message_); }

 private:
  ErrorKind kind_;
  std::string message_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit on purpose
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  [[nodiscard]] bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  // Precondition: ok(). Accessing the value of an error is a bug (std::bad_variant_access).
  [[nodiscard]] T& value() & { return std::get<0>(v_); }
  [[nodiscard]] const T& value() const& { return std::get<0>(v_); }
  [[nodiscard]] T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // Precondition: !ok().
  [[nodiscard]] const Error& error() const { return std::get<1>(v_); }

  [[nodiscard]] T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)) {}  // NOLINT: implicit on purpose

  [[nodiscard]] bool ok() const noexcept { return !error_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }
  [[nodiscard]] const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

using Status = Result<void>;

inline Status ok_status() { return {}; }

}  // namespace gpudoc::core

// gpudoc::telemetry::BackendSource — where a run's telemetry comes from: the one place a GPU backend
// is chosen and opened. The CLI chooses it once per run (`--backend SPEC`, which wins, or the
// GPUDOC_BACKEND environment variable; default nvml) and hands it to every command.
//
//   nvml               the machine's NVIDIA GPUs (libnvidia-ml.so.1, loaded at run time)
//   replay:FILE[@X]    a gpudoc trace or nvidia-smi CSV log played back as if its GPUs were live,
//                      X times as fast as recorded (default 1; 0 < X <= 1000). The command runs on
//                      the trace's clock: `doctor --duration 10` looks at 10 s of the trace, which
//                      takes 1 s at @10. A FILE whose name itself ends in @NUMBER: add @1.
//   fake:N             N scripted H200-like GPUs under a steady load (1 <= N <= 64)
//
// The spec is parsed before any command runs (a bad one is a usage error naming it and the forms
// allowed); the backend is opened the first time a command asks for it, and only then:
// `trace info FILE` and `diagnose FILE` never open it.
//
//   auto spec = telemetry::parse_backend_spec("fake:2", "--backend");   // Result<BackendSpec>
//   telemetry::BackendSource source(*spec);
//   auto live = source.open_gpus();              // Result<Live>: opened once, at least one GPU
//   if (!live) return live.error();
//   telemetry::record(*live->backend, *live->clock, options, stop_requests);
//   if (!live->banner.empty()) print(live->banner);   // "REPLAY, not live: ..." / "FAKE GPUs: ..."
//
// Not thread-safe: one command, one thread, opens it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/clock.hpp"
#include "core/result.hpp"
#include "gpu/backend.hpp"

namespace gpudoc::telemetry {

class ReplayBackend;

enum class BackendKind { kNvml, kReplay, kFake };
[[nodiscard]] const char* to_string(BackendKind kind) noexcept;  // "nvml", "replay", "fake"

struct BackendSpec {
  BackendKind kind = BackendKind::kNvml;
  std::string file;                // replay: the trace
  double speed = 1.0;              // replay: trace seconds per second
  int gpus = 0;                    // fake: how many
  std::string text = "nvml";       // as given
  std::string origin = "default";  // "--backend", "GPUDOC_BACKEND", "default"; named in errors ("": the
                                   // user's own argument, e.g. watch TRACE)
};

inline constexpr int kMaxFakeGpus = 64;
inline constexpr double kMaxReplaySpeed = 1000;

// Parses one spec. Errors: kUsage naming `origin`, the spec and the forms allowed.
[[nodiscard]] core::Result<BackendSpec> parse_backend_spec(std::string_view text, std::string_view origin);
// The spec in effect: `flag` when given, else `env` (GPUDOC_BACKEND) when set and not empty, else
// nvml. Errors: parse_backend_spec's.
[[nodiscard]] core::Result<BackendSpec> choose_backend_spec(const std::optional<std::string>& flag, const char* env);
// The replay of a TRACE a command takes as its argument (`gpudoc watch TRACE`), at `speed`, in place
// of the run's spec `chosen`: the same replay as `--backend replay:TRACE@SPEED`, so both show the
// same thing. A --backend beside the TRACE would be a second answer to one question: kUsage "give
// a TRACE or --backend SPEC, not both" (GPUDOC_BACKEND, the machine's default, gives way). Else
// parse_backend_spec's errors, with no origin: the argument is the user's own.
[[nodiscard]] core::Result<BackendSpec> trace_argument_spec(const BackendSpec& chosen, const std::string& trace,
                                                            double speed);

// What an opened backend gives a command. The pointers stay valid as long as the BackendSource.
struct Live {
  gpu::Backend* backend = nullptr;
  core::Clock* clock = nullptr;  // the trace's clock for a replay, the system clock else
  const BackendSpec* spec = nullptr;
  int gpu_count = 0;
  ReplayBackend* replay = nullptr;  // a replay: its position and length
  double speed = 1.0;               // clock seconds per wall second (a replay's SPEED)
  // "" for real GPUs; else the notice every view shows first: "REPLAY, not live (×10): run.jsonl,
  // recorded 2026-11-29 18:45 UTC on node7, NVIDIA H200 ×2" or "FAKE GPUs, not this machine: ...".
  // Terminal-safe: the trace's file, host and GPU names in it are shown through core::terminal_safe.
  std::string banner;
  [[nodiscard]] bool real() const { return spec->kind == BackendKind::kNvml; }
  // The wall time that `on_clock` of the command's clock takes (on_clock / speed), at least 10 ms:
  // a loop that should notice the end of a replay within 500 ms of trace time wakes that often.
  [[nodiscard]] core::Nanos wall_time(core::Nanos on_clock) const;
};

// {"kind": "replay", "spec": "replay:run.jsonl@10", "file": ..., "speed": 10} for --json output.
[[nodiscard]] nlohmann::json describe(const BackendSpec& spec);

// The backend as code that can run without one takes it (a baseline collection, bench's observer):
// a backend, or null with the reason.
struct BackendOrReason {
  gpu::Backend* backend = nullptr;
  core::Clock* clock = nullptr;
  std::string why_not;  // set when backend is null
};

class BackendSource {
 public:
  explicit BackendSource(BackendSpec spec = {});
  ~BackendSource();
  BackendSource(const BackendSource&) = delete;
  BackendSource& operator=(const BackendSource&) = delete;

  // Chooses the spec (the CLI does, once the command line is parsed). Precondition: not opened yet.
  void select(BackendSpec spec) { spec_ = std::move(spec); }
  [[nodiscard]] const BackendSpec& spec() const { return spec_; }
  // Opens the backend on the first call; later calls give the same backend, or the same error.
  // Errors: nvml: kEnvironment (no driver or library; the message says what still works without
  // a GPU); replay: the trace reader's (kIo, kBadInput naming the file and line).
  [[nodiscard]] core::Result<Live> open();
  // open(), and kEnvironment when the backend has no GPU at all.
  [[nodiscard]] core::Result<Live> open_gpus();
  // open_gpus() as a pointer that may be null, with the reason.
  [[nodiscard]] BackendOrReason open_or_reason();

 private:
  [[nodiscard]] core::Result<Live> open_once();

  BackendSpec spec_;
  core::SystemClock system_clock_;
  std::unique_ptr<core::Clock> replay_clock_;
  std::unique_ptr<gpu::Backend> backend_;
  std::optional<core::Result<Live>> opened_;
};

}  // namespace gpudoc::telemetry

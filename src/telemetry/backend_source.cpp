#include "telemetry/backend_source.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <filesystem>

#include "core/text.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "gpu/nvml/nvml_backend.hpp"
#include "telemetry/input.hpp"
#include "telemetry/replay_backend.hpp"

namespace gpudoc::telemetry {
namespace {

constexpr std::string_view kForms = "nvml, replay:FILE[@SPEED] (0 < SPEED <= 1000) or fake:N (1 <= N <= 64)";

core::Error bad_spec(std::string_view text, std::string_view origin, std::string_view why) {
  return core::Error(core::ErrorKind::kUsage,
                     fmt::format("{} '{}': {}; the backend is one of {}", origin, text, why, kForms));
}

// "12" -> 12, whole string only.
std::optional<double> parse_number(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

core::Result<BackendSpec> parse_replay(std::string_view text, std::string_view rest, std::string_view origin) {
  BackendSpec spec;
  spec.kind = BackendKind::kReplay;
  spec.file = std::string(rest);
  // A trailing @NUMBER is the speed; an @ followed by anything else belongs to the file name.
  if (auto at = rest.rfind('@'); at != std::string_view::npos) {
    if (auto speed = parse_number(rest.substr(at + 1))) {
      if (!(*speed > 0) || *speed > kMaxReplaySpeed)
        return bad_spec(text, origin,
                        fmt::format("the replay speed must be above 0 and at most {:g}", kMaxReplaySpeed));
      spec.speed = *speed;
      spec.file = std::string(rest.substr(0, at));
    }
  }
  if (spec.file.empty()) return bad_spec(text, origin, "replay needs a trace file");
  return spec;
}

std::string utc_date(std::int64_t unix_ns) {
  std::time_t t = static_cast<std::time_t>(unix_ns / 1'000'000'000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", tm);
}

// "not live" comes first: a view cuts its banner to the terminal's width, and that must survive.
// The file, host and GPU names come from outside: each is shown through core::terminal_safe, so
// the banner is safe wherever it is printed (stderr, health, watch, a report, a page).
std::string replay_banner(const BackendSpec& spec, const Trace& trace) {
  const auto& h = trace.header;
  const std::string gpu_name = h.gpus.empty() ? "no GPU" : core::terminal_safe(h.gpus[0].name);
  return fmt::format("REPLAY, not live{}: {}, recorded {}{}, {}{}",
                     spec.speed != 1.0 ? fmt::format(" (×{:g})", spec.speed) : "",
                     core::terminal_safe(std::filesystem::path(spec.file).filename().string()),
                     utc_date(h.start_unix_ns), h.host.empty() ? "" : " on " + core::terminal_safe(h.host), gpu_name,
                     h.gpus.size() > 1 ? fmt::format(" ×{}", h.gpus.size()) : "");
}

std::string no_gpu_hint() {
  return "\n  without a GPU: gpudoc watch tests/data/sawtooth_p1000_d50.jsonl (a trace recorded on an H200), or any "
         "command with --backend replay:TRACE or --backend fake:2 (scripted GPUs)";
}

}  // namespace

core::Result<BackendSpec> parse_backend_spec(std::string_view text, std::string_view origin) {
  core::Result<BackendSpec> out = bad_spec(text, origin, "unknown backend");
  if (text == "nvml") {
    out = BackendSpec{};
  } else if (text.starts_with("replay:")) {
    out = parse_replay(text, text.substr(7), origin);
  } else if (text.starts_with("fake:")) {
    const auto n = parse_number(text.substr(5));
    if (!n || *n != std::floor(*n) || *n < 1 || *n > kMaxFakeGpus)
      return bad_spec(text, origin, fmt::format("fake:N needs a whole number of GPUs from 1 to {}", kMaxFakeGpus));
    BackendSpec spec;
    spec.kind = BackendKind::kFake;
    spec.gpus = static_cast<int>(*n);
    out = spec;
  }
  if (out) {
    out->text = std::string(text);
    out->origin = std::string(origin);
  }
  return out;
}

core::Result<BackendSpec> choose_backend_spec(const std::optional<std::string>& flag, const char* env) {
  if (flag) return parse_backend_spec(*flag, "--backend");
  if (env != nullptr && *env != '\0') return parse_backend_spec(env, "GPUDOC_BACKEND");
  return BackendSpec{};
}

core::Result<BackendSpec> trace_argument_spec(const BackendSpec& chosen, const std::string& trace, double speed) {
  if (chosen.origin == "--backend")
    return core::Error(core::ErrorKind::kUsage, fmt::format("give a TRACE or --backend {}, not both", chosen.text));
  return parse_backend_spec(fmt::format("replay:{}@{}", trace, speed), "");
}

const char* to_string(BackendKind kind) noexcept {
  switch (kind) {
    case BackendKind::kNvml: return "nvml";
    case BackendKind::kReplay: return "replay";
    case BackendKind::kFake: return "fake";
  }
  return "nvml";
}

nlohmann::json describe(const BackendSpec& spec) {
  nlohmann::json j = {{"kind", to_string(spec.kind)}, {"spec", spec.text}};
  if (spec.kind == BackendKind::kReplay) {
    j["file"] = spec.file;
    j["speed"] = spec.speed;
  } else if (spec.kind == BackendKind::kFake) {
    j["gpus"] = spec.gpus;
  }
  return j;
}

core::Nanos Live::wall_time(core::Nanos on_clock) const {
  const auto wall = std::chrono::duration_cast<core::Nanos>(on_clock / speed);
  return std::max<core::Nanos>(wall, std::chrono::milliseconds(10));
}

BackendSource::BackendSource(BackendSpec spec) : spec_(std::move(spec)) {}
BackendSource::~BackendSource() = default;

core::Result<Live> BackendSource::open_once() {
  Live live;
  live.spec = &spec_;
  live.clock = &system_clock_;
  switch (spec_.kind) {
    case BackendKind::kNvml: {
      auto b = gpu::open_nvml_backend();
      if (!b) return core::Error(b.error().kind(), b.error().message() + no_gpu_hint());
      backend_ = std::move(*b);
      break;
    }
    case BackendKind::kReplay: {
      auto trace = read_telemetry_file(spec_.file);
      if (!trace)
        return spec_.origin.empty() ? trace.error()
                                    : trace.error().with_context(fmt::format("{} {}", spec_.origin, spec_.text));
      live.banner = replay_banner(spec_, *trace);
      // The command runs on the trace's clock; the replay plays at speed 1 on it.
      replay_clock_ = std::make_unique<ReplayClock>(system_clock_, spec_.speed);
      auto r = open_replay_backend(std::move(*trace), *replay_clock_, {.speed = 1.0, .live_timestamps = true});
      if (!r) return r.error();
      live.clock = replay_clock_.get();
      live.speed = spec_.speed;
      live.replay = r->get();
      backend_ = std::move(*r);
      break;
    }
    case BackendKind::kFake: {
      auto fake = std::make_unique<gpu::FakeBackend>(system_clock_, spec_.gpus);
      fake->set_value_fn(gpu::FakeBackend::steady_load());
      for (int g = 0; g < spec_.gpus; ++g) {
        gpu::ProcessSample p;
        p.pid = 4242u + static_cast<std::uint32_t>(g);
        p.name = "train.py";
        p.sm_utilization_percent = 95.0;
        p.memory_used_bytes = 80ull << 30;
        fake->set_processes(g, {p});
      }
      live.banner = fmt::format("FAKE GPUs, not this machine: {} scripted H200{} ({} {})", spec_.gpus,
                                spec_.gpus == 1 ? "" : "s", spec_.origin, core::terminal_safe(spec_.text));
      backend_ = std::move(fake);
      break;
    }
  }
  live.backend = backend_.get();
  auto count = backend_->device_count();
  if (!count) return count.error();
  live.gpu_count = *count;
  return live;
}

core::Result<Live> BackendSource::open() {
  if (!opened_) opened_ = open_once();
  return *opened_;
}

core::Result<Live> BackendSource::open_gpus() {
  auto live = open();
  if (live && live->gpu_count == 0)
    return core::Error(core::ErrorKind::kEnvironment,
                       live->real() ? "the NVIDIA driver is loaded but reports no GPU (check `nvidia-smi -L`; "
                                      "CUDA_VISIBLE_DEVICES does not apply to NVML)"
                                    : fmt::format("{} {} has no GPU", spec_.origin, spec_.text));
  return live;
}

BackendOrReason BackendSource::open_or_reason() {
  auto live = open_gpus();
  if (!live) return {nullptr, nullptr, live.error().message()};
  return {live->backend, live->clock, {}};
}

}  // namespace gpudoc::telemetry

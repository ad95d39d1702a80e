#include "store/guard_history.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <string_view>

#include "core/clock.hpp"
#include "core/host.hpp"

namespace gpudoc::store {

bool kept_guard_event(const std::string& type) {
  static constexpr std::array<std::string_view, 9> kKept = {"decision", "advice",     "ack",   "ack_timeout", "signal",
                                                            "not_sent", "job_joined", "start", "end"};
  for (auto k : kKept)
    if (type == k) return true;
  return false;
}

core::Result<GuardKeeper> GuardKeeper::open(const std::optional<std::string>& path_flag) {
  auto path = default_store_path(path_flag);
  if (!path) return path.error();
  auto store = Database::open(*path);
  if (!store) return store.error();
  if (auto st = store->check_writable(); !st) return st.error();
  MachineContext m;
  m.host = core::host_name();
  const std::int64_t now_ns = core::SystemClock().unix_now_ns();
  std::string run_id = fmt::format("guard-{}-{}-{}", m.host, ::getpid(), now_ns / 1'000'000'000);
  return GuardKeeper(std::move(*store), std::move(run_id), std::move(m));
}

core::Status GuardKeeper::keep(const nlohmann::json& event) {
  const std::string type = event.value("type", std::string());
  if (!kept_guard_event(type)) return core::ok_status();
  std::int64_t t_ns = core::SystemClock().unix_now_ns();
  if (auto it = event.find("t_unix"); it != event.end() && it->is_number()) {
    const double t = it->get<double>();
    if (std::isfinite(t) && t > 0 && t < 9.2e9) t_ns = static_cast<std::int64_t>(t * 1e9);
  }
  auto id = store_.add_result("guard", run_id_, t_ns, machine_, type, event);
  if (!id) return id.error();
  return core::ok_status();
}

core::Result<std::vector<StoredResult>> guard_results_since(const std::optional<std::string>& path_flag,
                                                            std::int64_t since_unix_ns) {
  auto path = default_store_path(path_flag);
  if (!path) return path.error();
  auto store = Database::open(*path, {.create = false});
  if (!store) return store.error();
  return store->results_since("guard", since_unix_ns);
}

}  // namespace gpudoc::store

#include "guard/session.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <iterator>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include "core/process.hpp"
#include "core/process_tree.hpp"
#include "core/text.hpp"
#include "guard/watch.hpp"

namespace gpudoc::guard {
namespace {

using nlohmann::json;

double unix_s(const core::Clock& clock) { return static_cast<double>(clock.unix_now_ns()) * 1e-9; }

// Wall time: what the job's clock says. The backend's clock runs faster under a replay at speed > 1.
double wall_s() { return unix_s(core::SystemClock()); }

std::string base_name(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_interpreter(const std::string& name) {
  static const std::regex re(R"(^(python[0-9.]*|pypy[0-9.]*|bash|sh|perl|ruby|node|Rscript)$)");
  return std::regex_match(name, re);
}

std::optional<int> signal_for(Action a) {
  switch (a) {
    case Action::kCheckpointNow: return SIGUSR1;
    case Action::kStop: return SIGTERM;
    default: return std::nullopt;
  }
}

json limits_json(const gpu::DeviceInfo& info) {
  json j = json::object();
  if (info.temperature_slowdown_celsius) j["slowdown_celsius"] = *info.temperature_slowdown_celsius;
  if (info.temperature_shutdown_celsius) j["shutdown_celsius"] = *info.temperature_shutdown_celsius;
  if (info.temperature_gpu_max_celsius) j["max_operating_celsius"] = *info.temperature_gpu_max_celsius;
  if (info.temperature_memory_max_celsius) j["memory_max_celsius"] = *info.temperature_memory_max_celsius;
  if (info.power_limit_default_watts) j["power_limit_watts"] = *info.power_limit_default_watts;
  return j;
}

json number_or_null(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

// A field of a peer's message as text whatever its JSON type (a peer may send anything).
std::string peer_text(const json& message, const char* key) {
  auto it = message.find(key);
  if (it == message.end() || it->is_null()) return {};
  return it->is_string() ? it->get<std::string>() : it->dump(-1, ' ', false, json::error_handler_t::replace);
}

constexpr int kProtocolErrorsPerMinute = 20;

struct Job {
  std::string id;           // "j1"
  std::optional<int> conn;  // connected over the channel
  pid_t pid = 0;
  std::shared_ptr<Pidfd> pidfd;
  std::string name;
  std::vector<int> gpus;  // backend indices; empty: every watched GPU
  std::set<Action> capabilities;
  std::set<Action> signals;  // accepted as signals (opted in)
  bool left = false;
};

struct Pending {
  std::string id, job;
  Action action = Action::kCheckpointNow;
  int gpu = 0;
  double sample_unix = 0, sent_unix = 0, deadline_unix = 0;
  bool timed_out = false;
};

struct Paused {
  pid_t pid = 0;
  std::shared_ptr<Pidfd> pidfd;
  std::string name;
};

class Session {
 public:
  Session(gpu::Backend& backend, core::Clock& clock, ChannelServer& channel, const SessionOptions& options,
          const EventSink& sink)
      : backend_(backend), clock_(clock), channel_(channel), o_(options), sink_(sink) {}

  core::Result<SessionResult> run(const std::atomic<int>& stop_requests);

 private:
  core::Status open_watches(const std::vector<int>& gpus);
  core::Status start_job();
  void emit(json e) {
    if (!e.contains("t_unix")) e["t_unix"] = wall_s();
    sink_(e);
  }
  void on_record(const telemetry::SamplerRecord& r);
  void read_health(double now);
  void status(double now);
  void on_decision(GpuWatch& w, const Decision& d);
  void advise(GpuWatch& w, const Decision& d, const ActionStep& step, int level);
  void send_advice(Job& job, GpuWatch& w, const Decision& d, const ActionStep& step, int level);
  void signal_job(Job& job, Action a, const std::string& why);
  void pause_noncritical(GpuWatch& w);
  void resume_noncritical(GpuWatch& w, const Decision& d);
  void on_channel(const ChannelEvent& ev);
  void on_hello(const ChannelEvent& ev);
  void on_ack(const ChannelEvent& ev);
  void check_deadlines(double now);
  void release_all_paused(const std::string& why);
  Job* job_of(int conn);
  void job_left(int conn, const std::string& how);
  void protocol_error(const ChannelEvent& ev, double now);
  void protocol_errors_minute(double now, bool force);
  bool job_watches(const Job& j, int gpu) const {
    return j.gpus.empty() || std::find(j.gpus.begin(), j.gpus.end(), gpu) != j.gpus.end();
  }
  std::string uuid_of(int gpu) const;
  // The newest sample's time on the wall clock: its age on the backend's clock, divided by the
  // clock's speed, before `wall_now`.
  double sample_wall_s(const GpuWatch& w, double wall_now) const {
    const auto t = w.newest_sample_t();
    if (!t) return wall_now;
    return wall_now - std::max(0.0, unix_s(clock_) - *t) / o_.clock_speed;
  }
  std::set<pid_t> job_pids() const;

  gpu::Backend& backend_;
  core::Clock& clock_;
  ChannelServer& channel_;
  const SessionOptions& o_;
  const EventSink& sink_;
  std::vector<std::unique_ptr<GpuWatch>> watches_;
  std::map<int, GpuWatch*> by_gpu_;
  std::vector<gpu::DeviceInfo> devices_;  // every device of the backend, by index
  std::vector<Job> jobs_;                 // a connected job is removed when it leaves (its pidfd closed)
  std::map<int, std::string> job_of_conn_;
  // protocol_error lines: at most kProtocolErrorsPerMinute a minute in the log, the rest counted
  double protocol_window_ = 0;
  int protocol_logged_ = 0;
  long protocol_suppressed_ = 0;
  std::map<std::string, Pending> pending_;
  std::map<int, std::vector<Paused>> paused_;     // by GPU
  std::map<int, std::set<pid_t>> gpu_processes_;  // pids NVML listed on each GPU, newest read
  std::optional<core::ChildProcess> child_;
  std::vector<std::shared_ptr<Pidfd>> watched_pids_;  // --pid
  int next_job_ = 1, next_advice_ = 1;
  double next_health_ = 0;
  double next_status_ = 0;
  SessionResult result_;
};

std::string Session::uuid_of(int gpu) const {
  if (gpu >= 0 && static_cast<std::size_t>(gpu) < devices_.size() && !devices_[gpu].uuid.empty())
    return devices_[gpu].uuid;
  return fmt::format("GPU {}", gpu);
}

std::set<pid_t> Session::job_pids() const {
  std::set<pid_t> pids = {::getpid()};
  for (const Job& j : jobs_)
    if (j.pid > 0) pids.insert(j.pid);
  if (child_) {
    pids.insert(child_->pid());
    for (pid_t p : core::descendants_of(child_->pid(), o_.proc_root)) pids.insert(p);
  }
  return pids;
}

core::Status Session::open_watches(const std::vector<int>& gpus) {
  auto count = backend_.device_count();
  if (!count) return count.error();
  for (int i = 0; i < *count; ++i) {
    auto info = backend_.device_info(i);
    gpu::DeviceInfo unknown;
    unknown.index = i;
    devices_.push_back(info ? *info : unknown);
  }
  for (int g : gpus) {
    auto w = std::make_unique<GpuWatch>(g, devices_.at(static_cast<std::size_t>(g)), o_.policy,
                                        WatchOptions{.fatal_xid = o_.fatal_xid, .forecast = {}});
    for (const std::string& n : w->escalator().notes())
      emit({{"type", "note"}, {"gpu", g}, {"message", fmt::format("GPU {}: {}", g, n)}});
    by_gpu_[g] = w.get();
    watches_.push_back(std::move(w));
  }
  return core::ok_status();
}

core::Status Session::start_job() {
  if (!o_.command.empty()) {
    core::SpawnOptions so = core::workload_spawn_options();  // its own process group: stopped as a whole
    so.extra_env.push_back("GPUDOC_GUARD_SOCKET=" + channel_.path());
    auto child = core::ChildProcess::spawn(o_.command, so);
    if (!child) return child.error();
    child_.emplace(std::move(*child));
    Job j;
    j.id = fmt::format("j{}", next_job_++);
    j.pid = child_->pid();
    if (auto fd = Pidfd::open(j.pid)) j.pidfd = std::make_shared<Pidfd>(std::move(*fd));
    j.name = base_name(o_.command.front());
    j.signals.insert(o_.signal_opt_in.begin(), o_.signal_opt_in.end());
    emit({{"type", "job_joined"},
          {"job", j.id},
          {"pid", j.pid},
          {"name", j.name},
          {"connected", false},
          {"signals", [&] {
             json a = json::array();
             for (Action x : j.signals) a.push_back(to_string(x));
             return a;
           }()}});
    jobs_.push_back(std::move(j));
    return core::ok_status();
  }
  for (pid_t pid : o_.pids) {
    auto fd = Pidfd::open(pid);
    if (!fd) return core::Error(core::ErrorKind::kBadInput, fmt::format("--pid {}: {}", pid, fd.error().message()));
    auto shared = std::make_shared<Pidfd>(std::move(*fd));
    watched_pids_.push_back(shared);
    Job j;
    j.id = fmt::format("j{}", next_job_++);
    j.pid = pid;
    j.pidfd = shared;
    j.name = core::process_comm(pid, o_.proc_root);
    j.signals.insert(o_.signal_opt_in.begin(), o_.signal_opt_in.end());
    emit({{"type", "job_joined"},
          {"job", j.id},
          {"pid", pid},
          {"name", core::terminal_safe(j.name)},
          {"connected", false}});
    jobs_.push_back(std::move(j));
  }
  if (watched_pids_.empty()) return core::Error(core::ErrorKind::kBadInput, "give a command after -- or --pid PID");
  return core::ok_status();
}

void Session::on_record(const telemetry::SamplerRecord& r) {
  if (r.kind == telemetry::SamplerRecord::Kind::kProcesses) {
    auto& set = gpu_processes_[r.gpu];
    set.clear();
    for (const auto& p : r.processes) set.insert(static_cast<pid_t>(p.pid));
  }
  if (r.kind == telemetry::SamplerRecord::Kind::kEvent && r.event_kind != "gpu_recovered")
    emit({{"type", "gpu_event"}, {"gpu", r.gpu}, {"event", r.event_kind}, {"fields", r.event_fields}});
  if (auto it = by_gpu_.find(r.gpu); it != by_gpu_.end()) it->second->add(r);
}

void Session::read_health(double now) {
  if (now < next_health_) return;
  next_health_ = now + std::chrono::duration<double>(o_.health_period).count();
  for (auto& w : watches_) {
    auto facts = backend_.health_facts(w->gpu());
    if (facts) w->add_health(*facts);
  }
}

// Every status_period: each GPU's level, temperature, forecast and the forecast's measured error,
// so a long log shows what the guard saw between decisions.
void Session::status(double now) {
  if (now < next_status_) return;
  const bool first = next_status_ == 0;
  next_status_ = now + std::chrono::duration<double>(o_.status_period).count();
  if (first) return;
  json gpus = json::array();
  for (auto& w : watches_) {
    const EscalationInput& in = w->input();
    const Forecast f = w->forecaster().gpu().forecast(o_.policy.horizon_s);
    gpus.push_back({{"gpu", w->gpu()},
                    {"level", w->escalator().level()},
                    {"gpu_temp_now", number_or_null(in.gpu_temp_now)},
                    {"gpu_temp_forecast", number_or_null(in.gpu_temp_forecast)},
                    {"forecast_from_model", f.from_model},
                    {"forecast_error", number_or_null(f.error_celsius)},
                    {"memory_temp_forecast", number_or_null(in.memory_temp_forecast)},
                    {"power_watts", number_or_null(in.power_watts)},
                    {"seconds_to_oom", number_or_null(in.seconds_to_oom)}});
  }
  emit({{"type", "status"}, {"gpus", gpus}});
}

void Session::signal_job(Job& job, Action a, const std::string& why) {
  const auto sig = signal_for(a);
  if (!sig || !job.pidfd) return;
  auto st = job.pidfd->signal(*sig);
  ++result_.signals;
  emit({{"type", "signal"},
        {"job", job.id},
        {"pid", job.pid},
        {"signal", core::signal_name(*sig)},
        {"action", to_string(a)},
        {"why", why},
        {"ok", static_cast<bool>(st)},
        {"error", st ? std::string() : st.error().message()}});
}

void Session::send_advice(Job& job, GpuWatch& w, const Decision& d, const ActionStep& step, int level) {
  const double now = wall_s();
  const double sample = sample_wall_s(w, now);
  Pending p{.id = fmt::format("{}-{}", job.id, next_advice_++),
            .job = job.id,
            .action = step.action,
            .gpu = w.gpu(),
            .sample_unix = sample,
            .sent_unix = now,
            .deadline_unix = now + o_.ack_deadline_s,
            .timed_out = false};
  const EscalationInput& in = w.input();
  json reason = {{"metric", d.metric ? to_string(*d.metric) : "fatal_event"},
                 {"now", number_or_null(in.gpu_temp_now)},
                 {"forecast", number_or_null(d.value)},
                 {"horizon_s", o_.policy.horizon_s},
                 {"forecast_error", number_or_null(in.gpu_forecast_error)},
                 {"threshold", number_or_null(d.threshold)},
                 {"threshold_source", to_string(d.threshold_source)},
                 {"limits", limits_json(w.info())}};
  json msg = {{"type", "advice"},
              {"id", p.id},
              {"level", level},
              {"action", to_string(step.action)},
              {"gpu", uuid_of(w.gpu())},
              {"issued_unix", now},
              {"deadline_unix", p.deadline_unix},
              {"reason", reason},
              {"message", d.reason}};
  if (step.action == Action::kShrinkBatch) msg["factor"] = step.factor;
  const bool sent = channel_.send(*job.conn, msg);
  ++result_.advice;
  json e = {{"type", "advice"},      {"id", p.id},       {"job", job.id},
            {"gpu", w.gpu()},        {"level", level},   {"action", to_string(step.action)},
            {"sample_unix", sample}, {"sent_unix", now}, {"sent", sent}};
  if (step.action == Action::kShrinkBatch) e["factor"] = step.factor;
  emit(e);
  pending_[p.id] = p;
}

void Session::advise(GpuWatch& w, const Decision& d, const ActionStep& step, int level) {
  for (Job& job : jobs_) {
    if (job.left || !job_watches(job, w.gpu())) continue;
    if (job.conn && job.capabilities.count(step.action) != 0) {
      send_advice(job, w, d, step, level);
    } else if (job.signals.count(step.action) != 0) {
      signal_job(job, step.action, fmt::format("level {}: {} (the job does not listen for it)", level, d.reason));
    } else if (step.action != Action::kPauseNoncritical && step.action != Action::kResumeNoncritical) {
      emit({{"type", "not_sent"},
            {"job", job.id},
            {"action", to_string(step.action)},
            {"why", job.conn ? "the job did not list this action in its capabilities"
                             : "the job is not connected and did not opt in to signals (--signal)"}});
    }
  }
}

void Session::pause_noncritical(GpuWatch& w) {
  if (o_.policy.noncritical.empty()) return;
  const std::set<pid_t> exclude = job_pids();
  auto& paused = paused_[w.gpu()];
  for (const auto& [pid, stat] : core::read_proc_stats(o_.proc_root)) {
    if (exclude.count(pid) != 0 || stat.state == 'Z') continue;
    if (std::any_of(paused.begin(), paused.end(), [pid = pid](const Paused& p) { return p.pid == pid; })) continue;
    if (o_.real_gpus && gpu_processes_[w.gpu()].count(pid) == 0) continue;
    const std::string comm = core::process_comm(pid, o_.proc_root);
    const auto argv = core::process_argv(pid, o_.proc_root);
    if (!matches_noncritical(o_.policy.noncritical, comm, argv)) continue;
    auto fd = Pidfd::open(pid);
    if (!fd) continue;  // it exited meanwhile
    auto shared = std::make_shared<Pidfd>(std::move(*fd));
    auto st = shared->signal(SIGSTOP);
    ++result_.signals;
    emit({{"type", "signal"},
          {"pid", pid},
          {"name", core::terminal_safe(comm)},
          {"gpu", w.gpu()},
          {"signal", "SIGSTOP"},
          {"action", "pause_noncritical"},
          {"ok", static_cast<bool>(st)},
          {"error", st ? std::string() : st.error().message()},
          {"why", o_.real_gpus ? "a non-critical process of the policy on this GPU"
                               : "a non-critical process of the policy (the backend is not this host's GPUs: "
                                 "matched by name alone)"}});
    if (st) paused.push_back({pid, shared, comm});
  }
}

void Session::resume_noncritical(GpuWatch& w, const Decision& d) {
  auto it = paused_.find(w.gpu());
  if (it == paused_.end()) return;
  for (Paused& p : it->second) {
    auto st = p.pidfd->signal(SIGCONT);
    ++result_.signals;
    emit({{"type", "signal"},
          {"pid", p.pid},
          {"name", core::terminal_safe(p.name)},
          {"gpu", w.gpu()},
          {"signal", "SIGCONT"},
          {"action", "resume_noncritical"},
          {"ok", static_cast<bool>(st)},
          {"why", d.reason}});
  }
  paused_.erase(it);
}

void Session::release_all_paused(const std::string& why) {
  for (auto& [gpu, list] : paused_)
    for (Paused& p : list) {
      auto st = p.pidfd->signal(SIGCONT);
      emit({{"type", "signal"},
            {"pid", p.pid},
            {"gpu", gpu},
            {"signal", "SIGCONT"},
            {"action", "resume_noncritical"},
            {"ok", static_cast<bool>(st)},
            {"why", why}});
    }
  paused_.clear();
}

void Session::on_decision(GpuWatch& w, const Decision& d) {
  ++result_.decisions;
  result_.max_level = std::max(result_.max_level, d.level);
  json actions = json::array();
  for (const ActionStep& s : d.actions) actions.push_back(to_string(s.action));
  const EscalationInput& in = w.input();
  json e = {{"type", "decision"},
            {"gpu", w.gpu()},
            {"uuid", uuid_of(w.gpu())},
            {"level", d.level},
            {"previous_level", d.previous_level},
            {"actions", actions},
            {"reason", d.reason},
            {"rate_limited", d.rate_limited},
            {"fatal", d.fatal},
            {"dry_run", o_.dry_run},
            {"sample_unix", sample_wall_s(w, wall_s())},
            {"gpu_temp_now", number_or_null(in.gpu_temp_now)},
            {"gpu_temp_forecast", number_or_null(in.gpu_temp_forecast)},
            {"forecast_error", number_or_null(in.gpu_forecast_error)},
            {"memory_temp_forecast", number_or_null(in.memory_temp_forecast)},
            {"seconds_to_oom", number_or_null(in.seconds_to_oom)},
            {"power_watts", number_or_null(in.power_watts)}};
  if (d.fatal) {
    e["fatal_reasons"] = w.fatal_reasons();
    e["suggestion"] =
        "the GPU may need a reset (nvidia-smi -r, which stops every process on it and needs root) or the node "
        "a reboot; gpudoc never resets a GPU itself";
  }
  emit(e);
  if (o_.dry_run) return;
  for (const ActionStep& s : d.actions) {
    if (s.action == Action::kPauseNoncritical) pause_noncritical(w);
    if (s.action == Action::kResumeNoncritical) resume_noncritical(w, d);
    advise(w, d, s, s.action == Action::kResumeNoncritical ? 0 : d.level);
  }
}

void Session::on_hello(const ChannelEvent& ev) {
  const JobHello& h = *ev.hello;
  Job j;
  j.id = fmt::format("j{}", next_job_++);
  j.conn = ev.conn;
  j.pid = h.pid;  // the kernel's (SO_PEERCRED), never only what the hello claimed
  if (auto fd = Pidfd::open(j.pid)) j.pidfd = std::make_shared<Pidfd>(std::move(*fd));
  j.name = h.name;
  for (const std::string& c : h.capabilities)
    if (auto a = action_from_string(c)) j.capabilities.insert(*a);
  for (const std::string& s : h.signals)
    if (auto a = action_from_string(s); a && signal_for(*a)) j.signals.insert(*a);
  j.gpus = map_job_gpus(h.gpus, core::process_environ_value(j.pid, "CUDA_VISIBLE_DEVICES", o_.proc_root), devices_);
  j.gpus.erase(std::remove_if(j.gpus.begin(), j.gpus.end(), [this](int g) { return by_gpu_.count(g) == 0; }),
               j.gpus.end());
  // The connected job stands for the command's own entry: it no longer gets that entry's signals twice.
  for (Job& other : jobs_)
    if (!other.conn && other.pid == j.pid) other.left = true;
  json uuids = json::array();
  for (int g : j.gpus) uuids.push_back(uuid_of(g));
  if (j.gpus.empty())
    for (const auto& [g, w] : by_gpu_) uuids.push_back(uuid_of(g));
  channel_.send(ev.conn, {{"type", "welcome"},
                          {"guard_pid", ::getpid()},
                          {"job", j.id},
                          {"gpus", uuids},
                          {"horizon_s", o_.policy.horizon_s}});
  emit({{"type", "job_joined"},
        {"job", j.id},
        {"pid", j.pid},
        {"claimed_pid", h.claimed_pid},
        {"name", core::terminal_safe(j.name)},
        {"connected", true},
        {"gpus", uuids},
        {"capabilities", h.capabilities},
        {"client", core::terminal_safe(h.client)},
        {"rank", h.rank ? json(*h.rank) : json(nullptr)}});
  job_of_conn_[ev.conn] = j.id;
  jobs_.push_back(std::move(j));
}

void Session::on_ack(const ChannelEvent& ev) {
  const double now = wall_s();
  const std::string id = peer_text(ev.message, "id");
  auto it = pending_.find(id);
  if (it == pending_.end()) {  // acknowledged before (the channel refuses ids it never sent)
    emit({{"type", "note"}, {"message", fmt::format("a second ack for advice '{}'", core::terminal_safe(id))}});
    return;
  }
  const Pending& p = it->second;
  ++result_.acks;
  json e = {{"type", "ack"},
            {"id", p.id},
            {"job", p.job},
            {"gpu", p.gpu},
            {"action", to_string(p.action)},
            {"status", core::terminal_safe(peer_text(ev.message, "status"))},
            {"received_unix", now},
            {"latency_ms", (now - p.sample_unix) * 1e3},
            {"since_sent_ms", (now - p.sent_unix) * 1e3},
            {"late", p.timed_out}};
  json details = json::object();
  for (const auto& [k, v] : ev.message.items())
    if (k != "v" && k != "type" && k != "id" && k != "status" && k != "action") details[k] = v;
  e["details"] = details;
  emit(e);
  pending_.erase(it);
}

Job* Session::job_of(int conn) {
  const auto it = job_of_conn_.find(conn);
  if (it == job_of_conn_.end()) return nullptr;
  for (Job& j : jobs_)
    if (j.id == it->second) return &j;
  return nullptr;
}

// A connected job that said bye or closed: logged once, then forgotten with its pidfd, so jobs
// that come and go (torchrun restarts, a Guard per worker) hold no file and no entry.
void Session::job_left(int conn, const std::string& how) {
  const auto it = job_of_conn_.find(conn);
  if (it == job_of_conn_.end()) return;
  const std::string id = it->second;
  job_of_conn_.erase(it);
  emit({{"type", "job_left"}, {"job", id}, {"how", how}});
  jobs_.erase(std::remove_if(jobs_.begin(), jobs_.end(), [&](const Job& j) { return j.id == id; }), jobs_.end());
}

// At most kProtocolErrorsPerMinute protocol_error lines a minute, whatever peers send; the rest
// are counted and said in one line once the minute is over (or the guard ends: `force`).
void Session::protocol_errors_minute(double now, bool force) {
  if (!force && now - protocol_window_ < 60) return;
  if (protocol_suppressed_ > 0)
    emit({{"type", "protocol_errors_suppressed"},
          {"count", protocol_suppressed_},
          {"message", fmt::format("{} more protocol errors were not logged one by one (at most {} a minute are)",
                                  protocol_suppressed_, kProtocolErrorsPerMinute)}});
  protocol_window_ = now;
  protocol_logged_ = 0;
  protocol_suppressed_ = 0;
}

void Session::protocol_error(const ChannelEvent& ev, double now) {
  protocol_errors_minute(now, false);
  if (protocol_logged_ >= kProtocolErrorsPerMinute) {
    ++protocol_suppressed_;
    return;
  }
  ++protocol_logged_;
  emit({{"type", "protocol_error"}, {"conn", ev.conn}, {"error", ev.error}});
}

void Session::on_channel(const ChannelEvent& ev) {
  using K = ChannelEvent::Kind;
  switch (ev.kind) {
    case K::kHello: on_hello(ev); break;
    case K::kAck: on_ack(ev); break;
    case K::kReport:
      if (const Job* job = job_of(ev.conn))
        emit({{"type", "report"},
              {"job", job->id},
              {"figures", ev.message.contains("figures") ? ev.message["figures"] : json::object()},
              {"dropped", ev.message.contains("dropped") ? ev.message["dropped"] : json(0)}});
      break;
    case K::kBye: job_left(ev.conn, core::terminal_safe(peer_text(ev.message, "reason"))); break;
    case K::kClosed: job_left(ev.conn, "closed"); break;
    case K::kProtocolError: protocol_error(ev, wall_s()); break;
    case K::kPeerError:
      emit({{"type", "peer_error"},
            {"conn", ev.conn},
            {"error", core::terminal_safe(peer_text(ev.message, "code") + ": " + peer_text(ev.message, "message"))}});
      break;
    default: break;
  }
}

void Session::check_deadlines(double now) {
  for (auto& [id, p] : pending_) {
    if (p.timed_out || now < p.deadline_unix) continue;
    p.timed_out = true;
    emit({{"type", "ack_timeout"}, {"id", id}, {"job", p.job}, {"action", to_string(p.action)}});
    for (Job& j : jobs_)
      if (j.id == p.job && !j.left && j.signals.count(p.action) != 0)
        signal_job(j, p.action, fmt::format("advice {} was not acknowledged within {:g} s", id, o_.ack_deadline_s));
  }
  // Forget what will never be answered (the job left): bounded memory over a long run.
  for (auto it = pending_.begin(); it != pending_.end();)
    it = (it->second.timed_out && now > it->second.deadline_unix + 600) ? pending_.erase(it) : std::next(it);
}

core::Result<SessionResult> Session::run(const std::atomic<int>& stop_requests) {
  telemetry::Sampler sampler(backend_, clock_, o_.sampler);
  if (auto st = sampler.start(); !st) return st.error();
  if (auto st = open_watches(sampler.gpus()); !st) {
    sampler.stop();
    return st.error();
  }
  emit({{"type", "start"},
        {"socket", channel_.path()},
        {"gpus", sampler.gpus()},
        {"dry_run", o_.dry_run},
        {"horizon_s", o_.policy.horizon_s},
        {"guard_pid", ::getpid()}});
  if (auto st = start_job(); !st) {
    sampler.stop();
    return st.error();
  }
  const int stops_at_start = stop_requests.load();
  while (true) {
    for (const auto& r : sampler.drain(o_.loop_period)) on_record(r);
    const double now = unix_s(clock_);
    read_health(now);
    status(now);
    for (auto& w : watches_)
      if (auto d = w->tick(now)) on_decision(*w, *d);
    for (const ChannelEvent& ev : channel_.poll(std::chrono::milliseconds(0))) on_channel(ev);
    check_deadlines(wall_s());
    protocol_errors_minute(wall_s(), false);
    if (child_ && child_->poll()) {
      result_.exit_code = child_->exit_code_for_shell();
      result_.end_reason = "command_exited";
      break;
    }
    if (!child_ && std::all_of(watched_pids_.begin(), watched_pids_.end(),
                               [](const std::shared_ptr<Pidfd>& p) { return p->exited(); })) {
      result_.end_reason = "processes_exited";
      break;
    }
    const int stops = stop_requests.load() - stops_at_start;
    if (stops >= 1) {  // one stop signal stops the guard and its job (the job got none from the terminal)
      result_.end_reason = "interrupted";
      break;
    }
  }
  // Drain what the job said last (its final acks, bye) before closing.
  for (const ChannelEvent& ev : channel_.poll(std::chrono::milliseconds(50))) on_channel(ev);
  protocol_errors_minute(wall_s(), true);
  release_all_paused("the guard stops: nothing stays paused after it");
  channel_.close_all("guard_stopping");
  sampler.stop();
  if (result_.end_reason == "interrupted" && child_) {  // the stop policy: the job's group, SIGTERM then SIGKILL
    core::GroupStopper stopper;
    stopper.finish(*child_, [&] { return stop_requests.load() - stops_at_start >= 2; });
    result_.exit_code = child_->exit_code_for_shell();
  }
  emit({{"type", "end"},
        {"reason", result_.end_reason},
        {"exit_code", result_.exit_code ? json(*result_.exit_code) : json()},
        {"decisions", result_.decisions},
        {"advice", result_.advice},
        {"acks", result_.acks},
        {"signals", result_.signals},
        {"max_level", result_.max_level}});
  return result_;
}

}  // namespace

bool matches_noncritical(const std::vector<std::string>& patterns, const std::string& comm,
                         const std::vector<std::string>& argv) {
  std::vector<std::string> names = {comm};
  if (!argv.empty()) {
    names.push_back(base_name(argv[0]));
    if (is_interpreter(base_name(argv[0])))
      for (std::size_t i = 1; i < argv.size(); ++i) {
        if (argv[i].empty() || argv[i][0] == '-') {
          if (argv[i] == "-m" || argv[i] == "-c") break;  // a module or inline code: no script name
          continue;
        }
        names.push_back(base_name(argv[i]));
        break;
      }
  }
  std::string cmdline;
  for (const std::string& a : argv) cmdline += (cmdline.empty() ? "" : " ") + a;
  for (const std::string& p : patterns) {
    if (p.rfind("re:", 0) == 0) {
      std::regex re;
      try {
        re = std::regex(p.substr(3), std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        continue;  // the policy parser checks every expression; a bad one never matches
      }
      if (std::regex_match(cmdline, re)) return true;
      for (const std::string& n : names)
        if (!n.empty() && std::regex_match(n, re)) return true;
    } else {
      for (const std::string& n : names)
        if (!n.empty() && n == p) return true;
    }
  }
  return false;
}

std::vector<int> map_job_gpus(const std::vector<std::string>& job_gpus,
                              const std::optional<std::string>& cuda_visible_devices,
                              const std::vector<gpu::DeviceInfo>& devices) {
  auto by_uuid = [&](const std::string& id) -> std::optional<int> {
    for (const gpu::DeviceInfo& d : devices)
      if (!d.uuid.empty() && (d.uuid == id || (id.size() >= 8 && d.uuid.rfind(id, 0) == 0))) return d.index;
    return std::nullopt;
  };
  auto is_number = [](const std::string& s) {
    return !s.empty() && s.size() < 6 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  // What CUDA device k is on this machine: CUDA_VISIBLE_DEVICES' k-th entry, read as CUDA does
  // (comma-separated, up to the first entry that names no device).
  std::vector<std::optional<int>> visible;
  if (cuda_visible_devices) {
    std::stringstream ss(*cuda_visible_devices);
    std::string item;
    while (std::getline(ss, item, ',')) {
      item.erase(0, item.find_first_not_of(" \t"));
      item.erase(item.find_last_not_of(" \t") + 1);
      std::optional<int> g;
      if (is_number(item)) {
        const int n = std::stoi(item);
        if (n >= 0 && static_cast<std::size_t>(n) < devices.size()) g = n;
      } else {
        g = by_uuid(item);
      }
      if (!g) break;
      visible.push_back(g);
    }
  }
  std::vector<int> out;
  for (const std::string& id : job_gpus) {
    std::optional<int> g;
    if (is_number(id)) {
      const auto k = static_cast<std::size_t>(std::stoi(id));
      if (cuda_visible_devices) {
        if (k < visible.size()) g = visible[k];
      } else if (k < devices.size()) {
        g = static_cast<int>(k);
      }
    } else {
      g = by_uuid(id);
    }
    if (g && std::find(out.begin(), out.end(), *g) == out.end()) out.push_back(*g);
  }
  return out;
}

core::Result<SessionResult> run_session(gpu::Backend& backend, core::Clock& clock, ChannelServer& channel,
                                        const SessionOptions& options, const std::atomic<int>& stop_requests,
                                        const EventSink& sink) {
  Session s(backend, clock, channel, options, sink);
  return s.run(stop_requests);
}

std::array<std::chrono::milliseconds, gpu::kMetricGroupCount> sampler_periods() {
  auto periods = telemetry::SamplerConfig::default_periods();
  for (auto g : {gpu::MetricGroup::kUtilization, gpu::MetricGroup::kGpm, gpu::MetricGroup::kEnergy})
    periods[gpu::index(g)] = std::chrono::milliseconds(0);
  return periods;
}

nlohmann::json to_json(const SessionResult& r) {
  return {{"end_reason", r.end_reason},
          {"exit_code", r.exit_code ? nlohmann::json(*r.exit_code) : nlohmann::json()},
          {"decisions", r.decisions},
          {"advice", r.advice},
          {"acks", r.acks},
          {"signals", r.signals},
          {"max_level", r.max_level}};
}

}  // namespace gpudoc::guard

#include "health/host.hpp"

#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace gpudoc::health {

std::optional<std::string> SystemHostReader::read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return ss.str();
}

std::vector<std::string> SystemHostReader::glob(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> SystemHostReader::real_path(const std::string& path) {
  std::array<char, PATH_MAX> buf{};
  if (::realpath(path.c_str(), buf.data()) == nullptr) return std::nullopt;
  return std::string(buf.data());
}

std::optional<CommandOutput> SystemHostReader::run(const std::vector<std::string>& argv,
                                                   std::chrono::milliseconds timeout) {
  if (argv.empty()) return std::nullopt;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  int err[2];  // closes on exec: a byte means exec failed
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return std::nullopt;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {fds[0], fds[1], err[0], err[1]}) ::close(fd);
    return std::nullopt;
  }
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_RDWR);
    ::dup2(devnull, 0);
    ::dup2(fds[1], 1);
    ::dup2(devnull, 2);
    ::execvp(args[0], args.data());
    const char c = 1;
    (void)!::write(err[1], &c, 1);
    ::_exit(127);
  }
  ::close(fds[1]);
  ::close(err[1]);
  CommandOutput out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::array<char, 4096> buf{};
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    const ssize_t got = ::read(fds[0], buf.data(), buf.size());
    if (got <= 0) break;
    out.out.append(buf.data(), static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  char c = 0;
  const bool exec_failed = ::read(err[0], &c, 1) == 1;
  ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (exec_failed) return std::nullopt;
  out.exit_code = (!out.timed_out && WIFEXITED(status)) ? WEXITSTATUS(status) : -1;
  return out;
}

std::vector<int> SystemHostReader::allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) out.push_back(i);
  return out;
}

std::optional<std::string> SystemHostReader::env(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

std::string basename_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

struct LibSpec {
  const char* name;    // "cudart"
  const char* prefix;  // "libcudart.so."
};
constexpr std::array<LibSpec, 4> kLibs = {{
    {"cudart", "libcudart.so."},
    {"cublas", "libcublas.so."},
    {"cudnn", "libcudnn.so."},
    {"nccl", "libnccl.so."},
}};

}  // namespace

std::string sysfs_bus_id(const std::string& nvml_bus_id) {
  std::string b = nvml_bus_id;
  std::transform(b.begin(), b.end(), b.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (b.size() > 4 && b.find(':') == 8) b = b.substr(4);  // NVML's 8-digit domain -> sysfs's 4
  return b;
}

HostFacts collect_host(HostReader& host, const std::vector<std::pair<int, std::string>>& gpus) {
  HostFacts h;
  for (const std::string& p : host.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor")) {
    if (auto g = host.read_file(p)) ++h.governors[trim(*g)];
  }
  h.allowed_cpus = host.allowed_cpus();
  for (const auto& [index, bus] : gpus) {
    GpuNuma n;
    n.gpu = index;
    n.pci_bus_id = bus;
    if (auto v = host.read_file(fmt::format("/sys/bus/pci/devices/{}/numa_node", sysfs_bus_id(bus)))) {
      try {
        n.numa_node = std::stoi(trim(*v));
      } catch (const std::exception&) {
      }
    }
    if (n.numa_node && *n.numa_node >= 0)
      if (auto list = host.read_file(fmt::format("/sys/devices/system/node/node{}/cpulist", *n.numa_node)))
        n.node_cpus = parse_cpulist(trim(*list));
    h.gpus.push_back(std::move(n));
  }
  for (const SysctlAdvice& a : sysctl_advice()) {
    auto v = host.read_file(std::string(a.path));
    if (!v && a.name == "kernel.sched_migration_cost_ns")
      v = host.read_file("/sys/kernel/debug/sched/migration_cost_ns");
    if (v) h.sysctls[std::string(a.name)] = trim(*v);
  }
  return h;
}

void collect_torch(HostReader& host, VersionFacts& out) {
  const std::string code =
      "import json, torch; v = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None; "
      "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda, 'cudnn': v}))";
  auto r = host.run({"python3", "-c", code}, std::chrono::seconds(10));
  if (!r) {
    out.torch_why_not = "python3 not found";
    return;
  }
  if (r->timed_out) {
    out.torch_why_not = "python3 -c 'import torch' timed out after 10 s";
    return;
  }
  if (r->exit_code != 0) {
    out.torch_why_not = "no torch for python3";
    return;
  }
  const std::string line = trim(r->out.substr(r->out.rfind('{') == std::string::npos ? 0 : r->out.rfind('{')));
  const auto j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("torch")) {
    out.torch_why_not = "could not read torch's versions";
    return;
  }
  out.torch_version = j.value("torch", "");
  if (j.contains("cuda") && j["cuda"].is_string()) out.torch_cuda_version = j["cuda"].get<std::string>();
  if (j.contains("cudnn") && j["cudnn"].is_number_integer())
    out.torch_cudnn_version = std::to_string(j["cudnn"].get<long>());
}

VersionFacts collect_versions(HostReader& host, const gpu::SystemInfo& system, bool with_torch) {
  VersionFacts v;
  v.driver_version = system.driver_version;
  v.cuda_driver_version = system.cuda_driver_version;
  // Candidate files: the loader cache, then LD_LIBRARY_PATH and the usual toolkit folders.
  std::vector<std::string> candidates;
  if (auto r = host.run({"ldconfig", "-p"}, std::chrono::seconds(3)); !r) {
    if (auto r2 = host.run({"/sbin/ldconfig", "-p"}, std::chrono::seconds(3))) r = r2;
    if (r) {
      std::istringstream in(r->out);
      for (std::string line; std::getline(in, line);)
        if (auto arrow = line.find("=> "); arrow != std::string::npos)
          candidates.push_back(trim(line.substr(arrow + 3)));
    }
  } else {
    std::istringstream in(r->out);
    for (std::string line; std::getline(in, line);)
      if (auto arrow = line.find("=> "); arrow != std::string::npos) candidates.push_back(trim(line.substr(arrow + 3)));
  }
  std::vector<std::string> dirs;
  if (auto ld = host.env("LD_LIBRARY_PATH")) {
    std::istringstream in(*ld);
    for (std::string d; std::getline(in, d, ':');)
      if (!d.empty()) dirs.push_back(d);
  }
  for (const auto& d : host.glob("/usr/local/cuda*/lib64")) dirs.push_back(d);
  for (const auto& d : host.glob("/usr/local/cuda*/targets/*/lib")) dirs.push_back(d);
  for (const auto& d : dirs)
    for (const auto& spec : kLibs)
      for (const auto& f : host.glob(fmt::format("{}/{}*", d, spec.prefix))) candidates.push_back(f);

  std::set<std::string> seen;  // resolved files
  for (const auto& spec : kLibs) {
    for (const auto& c : candidates) {
      const std::string base = basename_of(c);
      if (base.rfind(spec.prefix, 0) != 0) continue;
      const std::string real = host.real_path(c).value_or(c);
      if (!seen.insert(real).second) continue;
      const std::string real_base = basename_of(real);
      LibraryVersion lib;
      lib.name = spec.name;
      lib.path = real;
      // libcudart.so.12.4.127 -> "12.4.127"; a bare soname (libcudnn.so.9) gives only the major.
      const std::string prefix = spec.prefix;
      lib.version = real_base.rfind(prefix, 0) == 0 ? real_base.substr(prefix.size()) : base.substr(prefix.size());
      v.libraries.push_back(std::move(lib));
    }
  }
  if (with_torch) collect_torch(host, v);
  return v;
}

void collect_kernel_xids(HostReader& host, const std::vector<std::string>& bus_ids, XidInput& out) {
  auto r = host.run({"dmesg"}, std::chrono::seconds(3));
  if (!r) {
    out.kernel_log_why_not = "dmesg not found";
    return;
  }
  if (r->exit_code != 0) {
    out.kernel_log_why_not = "dmesg not permitted (kernel.dmesg_restrict; run as root to include it)";
    return;
  }
  out.kernel_log_read = true;
  for (auto& e : parse_kernel_log_xids(r->out, bus_ids)) out.events.push_back(std::move(e));
}

}  // namespace gpudoc::health

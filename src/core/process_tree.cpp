#include "core/process_tree.hpp"

#include <dirent.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <string>
#include <vector>

#include "core/file.hpp"

namespace gpudoc::core {

namespace {

std::optional<long> next_number(std::string_view& rest) {
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  long v = 0;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), v);
  if (ec != std::errc() || end == rest.data()) return std::nullopt;
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  return v;
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view stat) {
  const auto rp = stat.rfind(')');
  if (rp == std::string_view::npos) return std::nullopt;
  std::string_view rest = stat.substr(rp + 1);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  if (rest.empty()) return std::nullopt;
  ProcStat s;
  s.state = rest.front();
  rest.remove_prefix(1);
  const auto parent = next_number(rest);
  const auto group = next_number(rest);
  if (!parent || !group) return std::nullopt;
  s.parent = static_cast<pid_t>(*parent);
  s.group = static_cast<pid_t>(*group);
  for (int field = 6; field < 22; ++field)  // fields 6 to 21: skipped
    if (!next_number(rest)) return s;
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  unsigned long long ticks = 0;
  if (std::from_chars(rest.data(), rest.data() + rest.size(), ticks).ec == std::errc()) s.start_ticks = ticks;
  return s;
}

std::map<pid_t, ProcStat> read_proc_stats(const std::string& proc_root) {
  std::map<pid_t, ProcStat> out;
  DIR* d = opendir(proc_root.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string_view name(e->d_name);
    long pid = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (ec != std::errc() || end != name.data() + name.size()) continue;
    std::ifstream f(proc_root + "/" + std::string(name) + "/stat");
    std::string stat;
    std::getline(f, stat);
    if (auto s = parse_proc_stat(stat)) out[static_cast<pid_t>(pid)] = *s;
  }
  closedir(d);
  return out;
}

std::set<pid_t> descendants_of(pid_t root, const std::string& proc_root) {
  std::map<pid_t, std::set<pid_t>> children;
  for (const auto& [pid, s] : read_proc_stats(proc_root)) children[s.parent].insert(pid);
  std::set<pid_t> tree;
  std::vector<pid_t> todo{root};
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    const auto it = children.find(p);
    if (it == children.end()) continue;
    for (pid_t c : it->second)
      if (c != root && tree.insert(c).second) todo.push_back(c);
  }
  return tree;
}

std::set<pid_t> live_group_members(pid_t group, const std::string& proc_root) {
  std::set<pid_t> out;
  for (const auto& [pid, s] : read_proc_stats(proc_root))
    if (s.group == group && s.state != 'Z') out.insert(pid);
  return out;
}

namespace {

// The NUL-separated fields of a /proc file (cmdline, environ); the last may lack its NUL.
std::vector<std::string> nul_fields(const std::string& path) {
  auto text = read_file(path);
  std::vector<std::string> out;
  if (!text) return out;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\0', start);
    if (end == std::string::npos) end = text->size();
    out.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string process_comm(pid_t pid, const std::string& proc_root) {
  auto text = read_file(proc_root + "/" + std::to_string(pid) + "/comm");
  if (!text) return {};
  std::string name = std::move(*text);
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

std::vector<std::string> process_argv(pid_t pid, const std::string& proc_root) {
  return nul_fields(proc_root + "/" + std::to_string(pid) + "/cmdline");
}

std::optional<std::string> process_environ_value(pid_t pid, std::string_view key, const std::string& proc_root) {
  for (const std::string& kv : nul_fields(proc_root + "/" + std::to_string(pid) + "/environ"))
    if (kv.size() > key.size() && kv.compare(0, key.size(), key) == 0 && kv[key.size()] == '=')
      return kv.substr(key.size() + 1);
  return std::nullopt;
}

namespace {

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// The last run of exactly 64 hex digits in `path` bounded by non-hex characters (or its ends).
std::string last_container_id(std::string_view path) {
  std::string found;
  std::size_t i = 0;
  while (i < path.size()) {
    if (!is_hex(path[i])) {
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < path.size() && is_hex(path[j])) ++j;
    if (j - i == 64) found = std::string(path.substr(i, 64));
    i = j;
  }
  return found;
}

// "pod" followed by a UUID (dashes, or systemd's underscores) as one path component's tail.
std::string last_pod_uid(std::string_view path) {
  std::string found;
  for (std::size_t at = path.find("pod"); at != std::string_view::npos; at = path.find("pod", at + 3)) {
    std::string_view rest = path.substr(at + 3);
    if (rest.size() < 36) break;
    std::string uid(rest.substr(0, 36));
    bool ok = true;
    for (std::size_t k = 0; k < uid.size() && ok; ++k) {
      const bool dash_at = k == 8 || k == 13 || k == 18 || k == 23;
      if (dash_at && (uid[k] == '_' || uid[k] == '-')) {
        uid[k] = '-';
      } else {
        ok = !dash_at && is_hex(uid[k]);
      }
    }
    const bool ends = rest.size() == 36 || rest[36] == '/' || rest[36] == '.';
    if (ok && ends) found = std::move(uid);
  }
  return found;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A path component Slurm's cgroup plugins create above the jobs: "slurmstepd.scope" or
// "<node>_slurmstepd.scope" (systemd may escape the node name, "node\x2d1_slurmstepd.scope"; the
// suffix is all that matters), "slurm" or "slurm_<node>" (cgroup v1).
bool is_slurm_root(std::string_view component) {
  return component == "slurmstepd.scope" || component.ends_with("_slurmstepd.scope") || component == "slurm" ||
         component.starts_with("slurm_");
}

// The id of the innermost "job_<digits>" component that lies below a Slurm root (directly, or
// below a v1 "uid_<u>" component); empty when there is none.
std::string slurm_job_id(std::string_view path) {
  std::string found;
  bool under_slurm = false;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    const std::string_view c = path.substr(start, end - start);
    start = end + 1;
    if (is_slurm_root(c)) {
      under_slurm = true;
    } else if (under_slurm && c.starts_with("job_") && all_digits(c.substr(4))) {
      found = std::string(c.substr(4));
    }
  }
  return found;
}

}  // namespace

CgroupIdentity parse_cgroup_identity(std::string_view text) {
  CgroupIdentity id;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    // "hierarchy-ID:controllers:path": the path is after the second colon.
    const auto first = line.find(':');
    const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    const std::string_view path = line.substr(second + 1);
    if (auto c = last_container_id(path); !c.empty()) id.container_id = std::move(c);
    if (auto p = last_pod_uid(path); !p.empty()) id.pod_uid = std::move(p);
    if (auto j = slurm_job_id(path); !j.empty()) id.slurm_job_id = std::move(j);
  }
  return id;
}

CgroupIdentity process_cgroup_identity(pid_t pid, const std::string& proc_root) {
  auto text = read_file(proc_root + "/" + std::to_string(pid) + "/cgroup");
  if (!text) return {};
  return parse_cgroup_identity(*text);
}

}  // namespace gpudoc::core

// Host and version collection on fixtures (a fake HostReader), then the host checks.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cctype>
#include <map>

#include "health/host.hpp"

namespace gpudoc::health {
namespace {

class FixtureHost final : public HostReader {
 public:
  std::map<std::string, std::string> files;
  std::map<std::string, std::string> links;                      // path -> resolved
  std::map<std::string, std::optional<CommandOutput>> commands;  // argv[0] -> output (nullopt: not found)
  std::vector<int> cpus;
  std::map<std::string, std::string> environment;

  std::optional<std::string> read_file(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  }
  std::vector<std::string> glob(const std::string& pattern) override {
    // Enough for the patterns used: "*" and "[0-9]*" inside one path component.
    std::vector<std::string> out;
    for (const auto& [p, _] : files)
      if (match(pattern, p)) out.push_back(p);
    return out;
  }
  std::optional<std::string> real_path(const std::string& path) override {
    auto it = links.find(path);
    return it != links.end() ? it->second : path;
  }
  std::optional<CommandOutput> run(const std::vector<std::string>& argv, std::chrono::milliseconds) override {
    auto it = commands.find(argv[0]);
    if (it == commands.end()) return std::nullopt;
    return it->second;
  }
  std::vector<int> allowed_cpus() override { return cpus; }
  std::optional<std::string> env(const std::string& name) override {
    auto it = environment.find(name);
    if (it == environment.end()) return std::nullopt;
    return it->second;
  }

 private:
  static bool match(const std::string& pat, const std::string& s) {
    // '*' matches any run without '/'; "[0-9]" one digit.
    std::size_t i = 0;
    std::size_t j = 0;
    while (i < pat.size()) {
      if (pat.compare(i, 5, "[0-9]") == 0) {
        if (j >= s.size() || !std::isdigit(static_cast<unsigned char>(s[j]))) return false;
        i += 5;
        ++j;
      } else if (pat[i] == '*') {
        for (std::size_t k = j; k <= s.size(); ++k) {
          if (match(pat.substr(i + 1), s.substr(k))) return true;
          if (k < s.size() && s[k] == '/') break;
        }
        return false;
      } else {
        if (j >= s.size() || s[j] != pat[i]) return false;
        ++i;
        ++j;
      }
    }
    return j == s.size();
  }
};

FixtureHost two_socket_host() {
  FixtureHost h;
  for (int c = 0; c < 4; ++c)
    h.files[fmt::format("/sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor", c)] =
        c < 2 ? "performance\n" : "powersave\n";
  h.files["/sys/bus/pci/devices/0000:18:00.0/numa_node"] = "0\n";
  h.files["/sys/bus/pci/devices/0000:9a:00.0/numa_node"] = "1\n";
  h.files["/sys/devices/system/node/node0/cpulist"] = "0-1\n";
  h.files["/sys/devices/system/node/node1/cpulist"] = "2-3\n";
  h.files["/proc/sys/vm/swappiness"] = "60\n";
  h.files["/proc/sys/net/core/somaxconn"] = "4096\n";
  h.cpus = {0, 1};
  return h;
}

TEST(HealthHost, GovernorsNumaAndSysctlsFromFixtures) {
  FixtureHost h = two_socket_host();
  const HostFacts facts = collect_host(h, {{0, "00000000:18:00.0"}, {1, "00000000:9A:00.0"}});
  EXPECT_EQ(facts.governors.at("performance"), 2);
  EXPECT_EQ(facts.governors.at("powersave"), 2);
  ASSERT_EQ(facts.gpus.size(), 2u);
  EXPECT_EQ(facts.gpus[1].numa_node, 1);
  EXPECT_EQ(facts.gpus[1].node_cpus, (std::vector<int>{2, 3}));
  EXPECT_EQ(facts.sysctls.at("vm.swappiness"), "60");
  EXPECT_EQ(facts.sysctls.count("kernel.sched_migration_cost_ns"), 0u);

  const auto rs = check_host(facts);
  std::map<std::string, int> by;
  for (const auto& r : rs) {
    if (r.check == "cpu_governor") {
      EXPECT_EQ(r.status, Status::kWarn);
    }
    if (r.check == "numa" && r.gpu == 0) {
      EXPECT_EQ(r.status, Status::kPass);
    }
    if (r.check == "numa" && r.gpu == 1) {
      EXPECT_EQ(r.status, Status::kWarn);  // the process may only run on node 0's CPUs
      EXPECT_NE(r.next_step.find("--cpunodebind=1"), std::string::npos);
    }
    if (r.check == "sysctl") {
      EXPECT_TRUE(r.status == Status::kInfo || r.status == Status::kSkip);
    }
    EXPECT_NE(r.status, Status::kFail) << r.check;  // host settings are advice, never a failure
    ++by[r.check];
  }
  EXPECT_EQ(by["sysctl"], 3);
  EXPECT_EQ(by["numa"], 2);
}

TEST(HealthHost, NoCpufreqIsSkipped) {
  FixtureHost h;
  const auto rs = check_host(collect_host(h, {}));
  EXPECT_EQ(rs[0].check, "cpu_governor");
  EXPECT_EQ(rs[0].status, Status::kSkip);
}

TEST(HealthHost, LibrariesFromLdconfigAndTorchThroughPython) {
  FixtureHost h;
  h.commands["ldconfig"] = CommandOutput{0,
                                         "4 libs found in cache `/etc/ld.so.cache'\n"
                                         "\tlibcudart.so.12 (libc6,x86-64) => /usr/local/cuda/lib64/libcudart.so.12\n"
                                         "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n"
                                         "\tlibcudnn.so.9 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libcudnn.so.9\n"
                                         "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6\n",
                                         false};
  h.links["/usr/local/cuda/lib64/libcudart.so.12"] = "/usr/local/cuda-12.4/lib64/libcudart.so.12.4.127";
  h.links["/usr/lib/x86_64-linux-gnu/libnccl.so.2"] = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5";
  h.commands["python3"] =
      CommandOutput{0, "{\"torch\": \"2.5.1+cu124\", \"cuda\": \"12.4\", \"cudnn\": 90100}\n", false};
  gpu::SystemInfo sys;
  sys.driver_version = "550.54.15";
  sys.cuda_driver_version = "12.4";
  const VersionFacts v = collect_versions(h, sys, true);
  ASSERT_EQ(v.libraries.size(), 3u);
  EXPECT_EQ(v.libraries[0].name, "cudart");
  EXPECT_EQ(v.libraries[0].version, "12.4.127");
  EXPECT_EQ(v.libraries[1].name, "cudnn");
  EXPECT_EQ(v.libraries[1].version, "9");
  EXPECT_EQ(v.libraries[2].version, "2.21.5");
  EXPECT_EQ(v.torch_cuda_version, "12.4");
  EXPECT_EQ(v.torch_cudnn_version, "90100");
  EXPECT_EQ(check_versions(v)[0].status, Status::kPass);
}

TEST(HealthHost, TorchMissingOrSlowIsSaidNotFailed) {
  FixtureHost h;
  VersionFacts v;
  collect_torch(h, v);
  EXPECT_EQ(v.torch_why_not, "python3 not found");
  h.commands["python3"] = CommandOutput{-1, "", true};
  v = VersionFacts{};
  collect_torch(h, v);
  EXPECT_NE(v.torch_why_not.find("timed out"), std::string::npos);
  h.commands["python3"] = CommandOutput{1, "", false};
  v = VersionFacts{};
  collect_torch(h, v);
  EXPECT_EQ(v.torch_why_not, "no torch for python3");
}

TEST(HealthHost, KernelLogUnreadableIsRecorded) {
  FixtureHost h;
  h.commands["dmesg"] = CommandOutput{1, "", false};
  XidInput x;
  collect_kernel_xids(h, {"00000000:18:00.0"}, x);
  EXPECT_FALSE(x.kernel_log_read);
  EXPECT_NE(x.kernel_log_why_not.find("not permitted"), std::string::npos);
  h.commands["dmesg"] = CommandOutput{0, "[1.0] NVRM: Xid (PCI:0000:18:00): 48, pid=1, DBE\n", false};
  collect_kernel_xids(h, {"00000000:18:00.0"}, x);
  EXPECT_TRUE(x.kernel_log_read);
  ASSERT_EQ(x.events.size(), 1u);
  EXPECT_EQ(check_xids(x, 1)[0].status, Status::kFail);
}

TEST(HealthHost, Cpulist) {
  EXPECT_EQ(parse_cpulist("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(parse_cpulist("").empty());
  EXPECT_EQ(sysfs_bus_id("00000000:9A:00.0"), "0000:9a:00.0");
}

}  // namespace
}  // namespace gpudoc::health

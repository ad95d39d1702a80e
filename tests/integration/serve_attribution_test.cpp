// gpudoc serve with --kubernetes-pod-resources and --hpc-job-mapping-dir, end to end: a real gRPC
// server standing in for the kubelet on a unix socket in a private folder (tests/support/fake_kubelet.hpp)
// and a mapping folder name who holds the two fake GPUs; /metrics carries their pod, namespace,
// container and hpc_job labels on gpudoc's series and on dcgm-exporter's, follows a GPU given to
// another pod and a job that ends, and drops every pod label (warning once) when the kubelet's
// socket goes.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

#include "cli_runner.hpp"
#include "support/fake_kubelet.hpp"
#include "support/temp_dir.hpp"

extern char** environ;

namespace {

using namespace std::chrono_literals;
using gpudoc::serve::PodResources;

// The port serve announced on its log ("serving 2 GPUs on http://127.0.0.1:PORT/"), 0 when it
// announced none within 30 s (a hang guard: serve says it at once).
int announced_port(const std::string& log) {
  const std::string says = "on http://127.0.0.1:";
  for (int i = 0; i < 300; ++i) {
    const std::string text = gpudoc::testing::slurp(log);
    if (const auto at = text.find(says); at != std::string::npos) return std::atoi(text.c_str() + at + says.size());
    std::this_thread::sleep_for(100ms);
  }
  return 0;
}

// The body of GET /metrics, or empty when nothing answers.
std::string scrape(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  timeval limit{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string request = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
      char buf[65536];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, static_cast<std::size_t>(n));
    }
  }
  ::close(fd);
  const auto body = out.find("\r\n\r\n");
  return body == std::string::npos ? std::string() : out.substr(body + 4);
}

// The first line of `text` that starts with `prefix`.
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return line;
  return {};
}

// Scrapes until `ready` holds of a scrape (the last scrape either way; a hang guard of 30 s, the
// reads come every second).
std::string scrape_until(int port, const std::function<bool(const std::string&)>& ready) {
  std::string last;
  for (int i = 0; i < 300; ++i) {
    last = scrape(port);
    if (ready(last)) break;
    std::this_thread::sleep_for(100ms);
  }
  return last;
}

PodResources pod(std::string ns, std::string name, std::string container, std::string id) {
  return {std::move(name), std::move(ns), {{std::move(container), {{"nvidia.com/gpu", {std::move(id)}}}}}};
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(ServeAttribution, PodsAndJobsOnMetricsFollowTheKubeletAndTheFolder) {
  gpudoc::testing::TempDir dir("gpudoc-attribution");
  const std::string socket = dir.file("kubelet.sock");
  const std::string jobs = dir.file("jobs");
  ASSERT_EQ(::mkdir(jobs.c_str(), 0700), 0);
  gpudoc::testing::FakeKubelet kubelet(socket);
  // GPU 0 by its UUID (the fake backend's), GPU 1 by its device name; a pod of another node's GPU.
  kubelet.set({pod("ml", "train-0", "worker", "GPU-fake-0000"), pod("batch", "job-7", "main", "nvidia1"),
               pod("ml", "elsewhere", "c", "GPU-ffffffff-0000-0000-0000-000000000000")});
  write(jobs + "/1", "4213\n");

  const std::string log = dir.file("serve.log");
  const std::string binary = gpudoc::testing::gpudoc_binary();
  const std::vector<std::string> args = {binary,
                                         "--backend",
                                         "fake:2",
                                         "serve",
                                         "--no-store",
                                         "--dcgm-compatible",
                                         "--listen",
                                         "127.0.0.1:0",  // a port of the kernel's choosing, announced
                                         "--kubernetes-pod-resources=" + socket,
                                         "--hpc-job-mapping-dir",
                                         jobs,
                                         "--attribution-every",
                                         "1",
                                         "--duration",
                                         "120"};
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&files, 2, 1);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawn(&pid, binary.c_str(), &files, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&files);
  const int port = announced_port(log);
  ASSERT_GT(port, 0) << gpudoc::testing::slurp(log);

  // Both sources read: each GPU with its holder on gpudoc's series and on dcgm-exporter's.
  std::string m = scrape_until(port, [](const std::string& s) {
    return s.find("pod=\"train-0\"") != std::string::npos && s.find("hpc_job=\"4213\"") != std::string::npos;
  });
  EXPECT_EQ(line_starting(m, "gpudoc_gpu_info{gpu=\"0\""),
            R"(gpudoc_gpu_info{gpu="0",uuid="GPU-fake-0000",name="Fake H200",pci_bus_id="00000000:18:00.0",)"
            R"(namespace="ml",pod="train-0",container="worker",driver_version="999.99.99"} 1)")
      << m;
  EXPECT_EQ(line_starting(m, "gpudoc_gpu_info{gpu=\"1\""),
            R"(gpudoc_gpu_info{gpu="1",uuid="GPU-fake-0001",name="Fake H200",pci_bus_id="00000000:19:00.0",)"
            R"(namespace="batch",pod="job-7",container="main",hpc_job="4213",driver_version="999.99.99"} 1)")
      << m;
  EXPECT_TRUE(line_starting(m, "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\"")
                  .ends_with(R"(,namespace="ml",pod="train-0",container="worker"} 0)"))
      << m;
  EXPECT_TRUE(line_starting(m, "DCGM_FI_DEV_XID_ERRORS{gpu=\"1\"")
                  .ends_with(R"(,namespace="batch",pod="job-7",container="main",hpc_job="4213"} 0)"))
      << m;
  EXPECT_EQ(m.find("elsewhere"), std::string::npos);

  // GPU 0 given to another pod, GPU 1's pod gone and its job replaced: the old labels go with the next read.
  kubelet.set({pod("ml", "train-1", "worker", "GPU-fake-0000")});
  write(jobs + "/1", "4300\n");
  m = scrape_until(port, [](const std::string& s) {
    return s.find("pod=\"train-1\"") != std::string::npos && s.find("hpc_job=\"4300\"") != std::string::npos &&
           s.find("job-7") == std::string::npos;
  });
  EXPECT_EQ(m.find("train-0"), std::string::npos) << m;
  EXPECT_EQ(m.find("4213"), std::string::npos) << m;
  EXPECT_TRUE(line_starting(m, "gpudoc_gpu_info{gpu=\"0\"").find(R"(,pod="train-1",)") != std::string::npos) << m;
  EXPECT_EQ(line_starting(m, "gpudoc_gpu_info{gpu=\"1\"").find("pod="), std::string::npos) << m;
  EXPECT_TRUE(line_starting(m, "DCGM_FI_DEV_XID_ERRORS{gpu=\"1\"").ends_with(R"(,hpc_job="4300"} 0)")) << m;

  // The kubelet stops and its socket goes: no pod labels at all (not the last ones), the jobs stay.
  kubelet.stop();
  m = scrape_until(port, [](const std::string& s) { return !s.empty() && s.find("pod=\"") == std::string::npos; });
  EXPECT_EQ(m.find("pod=\""), std::string::npos) << m;
  EXPECT_NE(m.find(R"(hpc_job="4300")"), std::string::npos) << m;
  std::this_thread::sleep_for(2500ms);  // two more failed reads: still one warning

  ::kill(pid, SIGTERM);
  EXPECT_EQ(gpudoc::testing::wait_exit(pid, 60), 0);
  const std::string said = gpudoc::testing::slurp(log);
  const std::string warning = "the kubelet's pod-resources socket " + socket + ": no such socket";
  const auto first = said.find(warning);
  EXPECT_NE(first, std::string::npos) << said;
  EXPECT_EQ(said.find(warning, first + 1), std::string::npos) << said;
}

TEST(ServeAttribution, BadAttributionFlagsAreUsageErrors) {
  const std::pair<const char*, const char*> cases[] = {
      {"--attribution-every 0", "--attribution-every 0: out of range; expected seconds, from 1 to 3600"},
      {"--kubernetes-pod-resources /var/lib/kubelet/pod-resources/kubelet.sock", "was not expected"},
  };
  for (const auto& [args, says] : cases) {
    const auto r = gpudoc::testing::run_gpudoc(std::string("--backend fake:1 serve --no-store ") + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
  }
}

}  // namespace

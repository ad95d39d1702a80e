// The kubelet's pod-resources API as gpudoc serve calls it (serve/pod_resources.hpp): a real gRPC
// server on a unix socket in a private folder (tests/support/fake_kubelet.hpp) answers List; a
// socket that is missing, not a socket, refused, silent or failing is an error that says so; and
// an upstream kubelet's answer, with the fields gpudoc does not declare, reads the same.
#include "serve/pod_resources.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

#include "podresources.pb.h"
#include "support/fake_kubelet.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::serve {
namespace {

using namespace std::chrono_literals;

PodResourcesList some_pods() {
  return {{"train-0", "ml", {{"worker", {{"nvidia.com/gpu", {"GPU-fake-0000", "GPU-fake-0001"}}}}, {"sidecar", {}}}},
          {"infer-0", "serving", {{"server", {{"example.com/nic", {"eth1"}}, {"nvidia.com/mig-1g.18gb", {"MIG-x"}}}}}},
          {"idle", "default", {}}};
}

bool same(const PodResourcesList& a, const PodResourcesList& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].namespace_name != b[i].namespace_name ||
        a[i].containers.size() != b[i].containers.size())
      return false;
    for (std::size_t k = 0; k < a[i].containers.size(); ++k) {
      const auto& x = a[i].containers[k];
      const auto& y = b[i].containers[k];
      if (x.name != y.name || x.devices.size() != y.devices.size()) return false;
      for (std::size_t d = 0; d < x.devices.size(); ++d)
        if (x.devices[d].resource_name != y.devices[d].resource_name ||
            x.devices[d].device_ids != y.devices[d].device_ids)
          return false;
    }
  }
  return true;
}

// A unix socket bound at `path`, listening (`listen`) or not, that never answers.
int silent_socket(const std::string& path, bool listen) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  path.copy(a.sun_path, sizeof a.sun_path - 1);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || (listen && ::listen(fd, 8) != 0))
    return -1;
  return fd;
}

TEST(PodResources, ListsWhatTheKubeletAnswers) {
  testing::TempDir dir("gpudoc-kubelet");
  testing::FakeKubelet kubelet(dir.file("kubelet.sock"));
  kubelet.set(some_pods());
  auto list = list_pod_resources(dir.file("kubelet.sock"), 10s);
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_TRUE(same(*list, some_pods()));
  kubelet.set({});  // every pod gone: an empty answer, not an error
  list = list_pod_resources(dir.file("kubelet.sock"), 10s);
  ASSERT_TRUE(list) << list.error().message();
  EXPECT_TRUE(list->empty());
  EXPECT_EQ(kubelet.calls(), 2);
}

TEST(PodResources, ASocketMissingOrNotASocketIsSaidPlainly) {
  testing::TempDir dir("gpudoc-kubelet");
  auto missing = list_pod_resources(dir.file("kubelet.sock"), 10s);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_EQ(missing.error().message(), "the kubelet's pod-resources socket " + dir.file("kubelet.sock") +
                                           ": no such socket (on a Kubernetes node, is the kubelet's "
                                           "/var/lib/kubelet/pod-resources mounted here?)");
  std::ofstream(dir.file("file")) << "x";
  auto file = list_pod_resources(dir.file("file"), 10s);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message(), "the kubelet's pod-resources socket " + dir.file("file") + ": not a socket");
}

TEST(PodResources, AKubeletGoneRefusingOrFailingIsAnError) {
  testing::TempDir dir("gpudoc-kubelet");
  const std::string socket = dir.file("kubelet.sock");
  {
    testing::FakeKubelet kubelet(socket);
    kubelet.fail_with(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "unknown service v1.PodResourcesLister"));
    auto failed = list_pod_resources(socket, 10s);
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().kind(), core::ErrorKind::kEnvironment);
    EXPECT_NE(failed.error().message().find("List failed: UNIMPLEMENTED unknown service v1.PodResourcesLister"),
              std::string::npos)
        << failed.error().message();
  }
  // The kubelet stopped: its socket went with it.
  EXPECT_NE(list_pod_resources(socket, 10s).error().message().find("no such socket"), std::string::npos);
  // A socket file left behind that nobody listens on: refused at once, not after the timeout.
  const int fd = silent_socket(socket, false);
  ASSERT_GE(fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto refused = list_pod_resources(socket, 30s);
  ::close(fd);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_NE(refused.error().message().find("List failed: UNAVAILABLE"), std::string::npos) << refused.error().message();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);  // hang guard
}

TEST(PodResources, AClientKeepsItsConnectionAndFindsARestartedKubeletAtOnce) {
  testing::TempDir dir("gpudoc-kubelet");
  const std::string socket = dir.file("kubelet.sock");
  PodResourcesClient client(socket, 10s);
  auto kubelet = std::make_unique<testing::FakeKubelet>(socket);
  kubelet->set(some_pods());
  for (int i = 0; i < 3; ++i) {
    auto list = client.list();
    ASSERT_TRUE(list) << list.error().message();
    EXPECT_TRUE(same(*list, some_pods()));
  }
  EXPECT_EQ(kubelet->calls(), 3);
  // The kubelet restarts: the old socket goes, a new one comes at the same path.
  kubelet.reset();
  EXPECT_FALSE(client.list());
  kubelet = std::make_unique<testing::FakeKubelet>(socket);
  kubelet->set({});
  const auto t0 = std::chrono::steady_clock::now();
  auto again = client.list();
  ASSERT_TRUE(again) << again.error().message();
  EXPECT_TRUE(again->empty());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);  // hang guard: not gRPC's reconnection backoff
}

TEST(PodResources, AKubeletThatNeverAnswersTimesOut) {
  testing::TempDir dir("gpudoc-kubelet");
  const int fd = silent_socket(dir.file("kubelet.sock"), true);  // accepts in the kernel, says nothing
  ASSERT_GE(fd, 0);
  auto silent = list_pod_resources(dir.file("kubelet.sock"), 300ms);
  ::close(fd);
  ASSERT_FALSE(silent);
  EXPECT_EQ(silent.error().kind(), core::ErrorKind::kTimeout);
  EXPECT_NE(silent.error().message().find("no answer within 300 ms"), std::string::npos) << silent.error().message();
}

// Protobuf's wire format, by hand: a field's key, a varint, a length-delimited field.
std::string varint(std::uint64_t v) {
  std::string out;
  do {
    out += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v != 0);
  return out;
}
std::string field(int number, const std::string& bytes) {
  return varint(static_cast<std::uint64_t>(number) << 3 | 2) + varint(bytes.size()) + bytes;
}
std::string number_field(int number, std::uint64_t v) {
  return varint(static_cast<std::uint64_t>(number) << 3) + varint(v);
}

TEST(PodResources, AnUpstreamAnswerWithFieldsGpudocDoesNotDeclareReadsTheSame) {
  // ListPodResourcesResponse as a current kubelet sends it (k8s.io/kubelet podresources/v1/api.proto):
  // ContainerDevices{resource_name=1, device_ids=2, topology=3}, ContainerResources{name=1,
  // devices=2, cpu_ids=3, memory=4, dynamic_resources=5}, PodResources{name=1, namespace=2,
  // containers=3}. gpudoc's .proto declares the first two of each: the rest must be skipped.
  const std::string topology = field(1, number_field(1, 1));  // TopologyInfo{nodes=[NUMANode{ID=1}]}
  const std::string devices = field(1, "nvidia.com/gpu") + field(2, "GPU-a") + field(2, "GPU-b") + field(3, topology);
  const std::string memory = field(1, "memory") + number_field(2, 1 << 30);
  const std::string container = field(1, "worker") + field(2, devices) + field(3, varint(4) + varint(5)) +
                                field(4, memory) + field(5, field(1, "claim"));
  const std::string pod = field(1, "train-0") + field(2, "ml") + field(3, container);
  const std::string answer = field(1, pod);
  v1::ListPodResourcesResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(answer));
  ASSERT_EQ(parsed.pod_resources_size(), 1);
  const auto& p = parsed.pod_resources(0);
  EXPECT_EQ(p.name(), "train-0");
  EXPECT_EQ(p.namespace_(), "ml");
  ASSERT_EQ(p.containers_size(), 1);
  EXPECT_EQ(p.containers(0).name(), "worker");
  ASSERT_EQ(p.containers(0).devices_size(), 1);
  EXPECT_EQ(p.containers(0).devices(0).resource_name(), "nvidia.com/gpu");
  ASSERT_EQ(p.containers(0).devices(0).device_ids_size(), 2);
  EXPECT_EQ(p.containers(0).devices(0).device_ids(1), "GPU-b");
}

}  // namespace
}  // namespace gpudoc::serve

#include "serve/pod_resources.hpp"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include "podresources.grpc.pb.h"

namespace gpudoc::serve {
namespace {

std::string_view code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN";
  }
}

PodResourcesList from_answer(const v1::ListPodResourcesResponse& answer) {
  PodResourcesList list;
  list.reserve(static_cast<std::size_t>(answer.pod_resources_size()));
  for (const auto& pod : answer.pod_resources()) {
    PodResources p{pod.name(), pod.namespace_(), {}};
    for (const auto& container : pod.containers()) {
      ContainerResources c{container.name(), {}};
      for (const auto& devices : container.devices())
        c.devices.push_back({devices.resource_name(), {devices.device_ids().begin(), devices.device_ids().end()}});
      p.containers.push_back(std::move(c));
    }
    list.push_back(std::move(p));
  }
  return list;
}

}  // namespace

struct PodResourcesClient::Impl {
  std::string socket;
  std::chrono::milliseconds timeout;
  std::shared_ptr<grpc::Channel> channel;  // while calls succeed
  std::unique_ptr<v1::PodResourcesLister::Stub> stub;
};

PodResourcesClient::PodResourcesClient(std::string socket, std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(Impl{std::move(socket), timeout, nullptr, nullptr})) {}

PodResourcesClient::~PodResourcesClient() = default;

core::Result<PodResourcesList> PodResourcesClient::list() {
  Impl& c = *impl_;
  const auto fail = [&](core::ErrorKind kind, std::string_view why) {
    c.stub.reset();  // the next call connects anew (gRPC's own reconnection waits up to 2 min)
    c.channel.reset();
    return core::Error(kind, fmt::format("the kubelet's pod-resources socket {}: {}", c.socket, why));
  };
  // Said plainly before gRPC says it its own way ("failed to connect to all addresses").
  struct stat st {};
  if (::stat(c.socket.c_str(), &st) != 0)
    return fail(core::ErrorKind::kEnvironment,
                errno == ENOENT ? std::string("no such socket (on a Kubernetes node, is the kubelet's "
                                              "/var/lib/kubelet/pod-resources mounted here?)")
                                : std::string(std::strerror(errno)));
  if (!S_ISSOCK(st.st_mode)) return fail(core::ErrorKind::kEnvironment, "not a socket");
  if (!c.stub) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);  // a node's pods; the kubelet's own limit is the same
    c.channel = grpc::CreateCustomChannel("unix:" + c.socket, grpc::InsecureChannelCredentials(), args);
    c.stub = v1::PodResourcesLister::NewStub(c.channel);
  }
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + c.timeout);
  v1::ListPodResourcesResponse answer;
  const grpc::Status status = c.stub->List(&context, v1::ListPodResourcesRequest(), &answer);
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
    return fail(core::ErrorKind::kTimeout, fmt::format("no answer within {} ms", c.timeout.count()));
  if (!status.ok())
    return fail(core::ErrorKind::kEnvironment,
                fmt::format("List failed: {} {}", code_name(status.error_code()), status.error_message()));
  return from_answer(answer);
}

core::Result<PodResourcesList> list_pod_resources(const std::string& socket, std::chrono::milliseconds timeout) {
  return PodResourcesClient(socket, timeout).list();
}

}  // namespace gpudoc::serve

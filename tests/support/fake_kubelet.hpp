// gpudoc::testing::FakeKubelet — a real gRPC server implementing the kubelet's pod-resources API
// (v1.PodResourcesLister/List, src/serve/podresources.proto) on a unix socket in a private folder,
// answering what the test last set. For the tests of gpudoc serve's pod attribution.
//
//   testing::TempDir dir("gpudoc-kubelet");
//   testing::FakeKubelet kubelet(dir.file("kubelet.sock"));
//   kubelet.set({{"train-0", "ml", {{"worker", {{"nvidia.com/gpu", {"GPU-fake-0000"}}}}}}});
//   ... kubelet.stop();   // the server goes and its socket with it
#pragma once

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

#include "podresources.grpc.pb.h"
#include "serve/attribution.hpp"

namespace gpudoc::testing {

class FakeKubelet final : public v1::PodResourcesLister::Service {
 public:
  explicit FakeKubelet(std::string socket) : socket_(std::move(socket)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket_, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (!server_) throw std::runtime_error("the fake kubelet cannot listen on " + socket_);
  }
  ~FakeKubelet() override { stop(); }
  FakeKubelet(const FakeKubelet&) = delete;
  FakeKubelet& operator=(const FakeKubelet&) = delete;

  void set(serve::PodResourcesList pods) {
    std::lock_guard lock(mu_);
    pods_ = std::move(pods);
  }
  // Answers with `status` instead (UNIMPLEMENTED, as a kubelet without the v1 API would).
  void fail_with(grpc::Status status) {
    std::lock_guard lock(mu_);
    failure_ = std::make_unique<grpc::Status>(std::move(status));
  }
  [[nodiscard]] int calls() const { return calls_.load(); }
  // The server stops and its socket file goes, as when the kubelet stops. The file goes first, so a
  // client never finds it with nobody behind it: what a client says next is always "no such socket".
  void stop() {
    if (server_) {
      ::unlink(socket_.c_str());
      server_->Shutdown();
      server_.reset();
    }
  }

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* answer) override {
    ++calls_;
    std::lock_guard lock(mu_);
    if (failure_) return *failure_;
    for (const auto& pod : pods_) {
      auto* p = answer->add_pod_resources();
      p->set_name(pod.name);
      p->set_namespace_(pod.namespace_name);
      for (const auto& container : pod.containers) {
        auto* c = p->add_containers();
        c->set_name(container.name);
        for (const auto& devices : container.devices) {
          auto* d = c->add_devices();
          d->set_resource_name(devices.resource_name);
          for (const auto& id : devices.device_ids) d->add_device_ids(id);
        }
      }
    }
    return grpc::Status::OK;
  }

 private:
  std::string socket_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  serve::PodResourcesList pods_;
  std::unique_ptr<grpc::Status> failure_;
  std::atomic<int> calls_{0};
};

}  // namespace gpudoc::testing

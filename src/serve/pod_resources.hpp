// gpudoc::serve pod resources — the kubelet's pod-resources API (PodResourcesLister.List, gRPC over
// its unix socket): which devices the device plugins gave each container of each pod on this node.
// The answer's meaning is serve/attribution.hpp's.
//
//   serve::PodResourcesClient kubelet(std::string(serve::kDefaultPodResourcesSocket), std::chrono::seconds(5));
//   auto list = kubelet.list();               // again every few seconds
//   if (!list) log(list.error().message());   // a missing socket, a refused or failed call
//
// A client keeps its connection while calls succeed (connecting costs more CPU than the call:
// docs/results/serve.md, "Pod and job attribution") and drops it on any failure, so that the next call
// connects anew at once (a kubelet that restarts makes a new socket; gRPC's own reconnection would
// wait up to two minutes). Each call gives up after `timeout`.
// Thread-safety: one client from one thread at a time; separate clients are independent.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "serve/attribution.hpp"

namespace gpudoc::serve {

inline constexpr std::string_view kDefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

class PodResourcesClient {
 public:
  PodResourcesClient(std::string socket, std::chrono::milliseconds timeout);
  ~PodResourcesClient();
  PodResourcesClient(const PodResourcesClient&) = delete;
  PodResourcesClient& operator=(const PodResourcesClient&) = delete;

  // The kubelet's answer, all of it (a node's pods, each with its containers and their devices).
  // Errors: kEnvironment "the kubelet's pod-resources socket SOCKET: <why>" (no such socket, not a
  // socket, the connection refused, an answer that is not the API's); kTimeout when no answer
  // came in time.
  [[nodiscard]] core::Result<PodResourcesList> list();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One call on a connection of its own: PodResourcesClient(socket, timeout).list().
[[nodiscard]] core::Result<PodResourcesList> list_pod_resources(const std::string& socket,
                                                                std::chrono::milliseconds timeout);

}  // namespace gpudoc::serve

// gpudoc::serve pod resources — one call of the kubelet's pod-resources API (PodResourcesLister.List,
// gRPC over its unix socket): which devices the device plugins gave each container of each pod on
// this node. The answer's meaning is serve/attribution.hpp's.
//
//   auto list = serve::list_pod_resources(serve::kDefaultPodResourcesSocket, std::chrono::seconds(5));
//   if (!list) log(list.error().message());   // a missing socket, a refused or failed call
//
// Each call connects anew (a kubelet that restarts makes a new socket), and gives up after
// `timeout`. Thread-safety: calls from several threads are independent.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "core/result.hpp"
#include "serve/attribution.hpp"

namespace gpudoc::serve {

inline constexpr std::string_view kDefaultPodResourcesSocket = "/var/lib/kubelet/pod-resources/kubelet.sock";

// The kubelet's answer, all of it (a node's pods, each with its containers and their devices).
// Errors: kEnvironment "the kubelet's pod-resources socket SOCKET: <why>" (no such socket, not a
// socket, the connection refused, an answer that is not the API's); kTimeout when no answer
// came in time.
[[nodiscard]] core::Result<PodResourcesList> list_pod_resources(const std::string& socket,
                                                                std::chrono::milliseconds timeout);

}  // namespace gpudoc::serve

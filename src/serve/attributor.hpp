// gpudoc::serve::Attributor — who holds each GPU, read again every few seconds from the kubelet's
// pod-resources API and from an HPC job mapping folder (serve/attribution.hpp says what each gives),
// for the labels of each scrape.
//
//   serve::Attributor a(header.gpus, {.pod_resources_socket = std::string(serve::kDefaultPodResourcesSocket)});
//   a.start();                                   // its thread: a read now, then every `every`
//   serve::Attribution now = a.current();        // a scrape, any thread
//   a.stop();
//
// Honest labels: what a read cannot confirm is dropped, never kept from an earlier read. A GPU the
// kubelet gave another pod carries the new pod's labels after the next read; when the socket is gone
// or the call fails, no GPU carries pod labels until it answers again; a mapping file that is
// removed, or cannot be read, takes its jobs with it. Each source that starts failing is warned
// about once (the socket, the folder, each file), again only after it has worked in between.
//
// Thread-safety: start() and stop() from one thread; current() and refresh() from any.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/result.hpp"
#include "gpu/backend.hpp"
#include "serve/attribution.hpp"

namespace gpudoc::serve {

struct AttributionOptions {
  std::optional<std::string> pod_resources_socket{};  // --kubernetes-pod-resources; nullopt: not read
  std::optional<std::string> hpc_job_mapping_dir{};   // --hpc-job-mapping-dir; nullopt: not read
  std::chrono::milliseconds every{10000};             // --attribution-every
  std::chrono::milliseconds call_timeout{5000};       // the kubelet's answer, at most
  [[nodiscard]] bool enabled() const { return pod_resources_socket || hpc_job_mapping_dir; }
};

// What a read of the mapping folder found: the jobs of each GPU (sorted, each once, the files of
// its GPU instances included), and each file or the folder that could not be read, with why.
struct HpcJobRead {
  std::map<int, std::vector<std::string>> jobs;
  std::map<std::string, std::string> problems;  // path -> "<path>: <why>"
};

// Reads every file of `dir` named as hpc_job_file_gpu wants, each opened without following a
// symlink (gpudoc runs as root: a link planted in the folder must not make it read and expose
// another file), only a regular file and at most 64 KiB of it; at most 4096 files. Other names are
// ignored, as dcgm-exporter does.
[[nodiscard]] HpcJobRead read_hpc_job_dir(const std::string& dir);

class Attributor {
 public:
  struct Sources {
    std::function<core::Result<PodResourcesList>()> list_pods;  // default: list_pod_resources on the socket
    std::function<HpcJobRead()> read_jobs;                      // default: read_hpc_job_dir on the folder
    std::function<void(const std::string&)> warn;               // default: core::log_warn
  };

  // `gpus`: the GPUs served (index, UUID, MIG instances). A source whose option is nullopt is not
  // read, whatever `sources` gives.
  Attributor(std::vector<gpu::DeviceInfo> gpus, AttributionOptions options, Sources sources = {});
  ~Attributor();
  Attributor(const Attributor&) = delete;
  Attributor& operator=(const Attributor&) = delete;

  void start();
  void stop();  // waits for a read under way (at most options.call_timeout)
  // One read of every source now; the thread's step.
  void refresh();
  [[nodiscard]] Attribution current() const;
  // How many reads have completed (tests wait for one).
  [[nodiscard]] std::uint64_t reads() const;

 private:
  void loop();

  std::vector<gpu::DeviceInfo> gpus_;
  AttributionOptions options_;
  Sources sources_;

  std::mutex refresh_mu_;          // one read at a time
  std::set<std::string> failing_;  // the sources that failed at the last read (warned about)
  mutable std::mutex mu_;
  Attribution current_;
  std::uint64_t reads_ = 0;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool running_ = false;
  std::thread thread_;
};

}  // namespace gpudoc::serve

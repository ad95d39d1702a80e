// Test helper for the crash and concurrency tests: writes baselines to a store in a loop and prints
// each run id on stdout (unbuffered, one line) only after record_baseline returned, i.e. after
// COMMIT: a printed id is an acknowledged write.
//
//   gpudoc_store_writer DB COUNT PREFIX     exit 0 after COUNT writes; 1 on the first error (stderr)
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "store/database.hpp"

int main(int argc, char** argv) {
  using namespace gpudoc::store;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s DB COUNT PREFIX\n", argv[0]);
    return 2;
  }
  const long count = std::atol(argv[2]);
  auto store = Database::open(argv[1]);
  if (!store) {
    std::fprintf(stderr, "open: %s\n", store.error().message().c_str());
    return 1;
  }
  for (long i = 0; i < count; ++i) {
    NewBaseline b;
    b.name = std::string(argv[3]) + std::to_string(i % 4);  // upserts of shared rows, as re-recording does
    b.kinds = "workload";
    b.spec = {{"command", {"sh", "-c", "true"}}, {"i", i}};
    b.run.time_unix_ns = i;
    b.run.machine.host = "crash-test";
    b.run.figures = {Figure{"step_ms", "ms", "workload", std::nullopt, std::vector<double>(50, static_cast<double>(i))},
                     Figure{"accuracy", "", "workload", Direction::kHigherIsBetter, {0.9}},
                     Figure{"wall_s", "s", "gpudoc", Direction::kLowerIsBetter, {1.0, 1.1}}};
    auto id = store->record_baseline(b);
    if (!id) {
      std::fprintf(stderr, "write %ld: %s\n", i, id.error().message().c_str());
      return 1;
    }
    const std::string line = std::to_string(*id) + "\n";
    if (write(STDOUT_FILENO, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return 1;
  }
  return 0;
}

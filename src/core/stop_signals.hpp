// gpudoc::core stop signals — what SIGHUP, SIGINT and SIGTERM mean to every gpudoc command that
// runs a workload or records: a request to stop, counted, that wakes whoever waits for it.
#pragma once

#include <atomic>

#include "core/clock.hpp"
#include "core/process.hpp"

namespace gpudoc::core {

// One policy (core/process.hpp, README.md "Signals"): install_stop_handlers() makes SIGHUP, SIGINT and SIGTERM a
// request to stop (SA_RESTART: a read in progress goes on). Each request increments stop_requests(); the first one's
// number is kept in stop_signal() (beside the same count). The workload, in its own process group, gets no signal from
// the terminal: gpudoc stops its group (core::GroupStopper: SIGTERM, SIGKILL 5 s later or at once on a second request),
// closes its trace with its end line, removes its private folders and exits exit_code_after_stop(): 128 + N.
void install_stop_handlers();
std::atomic<int>& stop_requests();
// Sleeps until a stop request or `timeout`, whichever comes first, without waking in between (the
// handler wakes it through a pipe); true when a stop was requested, at once if one came before.
[[nodiscard]] bool wait_for_stop(Nanos timeout);
const StopSignal& stop_signal();
// The exit code of a command that runs a workload or records: `code`, or 128 + N once stop
// signal N came (whatever the command had to say after it).
[[nodiscard]] int exit_code_after_stop(int code);

// A reader that goes away (`gpudoc ... | head -1`) must not kill gpudoc by SIGPIPE before it has
// stored what it measured: after this, a write to the closed pipe fails with EPIPE instead, and
// the command says so (flush_stream, core/file.hpp). A handler that does nothing, not SIG_IGN: an
// ignored signal stays ignored in the commands gpudoc runs (record -- CMD), a handled one is reset
// to the default by exec.
void survive_broken_pipe();

}  // namespace gpudoc::core

// Text from outside gpudoc never drives the terminal: a replayed trace whose host, driver, GPU,
// command and process names hold OSC and CSI sequences, BEL, the 8-bit CSI (U+009B) and bytes that
// are not UTF-8, an nvidia-smi log with such a GPU name, a baseline name and workload figures
// with them, and a job whose process name has them, run through every command that shows them
// (doctor, record, diagnose, watch, health, guard, trace info, baseline record, check, list, show,
// history). No raw control byte and no invalid UTF-8 may reach stdout or stderr (colour is off:
// the output is a pipe), and each hostile name is still shown, as visible escapes.
//
// GPUDOC_TEST_BINARY, when set, runs these checks against another gpudoc binary.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "support/temp_dir.hpp"

namespace gpudoc::testing {
namespace {

namespace fs = std::filesystem;

// OSC (retitles the window), CSI (clears the screen), BEL, and the 8-bit CSI as UTF-8 (U+009B).
const std::string kHostile =
    "\x1b]0;owned\x07\x1b[2J\xc2\x9b"
    "1m";

std::string binary() {
  const char* b = std::getenv("GPUDOC_TEST_BINARY");
  return b != nullptr && *b != '\0' ? std::string(b) : gpudoc_binary();
}

// stdout and stderr together, colour off whatever the environment says.
CliRun run(const std::string& args) { return run_shell("NO_COLOR=1 " + binary() + " " + args + " 2>&1 </dev/null"); }

// The first thing in `out` that could drive a terminal: a C0 control other than '\n', DEL, a C1
// control (raw or as UTF-8), or a byte that is not part of valid UTF-8. Empty when there is none.
std::string first_unsafe(const std::string& out) {
  auto at = [&](std::size_t i, const char* what) {
    const std::size_t from = i > 40 ? i - 40 : 0;
    return std::string(what) + " at byte " + std::to_string(i) + " after \"" + out.substr(from, i - from) + "\"";
  };
  for (std::size_t i = 0; i < out.size();) {
    const auto c = static_cast<unsigned char>(out[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\n') || c == 0x7f) return at(i, "a control character");
      ++i;
      continue;
    }
    const std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (n == 0 || i + n > out.size()) return at(i, "invalid UTF-8");
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(out[i + k]) & 0xC0) != 0x80) return at(i, "invalid UTF-8");
    if (c == 0xC2 && static_cast<unsigned char>(out[i + 1]) < 0xA0) return at(i, "a C1 control");
    i += n;
  }
  return {};
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class TerminalSafe : public ::testing::Test {
 protected:
  void SetUp() override {
    trace_ = tmp_.file("hostile.jsonl");
    write_hostile_trace(data_file("memory_growth.jsonl"), trace_);
    replay_ = "--backend replay:" + trace_ + "@1000";
  }

  // A real H200 trace with the names a hostile or broken node could write into it.
  static void write_hostile_trace(const std::string& from, const std::string& to) {
    std::ifstream in(from);
    std::ofstream out(to);
    std::string line;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      if (j["type"] == "header") {
        j["host"] = "node" + kHostile;
        j["driver_version"] = "580" + kHostile;
        for (auto& g : j["gpus"]) g["name"] = "H200" + kHostile;
        j["command"] = {"python3" + kHostile, "train.py"};
      } else if (j["type"] == "process") {
        j["name"] = "py" + kHostile;
      }
      out << j.dump() << "\n";
    }
  }

  void expect_safe(const std::string& args, const CliRun& r) {
    EXPECT_EQ(first_unsafe(r.output), "") << args << "\n" << r.output;
  }
  CliRun checked(const std::string& args) {
    CliRun r = run(args);
    expect_safe(args, r);
    return r;
  }

  TempDir tmp_{"gpudoc-terminal-safe"};
  std::string trace_, replay_;
};

// The banner of every command that opens the replay names its host and GPU as visible escapes
// (watch cuts its banner to 80 columns, before the host).
TEST_F(TerminalSafe, TheReplayBannerOfEveryCommand) {
  const std::vector<std::string> commands = {
      "doctor --duration 5", "record -o " + tmp_.file("out.jsonl"), "diagnose --live --duration 5",
      "diagnose -- true",    "guard --dry-run -- sleep 1",          "watch --once",
  };
  for (const auto& c : commands) {
    const CliRun r = checked(replay_ + " " + c);
    EXPECT_TRUE(has(r.output, "REPLAY, not live")) << c << "\n" << r.output;
    if (c != "watch --once") {
      EXPECT_TRUE(has(r.output, "node\\x1b]0;owned\\x07\\x1b[2J\\u{009b}1m")) << c << "\n" << r.output;
    }
  }
}

TEST_F(TerminalSafe, HealthShowsTheReplayedHostAndDriver) {
  const CliRun r = checked(replay_ + " health --no-store");
  EXPECT_TRUE(has(r.output, "node\\x1b]0;owned")) << r.output;
  EXPECT_TRUE(has(r.output, "driver 580\\x1b]0;owned")) << r.output;
}

TEST_F(TerminalSafe, ReadingTheTraceItself) {
  checked("trace info " + trace_);
  const CliRun d = checked("diagnose " + trace_);
  EXPECT_TRUE(has(d.output, "python3\\x1b]0;owned")) << d.output;
  checked("watch --once " + trace_);
  // The processes on the GPU show from the trace's 5th second.
  const CliRun w = checked("watch " + trace_ + " --speed 10 --duration 8 --interval 1000");
  EXPECT_TRUE(has(w.output, "py\\x1b]0;owned")) << w.output;
}

// A line that is not UTF-8 is refused; the message quoting it is escaped.
TEST_F(TerminalSafe, AnErrorQuotingABrokenLine) {
  const std::string bad = tmp_.file("not-utf8.jsonl");
  std::ifstream in(trace_);
  std::string header;
  std::getline(in, header);
  header.replace(header.find("\"node"), 5, "\"node\xff\xfe\x9b\x1b[2J");
  std::ofstream(bad) << header << "\n";
  const CliRun r = checked("trace info " + bad);
  EXPECT_NE(r.exit_code, 0) << r.output;
  checked("--backend replay:" + bad + " doctor --duration 1");
}

// Arguments quoted back in a usage error (a name pasted from a log, a file name from a glob).
TEST_F(TerminalSafe, ArgumentsQuotedInUsageErrors) {
  const std::string hostile = "'x" + kHostile + "\xff'";
  for (const std::string& args : {"--backend " + hostile + " watch --once", "watch --once --nope" + hostile,
                                  "trace info " + hostile, "--backend fake:1 record -o " + hostile + "/x.jsonl"}) {
    const CliRun r = checked(args);
    EXPECT_NE(r.exit_code, 0) << args << "\n" << r.output;
  }
}

// nvidia-smi's own log: GPU names are read as written (bytes that are not UTF-8 become U+FFFD).
TEST_F(TerminalSafe, AnNvidiaSmiLogWithAHostileGpuName) {
  std::string csv = "timestamp, index, name, utilization.gpu [%], power.draw [W]\n";
  for (int i = 0; i < 60; ++i)
    csv += "2026/01/02 03:04:" + std::to_string(10 + i / 10) + "." + std::to_string(i % 10) + "00, 0, H200" + kHostile +
           "\xff, 50 %, 300 W\n";
  const std::string log = tmp_.file("log.csv");
  std::ofstream(log) << csv;
  const CliRun d = checked("diagnose " + log);
  checked("watch --once " + log);
  checked("trace info " + log);
  const CliRun w = checked("--backend replay:" + log + "@1000 watch --once");
  EXPECT_TRUE(has(w.output, "H200\\x1b]0;owned")) << w.output;
  const CliRun doctor = checked("--backend replay:" + log + "@1000 doctor --duration 5");
  EXPECT_TRUE(has(doctor.output, "H200\\x1b]0;owned")) << doctor.output;  // in the banner
}

// A job whose process name (its comm, from /proc) carries the sequences.
TEST_F(TerminalSafe, AGuardedJobsProcessName) {
  const std::string job = tmp_.file("j\x1b]0;x\x07\x1b[2J");
  fs::create_symlink("/bin/sleep", job);
  const CliRun r = checked("--backend fake:1 guard --dry-run -- '" + job + "' 1");
  EXPECT_TRUE(has(r.output, "j\\x1b]0;x\\x07")) << r.output;
}

// Baseline and figure names come from the command line and the workload; they live in the store
// and come back in every view of it.
TEST_F(TerminalSafe, BaselineAndFigureNames) {
  const std::string store = " --store " + tmp_.file("store.db");
  const std::string work = tmp_.file("work.sh");
  // Into $GPUDOC_METRICS, not stdout: a workload's own output passes through untouched.
  std::ofstream(work) << R"(#!/bin/sh
printf '%s\n' '{"step\u001b]0;x\u0007_ms": 1.5, "acc\u009b2J": 0.9}' >> "$GPUDOC_METRICS"
printf '%s\n' '{"step\u001b]0;x\u0007_ms": 1.6, "acc\u009b2J": 0.9}' >> "$GPUDOC_METRICS"
printf '{"bad\377\376\033[2J": 2}\n' >> "$GPUDOC_METRICS"
)";
  fs::permissions(work, fs::perms::owner_all);
  const std::string name = "'tr" + kHostile + "\xff" + "ain'";
  const CliRun rec = checked(replay_ + " baseline record " + name + store + " -- " + work);
  EXPECT_EQ(rec.exit_code, 0) << rec.output;
  EXPECT_TRUE(has(rec.output, "step\\x1b]0;x\\x07_ms")) << rec.output;
  EXPECT_TRUE(has(rec.output, "tr\\x1b]0;owned")) << rec.output;
  const CliRun list = checked("baseline list" + store);
  EXPECT_TRUE(has(list.output, "tr\\x1b]0;owned")) << list.output;
  EXPECT_TRUE(has(list.output, "H200\\x1b]0;owned")) << list.output;
  const CliRun show = checked("baseline show " + name + store);
  EXPECT_TRUE(has(show.output, "acc\\u{009b}2J")) << show.output;
  checked("baseline history " + name + store);
  checked(replay_ + " baseline check " + name + store + " -- " + work);
  checked("baseline show 'nope" + kHostile + "'" + store);  // the error names it
}

}  // namespace
}  // namespace gpudoc::testing

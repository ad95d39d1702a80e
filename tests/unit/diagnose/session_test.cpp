// A live run of the diagnosis (diagnose/session.hpp) on fake GPUs: what it says while it runs, and
// the command's exit code and the diagnosis it hands back.
#include "diagnose/session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <optional>
#include <string>

#include "core/temp_dir.hpp"
#include "telemetry/backend_source.hpp"

namespace gpudoc::diagnose {
namespace {

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

LiveRun on_gpu0() {
  LiveRun run;
  run.sampler.gpus = {0};
  return run;
}

// One fake GPU, opened for each test.
class DiagnoseSession : public ::testing::Test {
 protected:
  void SetUp() override {
    auto opened = source_.open_gpus();
    ASSERT_TRUE(opened.ok()) << opened.error().message();
    live_.emplace(std::move(*opened));
  }
  [[nodiscard]] const telemetry::Live& live() const { return *live_; }

 private:
  telemetry::BackendSource source_{*telemetry::parse_backend_spec("fake:1", "--backend")};
  std::optional<telemetry::Live> live_;
};

TEST_F(DiagnoseSession, NarratesTheBannerAndWhatIsSampledWithoutAProgressLineOffATerminal) {
  std::FILE* said = std::tmpfile();
  ASSERT_NE(said, nullptr);
  LiveRun run = on_gpu0();
  run.duration_s = 1;
  run.narrate = said;
  std::atomic<int> stops{0};
  auto r = record_and_diagnose(live(), run, Options{}, stops);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::string text = read_all(said);
  std::fclose(said);
  EXPECT_NE(text.find("gpudoc: FAKE GPUs, not this machine"), std::string::npos) << text;
  EXPECT_NE(text.find("gpudoc: sampling 1 GPU for 1 s, then diagnosing\n"), std::string::npos) << text;
  EXPECT_EQ(text.find('\r'), std::string::npos) << "a progress line off a terminal: " << text;
  EXPECT_EQ(r->diagnosed.diagnosis.input_format, "fake");
  EXPECT_TRUE(r->trace_path.empty());
}

TEST_F(DiagnoseSession, WithACommandSaysWhichOneTerminalSafeAndKeepsItsExitCode) {
  std::FILE* said = std::tmpfile();
  ASSERT_NE(said, nullptr);
  LiveRun run = on_gpu0();
  run.command = {"sh", "-c", "sleep 0.3; exit 3", "\x1b[31mred"};
  run.narrate = said;
  std::atomic<int> stops{0};
  auto r = record_and_diagnose(live(), run, Options{}, stops);
  ASSERT_TRUE(r.ok()) << r.error().message();
  const std::string text = read_all(said);
  std::fclose(said);
  EXPECT_NE(text.find("gpudoc: recording 1 GPU while `sh -c sleep 0.3; exit 3 "), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "an escape from the command line reached the terminal";
  ASSERT_TRUE(r->command_exit_code.has_value());
  EXPECT_EQ(*r->command_exit_code, 3);
}

TEST_F(DiagnoseSession, SaysNothingWithoutANarrateStream) {
  LiveRun run = on_gpu0();
  run.command = {"true"};
  std::atomic<int> stops{0};
  auto r = record_and_diagnose(live(), run, Options{}, stops);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->command_exit_code.value_or(-1), 0);
}

// The command's ::gpudoc work lines become the trace's step events, in memory and in the file alike,
// with the totals the lines reported.
TEST_F(DiagnoseSession, TheCommandsWorkLinesBecomeStepEventsWithTheirTotals) {
  auto dir = core::PrivateDir::create("gpudoc-session-test");
  ASSERT_TRUE(dir) << dir.error().message();
  LiveRun run = on_gpu0();
  run.output = dir->file("work.jsonl");
  run.command_stdout_to_stderr = true;  // keeps the test's own stdout clean
  run.command = {"sh", "-c",
                 "for i in 1 2 3 4 5; do echo \"::gpudoc {\\\"step\\\": $i, \\\"samples\\\": 8, \\\"tokens\\\": 100}\";"
                 " echo plain; sleep 0.3; done"};
  std::atomic<int> stops{0};
  auto r = record_and_diagnose(live(), run, Options{}, stops);
  ASSERT_TRUE(r.ok()) << r.error().message();
  auto totals = [](const telemetry::Trace& t) {
    double samples = 0, tokens = 0, step = 0, lines = 0;
    for (const auto& e : t.events) {
      if (e.kind != "step") continue;
      samples += e.fields.value("samples", 0.0);
      tokens += e.fields.value("tokens", 0.0);
      step = std::max(step, e.fields.value("step", 0.0));
      lines += e.fields.value("lines", 0.0);
    }
    return std::array<double, 4>{step, samples, tokens, lines};
  };
  EXPECT_EQ(totals(r->diagnosed.trace), (std::array<double, 4>{5, 40, 500, 5}));
  auto read = diagnose_file(run.output, Options{});
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(totals(read->trace), (std::array<double, 4>{5, 40, 500, 5}));
}

TEST_F(DiagnoseSession, SeveralFilesAreDiagnosedInOrderAndTheFirstThatFailsNamesItself) {
  auto dir = core::PrivateDir::create("gpudoc-session-test");
  ASSERT_TRUE(dir) << dir.error().message();
  LiveRun run = on_gpu0();
  run.duration_s = 1;
  run.output = dir->file("a.jsonl");
  std::atomic<int> stops{0};
  ASSERT_TRUE(record_and_diagnose(live(), run, Options{}, stops));
  auto items = diagnose_files({run.output, run.output}, Options{});
  ASSERT_TRUE(items) << items.error().message();
  ASSERT_EQ(items->size(), 2u);
  EXPECT_EQ((*items)[1].diagnosis.source, run.output);
  EXPECT_TRUE(diagnose_files({}, Options{})->empty());
  auto named = diagnose_files({"a.jsonl"}, Options{}, dir->path());  // a name in a folder: called by its name
  ASSERT_TRUE(named) << named.error().message();
  EXPECT_EQ((*named)[0].diagnosis.source, "a.jsonl");
  const std::string missing = dir->file("missing.jsonl");
  auto failed = diagnose_files({run.output, missing, dir->file("also-missing.jsonl")}, Options{});
  ASSERT_FALSE(failed);
  EXPECT_NE(failed.error().message().find(missing), std::string::npos) << failed.error().message();
}

}  // namespace
}  // namespace gpudoc::diagnose

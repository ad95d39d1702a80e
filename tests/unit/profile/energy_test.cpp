// profile energy: the NVML energy counter readings `gpudoc profile` takes while the program runs,
// kept in the records (J and U lines, read back the same), placed on CUPTI's clock by the T lines
// and matched to the profiled device by its P line.
#include "profile/energy.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "core/clock.hpp"
#include "core/temp_dir.hpp"
#include "gpu/fake/fake_backend.hpp"
#include "profile/energy_sampler.hpp"
#include "profile/launch.hpp"
#include "profile/records.hpp"

namespace gpudoc::profile {
namespace {

const std::string kHeader = "H\tgpudoc-profile\t3\t7\t1\n";
const std::string kOldHeader = "H\tgpudoc-profile\t2\t7\t1\n";  // before the energy lines

core::Result<RecordSet> read(const std::string& text) { return read_records_text(text, "records-7.txt"); }

TEST(ProfileEnergyClock, MonotonicTimesArePlacedByTheNearestPairsOffset) {
  const std::vector<ClockPair> none;
  EXPECT_FALSE(to_cupti_ns(none, 5));
  const std::vector<ClockPair> one{{1'000'000, 100}};
  EXPECT_EQ(*to_cupti_ns(one, 150), 1'000'050u);
  EXPECT_EQ(*to_cupti_ns(one, 50), 999'950u);
  // The offset moves from 999'900 to 1'000'000 between two pairs: linear between them.
  const std::vector<ClockPair> two{{1'000'000, 100}, {1'001'200, 1'200}};
  EXPECT_EQ(*to_cupti_ns(two, 650), 1'000'000u + 550u + 50u);
  EXPECT_EQ(*to_cupti_ns(two, 2'000), 1'002'000u);  // after the last: its offset
  EXPECT_EQ(*to_cupti_ns(two, 0), 999'900u);        // before the first: its offset
}

TEST(ProfileEnergyClock, PciBusIdsOfNvmlAndCudaCompareAsNumbers) {
  EXPECT_TRUE(same_pci_bus("00000000:18:00.0", "0000:18:00.0"));
  EXPECT_TRUE(same_pci_bus("00000000:9A:00.0", "0000:9a:00.0"));
  EXPECT_FALSE(same_pci_bus("00000000:18:00.0", "0000:19:00.0"));
  EXPECT_FALSE(same_pci_bus("00000000:18:00.0", "0000:18:00.1"));
  EXPECT_FALSE(same_pci_bus("", ""));
  EXPECT_TRUE(same_pci_bus("odd", "odd"));
}

TEST(ProfileEnergyRecords, EnergyLinesRoundTripAndOldRecordsHaveNone) {
  const std::vector<EnergyReading> readings{{5'000'000, "00000000:18:00.0", 1'234'567},
                                            {105'000'000, "00000000:18:00.0", 1'304'567}};
  const std::vector<std::string> notes{"GPU 1 (00000000:19:00.0) has no energy counter\tNVML can read"};
  const std::string text = energy_lines(readings, notes);
  EXPECT_EQ(text.rfind("J\t5000000\t00000000:18:00.0\t1234567\nJ\t", 0), 0u) << text;
  auto set = read(kHeader + "T\t1000000000\t4000000\nP\t0\t0000:18:00.0\n" + text);
  ASSERT_TRUE(set) << set.error().message();
  ASSERT_EQ(set->energy.size(), 2u);
  EXPECT_EQ(set->energy[1].monotonic_ns, 105'000'000u);
  EXPECT_EQ(set->energy[1].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(set->energy[1].millijoules, 1'304'567);
  EXPECT_EQ(set->energy_notes, notes);
  ASSERT_EQ(set->clock_pairs.size(), 1u);
  EXPECT_EQ(set->clock_pairs[0].cupti_ns, 1'000'000'000u);
  ASSERT_EQ(set->device_buses.size(), 1u);
  EXPECT_EQ(set->device_buses[0].pci_bus_id, "0000:18:00.0");
  auto old = read(kOldHeader + "K\t100\t200\t0\t7\t11\t1\t1\t1\t1\t1\t1\t0\tk\nE\t300\t0\n");
  ASSERT_TRUE(old) << old.error().message();
  EXPECT_TRUE(old->energy.empty() && old->clock_pairs.empty() && old->energy_notes.empty());
  EXPECT_FALSE(device_energy(*old, 0).notes.empty());
  EXPECT_FALSE(read(kHeader + "J\t5\t00000000:18:00.0\t-3\n"));  // a counter is never below 0
  EXPECT_FALSE(read(kHeader + "J\t5\t00000000:18:00.0\n"));      // malformed: a field short
  EXPECT_FALSE(read(kHeader + "T\tx\t5\n"));
}

TEST(ProfileEnergyDevice, TheProfiledDevicesGpuOnCuptisClock) {
  RecordSet set;
  set.clock_pairs = {{10'000'000'000, 1'000}};  // CUPTI = monotonic + 9'999'999'000
  set.device_buses = {{0, "0000:19:00.0"}, {1, "0000:18:00.0"}};
  set.energy = {{1'000, "00000000:18:00.0", 500},
                {1'000, "00000000:19:00.0", 7'000},
                {2'001'000, "00000000:18:00.0", 900},
                {2'001'000, "00000000:19:00.0", 7'500}};
  const DeviceEnergy e = device_energy(set, 1);
  EXPECT_EQ(e.pci_bus_id, "00000000:18:00.0");
  ASSERT_EQ(e.counter.size(), 2u);
  EXPECT_EQ(e.counter[0].cupti_ns, 10'000'000'000u);
  EXPECT_EQ(e.counter[1].cupti_ns, 10'002'000'000u);
  EXPECT_EQ(e.counter[1].millijoules, 900);
  EXPECT_TRUE(e.notes.empty());
  EXPECT_EQ(device_energy(set, 0).counter[0].millijoules, 7'000);
  // A device whose GPU was not read, two GPUs without P lines, no clock pair: not known, said.
  EXPECT_TRUE(device_energy(set, 2).counter.empty());
  RecordSet no_p = set;
  no_p.device_buses.clear();
  EXPECT_TRUE(device_energy(no_p, 0).counter.empty());
  EXPECT_FALSE(device_energy(no_p, 0).notes.empty());
  no_p.energy.resize(1);  // one GPU read: it is the device's
  EXPECT_EQ(device_energy(no_p, 0).counter.size(), 1u);
  RecordSet no_t = set;
  no_t.clock_pairs.clear();
  EXPECT_TRUE(device_energy(no_t, 1).counter.empty());
  EXPECT_FALSE(device_energy(no_t, 1).notes.empty());
  RecordSet without;  // no NVML: the reason kept is the note
  without.energy_notes = {"NVML could not be used (no driver): the energy is not known"};
  EXPECT_EQ(device_energy(without, 0).notes, without.energy_notes);
}

TEST(ProfileEnergyDevice, OnlyTheGpusTheKernelsRanOnAreKept) {
  RecordSet set;
  set.device_buses = {{0, "0000:19:00.0"}, {1, "0000:18:00.0"}};
  KernelRecord k;
  k.device = 1;
  set.kernels.push_back(k);
  const std::vector<EnergyReading> readings{
      {1, "00000000:18:00.0", 5}, {1, "00000000:19:00.0", 6}, {1, "00000000:1A:00.0", 7}};
  const auto kept = readings_of_used_gpus(set, readings);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].millijoules, 5);
  k.device = 2;  // no P line for device 2: all kept
  set.kernels.push_back(k);
  EXPECT_EQ(readings_of_used_gpus(set, readings).size(), 3u);
}

TEST(ProfileEnergySampler, ReadsEveryGpuAtTheEndsAndOneEachPeriodInTurnStampedOnTheClock) {
  core::ManualClock clock;
  clock.advance(std::chrono::seconds(1));
  gpu::FakeBackend fake(clock, 2);
  fake.set_value_fn([&clock](int g, gpu::Metric, double) {
    return 1000.0 * (g + 1) + std::chrono::duration<double>(clock.now().time_since_epoch()).count();
  });
  EnergySampler sampler(fake, clock, std::chrono::milliseconds(100));
  sampler.read_now();
  ASSERT_EQ(sampler.readings().size(), 2u);
  EXPECT_EQ(sampler.readings()[0].millijoules, 1'001'000);
  EXPECT_EQ(sampler.readings()[1].millijoules, 2'001'000);
  EXPECT_EQ(sampler.readings()[0].pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(sampler.readings()[0].monotonic_ns, 1'000'000'000u);  // the clock's monotonic time
  clock.advance(std::chrono::milliseconds(99));
  sampler.poll();  // too soon: nothing read
  EXPECT_EQ(sampler.readings().size(), 2u);
  // While the program runs, one GPU a period, in turn.
  clock.advance(std::chrono::milliseconds(1));
  sampler.poll();
  ASSERT_EQ(sampler.readings().size(), 3u);
  EXPECT_EQ(sampler.readings()[2].monotonic_ns, 1'100'000'000u);
  EXPECT_EQ(sampler.readings()[2].pci_bus_id, "00000000:18:00.0");
  clock.advance(std::chrono::milliseconds(100));
  sampler.poll();
  ASSERT_EQ(sampler.readings().size(), 4u);
  EXPECT_EQ(sampler.readings()[3].pci_bus_id, "00000000:19:00.0");
  fake.inject_error(1, gpu::MetricGroup::kEnergy, core::ErrorKind::kNotSupported, 1);
  sampler.read_now();
  sampler.read_now();
  EXPECT_EQ(sampler.readings().size(), 6u);  // GPU 1 is read no more
  for (int i = 0; i < 3; ++i) {              // nor in turn: GPU 0 each period
    clock.advance(std::chrono::milliseconds(100));
    sampler.poll();
  }
  ASSERT_EQ(sampler.readings().size(), 9u);
  EXPECT_EQ(sampler.readings()[8].pci_bus_id, "00000000:18:00.0");
  ASSERT_EQ(sampler.notes().size(), 1u);
  EXPECT_NE(sampler.notes()[0].find("00000000:19:00.0"), std::string::npos);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(ProfileEnergyAppend, TheReadingsAreAppendedAfterTheLastWholeLine) {
  auto dir = core::PrivateDir::create("gpudoc-test");
  ASSERT_TRUE(dir) << dir.error().message();
  RecordSet set;
  set.energy = {{5, "00000000:18:00.0", 10}, {7, "00000000:18:00.0", 12}};
  set.energy_notes = {"a note"};
  for (const std::string& tail : {std::string("E\t300\t0\n"), std::string("E\t300\t0\nK\t1\t2")}) {
    const std::string path = dir->file("records-7.txt");
    std::remove(path.c_str());
    std::ofstream(path) << kHeader << "T\t100\t5\n" << tail;
    ASSERT_TRUE(append_energy(path, set).ok());
    EXPECT_EQ(slurp(path), kHeader + "T\t100\t5\nE\t300\t0\n" + energy_lines(set.energy, set.energy_notes));
    auto back = read_records_file(path);
    ASSERT_TRUE(back) << back.error().message();
    EXPECT_EQ(back->energy.size(), 2u);
    EXPECT_EQ(back->energy_notes, set.energy_notes);
    EXPECT_TRUE(back->complete);
  }
  EXPECT_FALSE(append_energy(dir->file("missing.txt"), set).ok());
}

}  // namespace
}  // namespace gpudoc::profile

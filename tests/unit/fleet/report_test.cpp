// fleet::build_report against a fake Prometheus that evaluates the report's queries over a canned
// fleet of three GPUs (each query's metric, its `sum by` labels, the period before with `offset`, the
// prices' joins), and fleet::to_json / fleet::render_text of what comes out: the totals, the useful
// share, the causes sorted with their money and energy, the groups by each --by, the period before,
// the counter resets and the vanished node said, Prometheus's warnings carried, the timeline; and
// names from Prometheus kept as data.
#include "fleet/report.hpp"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "findings/finding.hpp"
#include "support/fake_http.hpp"

namespace gpudoc::fleet {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using Labels = std::map<std::string, std::string>;

// One GPU's counters' increases in the period and in the one before, and the prices its serve exposes.
struct Gpu {
  struct Period {
    double observed = 0, useful = 0, unexplained = 0, energy = 0;
    std::map<std::string, double> lost{}, lost_energy{};  // by finding id
  };
  Labels labels{};  // instance, uuid, and namespace, pod, hpc_job, slurm_job_id where it has them
  Period now{}, before{};
  std::string currency{};                 // "": no price
  double gpu_hour = 0, kwh = 0, pue = 0;  // pue 0: none exposed
};

struct Row {
  Labels labels{};
  double value = 0;
  const Gpu* gpu = nullptr;
};

// A fake Prometheus that knows the queries fleet::build_report sends (by their metric names and
// shapes) and answers them over `gpus`; any other query is refused, naming it.
class FakePrometheus {
 public:
  std::vector<Gpu> gpus{};
  std::vector<std::string> live{};      // instances with a sample at the end of the period
  double resets = 0;                    // resets() summed
  std::vector<std::string> warnings{};  // with every instant answer
  std::vector<std::string> infos{};     // with every range answer

  testing::HttpReply answer(const testing::HttpRequest& q) const {
    const std::string& promql = q.form.count("query") ? q.form.at("query") : "";
    nlohmann::json doc = {{"status", "success"}};
    if (q.path == "/api/v1/query_range") {
      doc["data"] = {{"resultType", "matrix"}, {"result", timeline(promql, q.form)}};
      if (!infos.empty()) doc["infos"] = infos;
    } else if (q.path == "/api/v1/query") {
      auto result = instant(promql, std::stod(q.form.at("time")));
      if (!result) return refuse("the fake Prometheus does not know: " + promql);
      doc["data"] = {{"resultType", "vector"}, {"result", *result}};
      if (!warnings.empty()) doc["warnings"] = warnings;
    } else {
      return {.status = 404, .content_type = "text/plain", .body = "404 page not found", .hang = false};
    }
    return {.status = 200, .content_type = "application/json", .body = doc.dump(), .hang = false};
  }

 private:
  static testing::HttpReply refuse(const std::string& why) {
    const nlohmann::json e = {{"status", "error"}, {"errorType", "bad_data"}, {"error", why}};
    return {.status = 400, .content_type = "application/json", .body = e.dump(), .hang = false};
  }

  std::vector<Row> rows(const std::string& metric, bool before) const {
    std::vector<Row> out;
    for (const Gpu& g : gpus) {
      const Gpu::Period& p = before ? g.before : g.now;
      if (p.observed <= 0) continue;  // no series in that period
      auto add = [&](double v, const std::string& id = "") {
        Labels l = g.labels;
        if (!id.empty()) l["id"] = id;
        out.push_back({.labels = l, .value = v, .gpu = &g});
      };
      if (metric == "gpudoc_gpu_observed_seconds_total") add(p.observed);
      if (metric == "gpudoc_gpu_useful_seconds_total") add(p.useful);
      if (metric == "gpudoc_gpu_unexplained_seconds_total") add(p.unexplained);
      if (metric == "gpudoc_gpu_energy_joules_total") add(p.energy);
      if (metric == "gpudoc_gpu_lost_seconds_total")
        for (const auto& [id, v] : p.lost) add(v, id);
      if (metric == "gpudoc_gpu_lost_energy_joules_total")
        for (const auto& [id, v] : p.lost_energy) add(v, id);
    }
    return out;
  }

  static nlohmann::json sample(const Labels& l, double at, double v) {
    return {{"metric", l}, {"value", {at, fmt::format("{}", v)}}};
  }

  // sum by (by) over `rows`: a label a row lacks is absent from its group, as in Prometheus.
  static nlohmann::json sum_by(const std::vector<Row>& rows, const std::vector<std::string>& by, double at) {
    std::map<Labels, double> groups;
    for (const Row& r : rows) {
      Labels key;
      for (const auto& l : by)
        if (r.labels.count(l)) key[l] = r.labels.at(l);
      groups[key] += r.value;
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& [l, v] : groups) out.push_back(sample(l, at, v));
    return out;
  }

  static std::vector<std::string> by_labels(const std::string& q) {
    static const std::regex kBy(R"(^(?:sum|count) by \(([^)]*)\))");
    std::smatch m;
    std::vector<std::string> out;
    if (!std::regex_search(q, m, kBy)) return out;
    const std::string list = m[1].str();
    for (std::size_t from = 0; from < list.size();) {
      std::size_t to = list.find(',', from);
      if (to == std::string::npos) to = list.size();
      std::string l = list.substr(from, to - from);
      l.erase(0, l.find_first_not_of(' '));
      if (!l.empty()) out.push_back(l);
      from = to + 1;
    }
    return out;
  }

  static std::string metric_of(const std::string& q) {
    static const std::regex kIncrease(R"(increase\((\w+)\[)");
    std::smatch m;
    return std::regex_search(q, m, kIncrease) ? m[1].str() : "";
  }

  std::optional<nlohmann::json> instant(const std::string& q, double at) const {
    const bool before = q.find(" offset ") != std::string::npos;
    const auto observed = rows("gpudoc_gpu_observed_seconds_total", before);
    if (q.find("resets(gpudoc_gpu_observed_seconds_total") != std::string::npos)
      return observed.empty() ? nlohmann::json::array() : nlohmann::json::array({sample({}, at, resets)});
    if (q.rfind("count(count by (instance, uuid) (last_over_time(gpudoc_gpu_observed_seconds_total", 0) == 0) {
      std::set<std::pair<std::string, std::string>> distinct;
      for (const Row& r : observed) distinct.emplace(r.labels.at("instance"), r.labels.at("uuid"));
      return distinct.empty() ? nlohmann::json::array()
                              : nlohmann::json::array({sample({}, at, static_cast<double>(distinct.size()))});
    }
    if (q.rfind("count by (instance) (last_over_time(gpudoc_gpu_observed_seconds_total", 0) == 0) {
      std::vector<Row> ones = observed;
      for (Row& r : ones) r.value = 1;
      return sum_by(ones, {"instance"}, at);
    }
    if (q == "count by (instance) (gpudoc_gpu_observed_seconds_total)") {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& i : live) out.push_back(sample({{"instance", i}}, at, 1));
      return out;
    }
    const std::string metric = metric_of(q);
    auto source = rows(metric, before);
    if (metric.empty()) return std::nullopt;
    if (q.find(" and on (instance, uuid) last_over_time(gpudoc_price_gpu_hour") != std::string::npos) {
      std::erase_if(source, [](const Row& r) { return r.gpu->currency.empty(); });
      return sum_by(source, {}, at);
    }
    const bool time_money = q.find("gpudoc_price_gpu_hour") != std::string::npos;
    const bool energy_money = q.find("gpudoc_price_kwh") != std::string::npos;
    if (time_money || energy_money) {
      std::vector<Row> priced;
      for (Row r : source) {
        const Gpu& g = *r.gpu;
        if (g.currency.empty()) continue;
        r.labels["currency"] = g.currency;
        r.value = time_money ? r.value / 3600 * g.gpu_hour : r.value / 3.6e6 * g.kwh * (g.pue > 0 ? g.pue : 1);
        priced.push_back(std::move(r));
      }
      return sum_by(priced, by_labels(q), at);
    }
    if (q.rfind("sum by (", 0) == 0) return sum_by(source, by_labels(q), at);
    return std::nullopt;
  }

  // sum(increase(M[step])) at every step: useful 100 × (i + 1) with step 2 missing, lost 10 × (i + 1)
  // with step 4 NaN, unexplained (i + 1) as two series of halves.
  nlohmann::json timeline(const std::string& q, const std::map<std::string, std::string>& form) const {
    const std::string metric = metric_of(q);
    const double start = std::stod(form.at("start")), end = std::stod(form.at("end")),
                 step = std::stod(form.at("step"));
    const double scale = metric == "gpudoc_gpu_useful_seconds_total" ? 100
                         : metric == "gpudoc_gpu_lost_seconds_total" ? 10
                                                                     : 0.5;
    nlohmann::json values = nlohmann::json::array();
    for (int i = 0; start + i * step <= end + 1e-6; ++i) {
      if (metric == "gpudoc_gpu_useful_seconds_total" && i == 2) continue;
      const bool nan = metric == "gpudoc_gpu_lost_seconds_total" && i == 4;
      values.push_back({start + i * step, nan ? std::string("NaN") : fmt::format("{}", scale * (i + 1))});
    }
    nlohmann::json out = nlohmann::json::array();
    if (gpus.empty()) return out;
    const nlohmann::json series = {{"metric", nlohmann::json::object()}, {"values", values}};
    out.push_back(series);
    if (metric == "gpudoc_gpu_unexplained_seconds_total") out.push_back(series);
    return out;
  }
};

constexpr double kEnd = 1700006400;  // a whole minute
constexpr std::int64_t kWeek = 7 * 86400;
const std::string kHostileNamespace = "team \"x\"\nnext\x1b[31m";

// Three GPUs on three nodes: node-a's in namespace ml priced in USD, node-b's in a namespace with a
// hostile name, in a Slurm job, priced in EUR, node-c's without a price and gone before the end.
FakePrometheus fleet_of_three() {
  FakePrometheus f;
  f.gpus.push_back({.labels = {{"instance", "node-a:9400"}, {"uuid", "GPU-a"}, {"namespace", "ml"}, {"pod", "train-0"}},
                    .now = {.observed = 36000,
                            .useful = 18000,
                            .unexplained = 3600,
                            .energy = 3.6e7,
                            .lost = {{"sawtooth", 10800}, {"pulse", 3600}},
                            .lost_energy = {{"sawtooth", 1.08e7}, {"pulse", 3.6e6}}},
                    .before = {.observed = 30000,
                               .useful = 12000,
                               .unexplained = 6000,
                               .energy = 0,
                               .lost = {{"sawtooth", 9000}, {"plateau", 3000}},
                               .lost_energy = {}},
                    .currency = "USD",
                    .gpu_hour = 2,
                    .kwh = 0.1,
                    .pue = 1.5});
  f.gpus.push_back({.labels = {{"instance", "node-b:9400"},
                               {"uuid", "GPU-b"},
                               {"namespace", kHostileNamespace},
                               {"pod", "p<1>"},
                               {"hpc_job", "job-7"},
                               {"slurm_job_id", "7"}},
                    .now = {.observed = 18000,
                            .useful = 7200,
                            .unexplained = 3600,
                            .energy = 1.8e7,
                            .lost = {{"sawtooth", 7200}},
                            .lost_energy = {{"sawtooth", 7.2e6}}},
                    .before = {},
                    .currency = "EUR",
                    .gpu_hour = 3,
                    .kwh = 0.2,
                    .pue = 0});
  f.gpus.push_back({.labels = {{"instance", "node-c:9400"}, {"uuid", "GPU-c"}},
                    .now = {.observed = 7200, .useful = 7200, .unexplained = 0, .energy = 3.6e6},
                    .before = {},
                    .currency = "",
                    .gpu_hour = 0,
                    .kwh = 0,
                    .pue = 0});
  f.live = {"node-a:9400", "node-b:9400"};
  f.resets = 2;
  f.warnings = {"remote store eu-1 did not answer"};
  f.infos = {"PromQL info: metric might not be a counter"};
  return f;
}

testing::FakeHttp serving(const FakePrometheus& f) {
  return testing::FakeHttp([&f](const testing::HttpRequest& q) { return f.answer(q); });
}

core::Result<FleetReport> report_of(const testing::FakeHttp& server, const std::string& by = "namespace",
                                    std::size_t top = 10) {
  auto prom = Prometheus::open(server.url());
  if (!prom) return prom.error();
  return build_report(*prom, {.end_s = kEnd, .since_s = kWeek, .by = by, .top = top});
}

std::vector<std::string> keys(const std::vector<Group>& groups) {
  std::vector<std::string> out;
  for (const auto& g : groups) out.push_back(g.key);
  return out;
}

MATCHER_P2(MoneyIs, currency, amount, "") {
  return arg.size() == 1 && arg.count(currency) && std::abs(arg.at(currency) - amount) < 1e-9;
}

TEST(FleetReport, TotalsUsefulShareAndMoneyAreTheFleets) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  auto r = report_of(server);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->url, server.url());
  EXPECT_EQ(r->end_s, kEnd);
  EXPECT_EQ(r->start_s, kEnd - kWeek);
  EXPECT_EQ(r->gpus, 3u);
  EXPECT_EQ(r->nodes, (std::vector<std::string>{"node-a:9400", "node-b:9400", "node-c:9400"}));
  const Totals& t = r->now;
  EXPECT_DOUBLE_EQ(t.observed_s, 61200);
  EXPECT_DOUBLE_EQ(t.useful_s, 32400);
  EXPECT_DOUBLE_EQ(t.unexplained_s, 7200);
  EXPECT_DOUBLE_EQ(t.lost_s, 21600);
  EXPECT_DOUBLE_EQ(t.energy_j, 5.76e7);
  EXPECT_DOUBLE_EQ(t.lost_energy_j, 2.16e7);
  // USD: 10 GPU-h × 2 + 10 kWh × 0.1 × PUE 1.5; EUR: 5 GPU-h × 3 + 5 kWh × 0.2 (no PUE: 1).
  EXPECT_THAT(t.money, ElementsAre(Pair("EUR", DoubleNear(16, 1e-9)), Pair("USD", DoubleNear(21.5, 1e-9))));
  // The lost share: USD 4 GPU-h × 2 + 4 kWh × 0.15; EUR 2 GPU-h × 3 + 2 kWh × 0.2.
  EXPECT_THAT(t.money_lost, ElementsAre(Pair("EUR", DoubleNear(6.4, 1e-9)), Pair("USD", DoubleNear(8.6, 1e-9))));
  EXPECT_DOUBLE_EQ(t.unpriced_s, 7200);  // node-c's

  const nlohmann::json j = nlohmann::json::parse(to_json(*r).dump());
  EXPECT_EQ(j["schema"], 1);
  EXPECT_EQ(j["prometheus"], server.url());
  EXPECT_EQ(j["gpus"], 3);
  EXPECT_EQ(j["nodes"].size(), 3u);
  EXPECT_EQ(j["by"], "namespace");
  EXPECT_EQ(j["totals"]["observed_s"], 61200.0);
  EXPECT_DOUBLE_EQ(j["totals"]["gpu_hours"].get<double>(), 17);
  EXPECT_DOUBLE_EQ(j["totals"]["useful_s"].get<double>(), 32400);
  EXPECT_DOUBLE_EQ(j["totals"]["lost_s"].get<double>(), 21600);
  EXPECT_DOUBLE_EQ(j["totals"]["unexplained_s"].get<double>(), 7200);
  EXPECT_DOUBLE_EQ(j["totals"]["useful_share"].get<double>(), 32400.0 / 61200);
  EXPECT_DOUBLE_EQ(j["totals"]["energy_kwh"].get<double>(), 16);
  EXPECT_DOUBLE_EQ(j["totals"]["lost_energy_j"].get<double>(), 2.16e7);
  EXPECT_NEAR(j["totals"]["money"]["USD"].get<double>(), 21.5, 1e-9);
  EXPECT_NEAR(j["totals"]["money"]["EUR"].get<double>(), 16, 1e-9);
  EXPECT_NEAR(j["totals"]["money_lost"]["USD"].get<double>(), 8.6, 1e-9);
  EXPECT_DOUBLE_EQ(j["totals"]["unpriced_s"].get<double>(), 7200);

  const std::string text = render_text(*r);
  EXPECT_THAT(text, HasSubstr("3 GPUs on 3 nodes, 17.0 GPU-h observed (" + server.url() + ")"));
  EXPECT_THAT(text, HasSubstr("Fleet 2023-11-08 00:00 UTC to 2023-11-15 00:00 UTC: "));
  EXPECT_THAT(text, HasSubstr("useful 53 % (9.0 GPU-h), lost to findings 35 % (6.0 GPU-h), unexplained 12 %"));
  EXPECT_THAT(text,
              HasSubstr("energy 16.0 kWh (6.0 kWh lost); money 16.00 EUR + 21.50 USD (6.40 EUR + 8.60 USD lost)"));
}

TEST(FleetReport, TheQueriesAreInstantAtTheEndOverThePeriodAndTheOneBefore) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  auto r = report_of(server);
  ASSERT_TRUE(r) << r.error().message();
  int instant = 0, before = 0, range = 0;
  for (const auto& q : server.requests()) {
    EXPECT_EQ(q.method, "POST");
    const std::string& promql = q.form.at("query");
    if (q.path == "/api/v1/query") {
      ++instant;
      EXPECT_EQ(std::stod(q.form.at("time")), kEnd) << promql;
      if (promql.find("offset") != std::string::npos) {
        ++before;
        EXPECT_THAT(promql, HasSubstr("[604800s] offset 604800s"));
      }
    } else {
      ASSERT_EQ(q.path, "/api/v1/query_range");
      ++range;
      EXPECT_THAT(promql, HasSubstr("[21600s]"));
      EXPECT_EQ(std::stod(q.form.at("step")), 21600);
      EXPECT_EQ(std::stod(q.form.at("end")), kEnd);
      EXPECT_EQ(std::stod(q.form.at("start")), kEnd - 27 * 21600);
    }
  }
  EXPECT_GT(instant, 0);
  EXPECT_GT(before, 0);
  EXPECT_EQ(range, 3);  // useful, lost, unexplained
}

TEST(FleetReport, CausesAreSortedWithTheirMoneyEnergyAndThePeriodBefore) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  auto r = report_of(server);
  ASSERT_TRUE(r) << r.error().message();
  // sawtooth (5 GPU-h) before pulse (1 GPU-h), though the names sort the other way; plateau lost
  // time only in the period before: not a cause now.
  ASSERT_EQ(r->causes.size(), 2u);
  const Cause& saw = r->causes[0];
  EXPECT_EQ(saw.id, "sawtooth");
  EXPECT_DOUBLE_EQ(saw.gpu_s, 18000);
  EXPECT_DOUBLE_EQ(saw.energy_j, 1.8e7);
  EXPECT_DOUBLE_EQ(saw.previous_gpu_s, 9000);
  EXPECT_THAT(saw.money, ElementsAre(Pair("EUR", DoubleNear(6.4, 1e-9)), Pair("USD", DoubleNear(6.45, 1e-9))));
  const auto* entry = findings::find_entry("sawtooth");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(saw.title, entry->title);
  EXPECT_EQ(saw.next_step, entry->next_steps.front());
  const Cause& pulse = r->causes[1];
  EXPECT_EQ(pulse.id, "pulse");
  EXPECT_DOUBLE_EQ(pulse.gpu_s, 3600);
  EXPECT_DOUBLE_EQ(pulse.energy_j, 3.6e6);
  EXPECT_DOUBLE_EQ(pulse.previous_gpu_s, 0);
  EXPECT_THAT(pulse.money, MoneyIs("USD", 2.15));

  const nlohmann::json j = to_json(*r);
  ASSERT_EQ(j["causes"].size(), 2u);
  EXPECT_EQ(j["causes"][0]["id"], "sawtooth");
  EXPECT_EQ(j["causes"][0]["title"], std::string(entry->title));
  EXPECT_DOUBLE_EQ(j["causes"][0]["gpu_s"].get<double>(), 18000);
  EXPECT_DOUBLE_EQ(j["causes"][0]["gpu_hours"].get<double>(), 5);
  EXPECT_DOUBLE_EQ(j["causes"][0]["share"].get<double>(), 18000.0 / 61200);
  EXPECT_DOUBLE_EQ(j["causes"][0]["energy_j"].get<double>(), 1.8e7);
  EXPECT_DOUBLE_EQ(j["causes"][0]["previous_gpu_s"].get<double>(), 9000);
  EXPECT_NEAR(j["causes"][0]["money"]["USD"].get<double>(), 6.45, 1e-9);
  EXPECT_EQ(j["causes"][1]["id"], "pulse");

  const std::string text = render_text(*r);
  const auto saw_at = text.find("    sawtooth "), pulse_at = text.find("    pulse ");
  ASSERT_NE(saw_at, std::string::npos) << text;
  ASSERT_NE(pulse_at, std::string::npos) << text;
  EXPECT_LT(saw_at, pulse_at);
  // GPU-h, share of 17 GPU-h, kWh, money, against 2.5 GPU-h before.
  EXPECT_THAT(text, HasSubstr("    sawtooth                   5.00  29.4%       5.00 6.40 EUR + 6.45 USD  +100 %\n"));
  EXPECT_THAT(text, HasSubstr("    pulse                      1.00   5.9%       1.00       2.15 USD  -\n"));
  EXPECT_THAT(text, HasSubstr("      next: " + std::string(entry->next_steps.front())));

  auto top = report_of(server, "namespace", 1);
  ASSERT_TRUE(top) << top.error().message();
  ASSERT_EQ(top->causes.size(), 1u);
  EXPECT_EQ(top->causes[0].id, "sawtooth");
  EXPECT_EQ(top->worst_jobs.size(), 1u);
}

TEST(FleetReport, GroupsByEachLabelTheMostLostFirst) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  struct Case {
    std::string by;
    std::vector<std::string> keys;
  };
  for (const Case& c :
       {Case{"node", {"node-a:9400", "node-b:9400", "node-c:9400"}}, Case{"namespace", {"ml", kHostileNamespace, ""}},
        Case{"pod", {"ml/train-0", kHostileNamespace + "/p<1>", ""}}, Case{"job", {"", "job-7/7"}}}) {
    auto r = report_of(server, c.by);
    ASSERT_TRUE(r) << c.by << ": " << r.error().message();
    EXPECT_EQ(r->by, c.by);
    EXPECT_EQ(keys(r->groups), c.keys) << c.by;
    double observed = 0, lost = 0;
    for (const auto& g : r->groups) observed += g.observed_s, lost += g.lost_s;
    EXPECT_DOUBLE_EQ(observed, 61200) << c.by;  // every GPU in one group
    EXPECT_DOUBLE_EQ(lost, 21600) << c.by;
    // The worst jobs do not depend on --by: pods and Slurm jobs, those without neither left out.
    EXPECT_EQ(keys(r->worst_jobs), (std::vector<std::string>{"ml/train-0", kHostileNamespace + "/p<1>/job-7/7"}));
  }
  auto r = report_of(server, "namespace");
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->groups.size(), 3u);
  const Group& ml = r->groups[0];
  EXPECT_DOUBLE_EQ(ml.observed_s, 36000);
  EXPECT_DOUBLE_EQ(ml.useful_s, 18000);
  EXPECT_DOUBLE_EQ(ml.lost_s, 14400);
  EXPECT_THAT(ml.money_lost, MoneyIs("USD", 8.6));
  const Group& hostile = r->groups[1];
  EXPECT_DOUBLE_EQ(hostile.observed_s, 18000);
  EXPECT_DOUBLE_EQ(hostile.useful_s, 7200);
  EXPECT_DOUBLE_EQ(hostile.lost_s, 7200);
  EXPECT_THAT(hostile.money_lost, MoneyIs("EUR", 6.4));
  const Group& none = r->groups[2];
  EXPECT_DOUBLE_EQ(none.observed_s, 7200);
  EXPECT_DOUBLE_EQ(none.lost_s, 0);
  EXPECT_TRUE(none.money_lost.empty());
  auto job = report_of(server, "job");
  ASSERT_TRUE(job) << job.error().message();
  EXPECT_DOUBLE_EQ(job->groups[0].observed_s, 43200);  // node-a's and node-c's: no job label
  EXPECT_THAT(job->groups[0].money_lost, MoneyIs("USD", 8.6));

  const nlohmann::json j = to_json(*r);
  ASSERT_EQ(j["groups"].size(), 3u);
  EXPECT_EQ(j["groups"][0]["key"], "ml");
  EXPECT_DOUBLE_EQ(j["groups"][0]["observed_s"].get<double>(), 36000);
  EXPECT_DOUBLE_EQ(j["groups"][0]["useful_s"].get<double>(), 18000);
  EXPECT_DOUBLE_EQ(j["groups"][0]["lost_s"].get<double>(), 14400);
  EXPECT_NEAR(j["groups"][0]["money_lost"]["USD"].get<double>(), 8.6, 1e-9);
  EXPECT_EQ(j["worst_jobs"].size(), 2u);
  const std::string text = render_text(*r);
  EXPECT_THAT(text, HasSubstr("  by namespace\n"));
  EXPECT_THAT(text, HasSubstr("    ml                                    10.00     50%       4.00  8.60 USD\n"));
  EXPECT_THAT(text, HasSubstr("    (none)                                 2.00    100%       0.00  -\n"));
  EXPECT_THAT(text, HasSubstr("  worst jobs (most GPU time lost)\n"));
}

TEST(FleetReport, ABadByIsAUsageErrorAndAsksNothing) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  auto r = report_of(server, "cluster");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kUsage);
  EXPECT_THAT(r.error().message(), HasSubstr("--by cluster: expected node, namespace, pod or job"));
  EXPECT_TRUE(server.requests().empty());
}

TEST(FleetReport, ThePeriodBeforeResetsAVanishedNodeAndWarningsAreSaid) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  auto r = report_of(server);
  ASSERT_TRUE(r) << r.error().message();
  const Totals& p = r->previous;
  EXPECT_DOUBLE_EQ(p.observed_s, 30000);
  EXPECT_DOUBLE_EQ(p.useful_s, 12000);
  EXPECT_DOUBLE_EQ(p.unexplained_s, 6000);
  EXPECT_DOUBLE_EQ(p.lost_s, 12000);
  EXPECT_THAT(p.money, MoneyIs("USD", 30000.0 / 3600 * 2));
  EXPECT_THAT(p.money_lost, MoneyIs("USD", 12000.0 / 3600 * 2));
  EXPECT_DOUBLE_EQ(p.unpriced_s, 0);
  EXPECT_EQ(r->vanished, std::vector<std::string>{"node-c:9400"});
  EXPECT_DOUBLE_EQ(r->resets, 2);
  // Each warning once, though every answer carried it.
  EXPECT_EQ(r->warnings, (std::vector<std::string>{"remote store eu-1 did not answer",
                                                   "PromQL info: metric might not be a counter"}));
  auto has_note = [&](const std::string& s) {
    return std::any_of(r->notes.begin(), r->notes.end(), [&](const std::string& n) { return n.find(s) != n.npos; });
  };
  EXPECT_TRUE(has_note("1 node(s) stopped reporting inside the period")) << ::testing::PrintToString(r->notes);
  EXPECT_TRUE(has_note(": node-c:9400"));
  EXPECT_TRUE(has_note("counters restarted 2 time(s)"));
  EXPECT_TRUE(has_note("2.0 GPU-h ran on GPUs without a GPU-hour price"));
  EXPECT_TRUE(has_note("Prometheus warned that its answers may be partial"));
  EXPECT_FALSE(has_note("no data in the period before"));
  EXPECT_FALSE(has_note("is gpudoc serve"));

  const nlohmann::json j = to_json(*r);
  EXPECT_EQ(j["vanished_nodes"], nlohmann::json::array({"node-c:9400"}));
  EXPECT_EQ(j["counter_resets"], 2.0);
  EXPECT_EQ(j["warnings"].size(), 2u);
  EXPECT_EQ(j["notes"].size(), r->notes.size());
  EXPECT_DOUBLE_EQ(j["previous"]["observed_s"].get<double>(), 30000);
  EXPECT_DOUBLE_EQ(j["previous"]["useful_share"].get<double>(), 0.4);
  const std::string text = render_text(*r);
  // GPU-h 17 against 8.33, useful share 52.9 % against 40 %, lost 6 GPU-h against 3.33.
  EXPECT_THAT(text, HasSubstr("against the period before: GPU-h +104 %, useful share +12.9 points, lost GPU-h +80 %"));
  EXPECT_THAT(text, HasSubstr("  warning (Prometheus): remote store eu-1 did not answer\n"));
  EXPECT_THAT(text, HasSubstr("  note: counters restarted 2 time(s)"));
}

TEST(FleetReport, TheTimelineIsTheRangeQueriesStepByStep) {
  const FakePrometheus f = fleet_of_three();
  auto server = serving(f);
  auto r = report_of(server);
  ASSERT_TRUE(r) << r.error().message();
  const Timeline& t = r->timeline;
  EXPECT_DOUBLE_EQ(t.step_s, 21600);  // a week in 28 steps of 6 h
  ASSERT_EQ(t.end_s.size(), 28u);
  EXPECT_DOUBLE_EQ(t.end_s.back(), kEnd);
  EXPECT_DOUBLE_EQ(t.end_s.front(), kEnd - 27 * 21600);
  ASSERT_EQ(t.useful_s.size(), 28u);
  ASSERT_EQ(t.lost_s.size(), 28u);
  ASSERT_EQ(t.unexplained_s.size(), 28u);
  for (std::size_t i = 0; i < 28; ++i) {
    const double n = static_cast<double>(i + 1);
    EXPECT_DOUBLE_EQ(t.useful_s[i], i == 2 ? 0 : 100 * n) << i;  // a step without a point reads 0
    EXPECT_DOUBLE_EQ(t.lost_s[i], i == 4 ? 0 : 10 * n) << i;     // so does a NaN
    EXPECT_DOUBLE_EQ(t.unexplained_s[i], n) << i;                // two series summed
  }
  const nlohmann::json j = to_json(*r);
  EXPECT_EQ(j["timeline"]["step_s"], 21600.0);
  EXPECT_EQ(j["timeline"]["end_unix_s"].size(), 28u);
  EXPECT_EQ(j["timeline"]["useful_s"][27], 2800.0);
  EXPECT_EQ(j["timeline"]["lost_s"][4], 0.0);
  EXPECT_EQ(j["timeline"]["unexplained_s"][0], 1.0);

  // A short period: steps of whole minutes, at least one.
  auto prom = Prometheus::open(server.url());
  ASSERT_TRUE(prom) << prom.error().message();
  auto hour = build_report(*prom, {.end_s = kEnd, .since_s = 3600, .by = "node"});
  ASSERT_TRUE(hour) << hour.error().message();
  EXPECT_DOUBLE_EQ(hour->timeline.step_s, 120);
  EXPECT_EQ(hour->timeline.end_s.size(), 30u);
  auto minute = build_report(*prom, {.end_s = kEnd, .since_s = 30, .by = "node"});
  ASSERT_TRUE(minute) << minute.error().message();
  EXPECT_DOUBLE_EQ(minute->timeline.step_s, 60);
  EXPECT_EQ(minute->timeline.end_s, std::vector<double>{kEnd});
}

TEST(FleetReport, NoGpudocSeriesAtAllIsSaid) {
  const FakePrometheus empty;
  auto server = serving(empty);
  auto r = report_of(server);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->gpus, 0u);
  EXPECT_TRUE(r->nodes.empty());
  EXPECT_TRUE(r->vanished.empty());
  EXPECT_TRUE(r->causes.empty());
  EXPECT_TRUE(r->groups.empty());
  EXPECT_TRUE(r->worst_jobs.empty());
  EXPECT_TRUE(r->warnings.empty());
  EXPECT_DOUBLE_EQ(r->now.observed_s, 0);
  EXPECT_TRUE(r->now.money.empty());
  EXPECT_EQ(r->timeline.useful_s, std::vector<double>(28, 0.0));
  EXPECT_EQ(r->notes, (std::vector<std::string>{
                          "no gpudoc_gpu_observed_seconds_total in the period: is gpudoc serve (with its fleet "
                          "counters) scraped by this Prometheus?",
                          "no data in the period before: no change against it"}));
  const nlohmann::json j = to_json(*r);
  EXPECT_EQ(j["totals"]["useful_share"], 0.0);  // not NaN (null) on no time at all
  EXPECT_EQ(j["totals"]["money"], nlohmann::json::object());
  const std::string text = render_text(*r);
  EXPECT_THAT(text, HasSubstr("0 GPUs on 0 nodes, 0.0 GPU-h observed"));
  EXPECT_THAT(text, HasSubstr("money - (- lost)"));
  EXPECT_THAT(text, HasSubstr("note: no gpudoc_gpu_observed_seconds_total in the period"));
  EXPECT_EQ(text.find("nan"), std::string::npos) << text;
  EXPECT_EQ(text.find("against the period before"), std::string::npos) << text;
}

TEST(FleetReport, PrometheusRefusingOrAbsentIsTheQueriesError) {
  testing::FakeHttp refusing([](const testing::HttpRequest&) {
    return testing::HttpReply{.status = 422,
                              .content_type = "application/json",
                              .body = R"({"status":"error","errorType":"execution","error":"query timed out"})",
                              .hang = false};
  });
  auto r = report_of(refusing);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind(), core::ErrorKind::kBadInput);
  EXPECT_THAT(r.error().message(), HasSubstr("execution: query timed out"));
  EXPECT_EQ(refusing.requests().size(), 1u);  // the first error stops it

  testing::FakeHttp html([](const testing::HttpRequest&) {
    return testing::HttpReply{.status = 200, .content_type = "text/html", .body = "<html></html>", .hang = false};
  });
  auto h = report_of(html);
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(h.error().message(), HasSubstr("Prometheus at " + html.url()));

  std::string gone_url;
  {
    testing::FakeHttp gone([](const testing::HttpRequest&) { return testing::HttpReply{}; });
    gone_url = gone.url();
  }  // stopped and closed: nothing listens there now
  auto prom = Prometheus::open(gone_url);
  ASSERT_TRUE(prom) << prom.error().message();
  auto g = build_report(*prom, {.end_s = kEnd, .since_s = kWeek, .by = "namespace"});
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().kind(), core::ErrorKind::kEnvironment);
  EXPECT_THAT(g.error().message(), HasSubstr("Prometheus at " + gone_url));
}

TEST(FleetReport, NamesFromPrometheusAreDataNotMarkup) {
  FakePrometheus f;
  const std::string node = "node\"\n\x1b]0;owned\x07:9400";
  const std::string id = "evil \"id\"\n{}";
  const std::string kHostileCurrency = "U\x1b[7mSD\n";
  f.gpus.push_back(
      {.labels = {{"instance", node}, {"uuid", "GPU-\"q\""}, {"namespace", kHostileNamespace}},
       .now =
           {.observed = 3600, .useful = 1800, .unexplained = 0, .energy = 0, .lost = {{id, 1800}}, .lost_energy = {}},
       .before = {},
       .currency = kHostileCurrency,
       .gpu_hour = 1,
       .kwh = 0,
       .pue = 0});
  f.live = {};
  f.warnings = {"warned\n\x1b[2Jcleared"};
  auto server = serving(f);
  auto r = report_of(server, "node");
  ASSERT_TRUE(r) << r.error().message();
  ASSERT_EQ(r->causes.size(), 1u);
  EXPECT_EQ(r->causes[0].id, id);
  EXPECT_TRUE(r->causes[0].title.empty());  // not in the catalog: no title, no next step
  ASSERT_EQ(r->groups.size(), 1u);

  // JSON: every name byte for byte, through a dump and a parse.
  const nlohmann::json j = nlohmann::json::parse(to_json(*r).dump());
  EXPECT_EQ(j["nodes"][0], node);
  EXPECT_EQ(j["vanished_nodes"][0], node);
  EXPECT_EQ(j["causes"][0]["id"], id);
  EXPECT_EQ(j["groups"][0]["key"], node);
  EXPECT_EQ(j["warnings"][0], "warned\n\x1b[2Jcleared");
  EXPECT_NEAR(j["totals"]["money"][kHostileCurrency].get<double>(), 1, 1e-9);

  // Text: no control character reaches the terminal, no name starts a line of its own.
  const std::string text = render_text(*r);
  EXPECT_EQ(std::count_if(text.begin(), text.end(),
                          [](char c) { return c != '\n' && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f); }),
            0)
      << text;
  EXPECT_THAT(text, HasSubstr(R"(evil "id"\x0a{})"));
  EXPECT_THAT(text, HasSubstr(R"(node"\x0a\x1b]0;owned\x07:9400)"));
  EXPECT_THAT(text, HasSubstr(R"(warning (Prometheus): warned\x0a\x1b[2Jcleared)"));
  EXPECT_EQ(text.find("\n{}"), std::string::npos) << text;
  EXPECT_EQ(text.find("\ncleared"), std::string::npos) << text;
  EXPECT_THAT(text, HasSubstr(R"(money 1.00 U\x1b[7mSD\x0a)"));
}

}  // namespace
}  // namespace gpudoc::fleet

// gpudoc::cost prices — what a GPU-hour and a kWh cost, given explicitly by the user: there is no
// default price anywhere in gpudoc. Without one, a run's cost is its GPU time and energy, and the
// report says that money needs a price (docs/cost.md).
//
// Where prices come from, each field on its own, the first that gives it winning:
//   1. flags: --price-gpu-hour, --price-kwh, --pue, --co2-per-kwh, --currency (every GPU);
//   2. environment: GPUDOC_PRICE_GPU_HOUR, GPUDOC_PRICE_KWH, GPUDOC_PUE, GPUDOC_CO2_PER_KWH,
//      GPUDOC_CURRENCY (every GPU);
//   3. one prices file (JSON), the first of: --prices FILE, $GPUDOC_PRICES, $XDG_CONFIG_HOME/gpudoc/
//      prices.json (else ~/.config/gpudoc/prices.json), /etc/gpudoc/prices.json. The first two must
//      exist; the others are read when they do. In the file, "prices" is a list of entries, each
//      for a GPU model ("gpu": NVML's name, e.g. "NVIDIA H200"), a node ("node": its host name),
//      both, or neither (every GPU); a GPU takes each field from the first entry that matches it.
//
//   auto book = cost::load_prices({.gpu_hour = "3.72", .currency = "USD"});   // Result<PriceBook>
//   cost::GpuPrices p = book->for_gpu("node7", "NVIDIA H200");
//   p.gpu_hour;   // 3.72, p.source[kGpuHour] == "--price-gpu-hour"
//
// A value that is not a finite number in its range, a currency that is not three capital letters,
// an unknown key in the file, or a price without a currency is exit 2 naming the value and where
// it came from.
#pragma once

#include <array>
#include <cstddef>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.hpp"

namespace gpudoc::cost {

enum PriceField : std::size_t { kGpuHour = 0, kKwh = 1, kPue = 2, kCo2 = 3 };
inline constexpr std::size_t kPriceFields = 4;

struct PriceValues {
  std::array<std::optional<double>, kPriceFields> value{};
  std::array<std::string, kPriceFields> source{};  // "--price-kwh", "GPUDOC_PUE", "/etc/gpudoc/prices.json prices[1]"
};

// One entry of the file's "prices" list.
struct PriceEntry {
  std::optional<std::string> gpu{};   // NVML's name; matched ignoring case
  std::optional<std::string> node{};  // a host name; matched ignoring case
  PriceValues values{};
};

// The prices in effect for one GPU. gpu_hour: money per GPU-hour (a cloud rate, or a purchase
// amortised over its hours); kwh: money per kWh at the meter; pue: the facility's energy over the
// IT energy (>= 1); co2_g_per_kwh: grams of CO2 per kWh at the meter.
struct GpuPrices {
  std::optional<double> gpu_hour{};
  std::optional<double> kwh{};
  std::optional<double> pue{};
  std::optional<double> co2_g_per_kwh{};
  std::array<std::string, kPriceFields> source{};
  [[nodiscard]] bool any_money() const { return gpu_hour.has_value() || kwh.has_value(); }
};

struct PriceBook {
  std::optional<std::string> currency{};  // ISO 4217 code: "USD", "EUR"
  std::string currency_source{};
  std::string file{};                 // the prices file read; empty: none
  std::vector<PriceEntry> entries{};  // the file's, in order
  PriceValues overrides{};            // flags over environment: every GPU
  [[nodiscard]] GpuPrices for_gpu(std::string_view host, std::string_view gpu_name) const;
  [[nodiscard]] bool empty() const;  // no price of any kind anywhere
};

// What the command line gave: text, checked here (so a bad value names its flag).
struct PriceFlags {
  std::string file{};  // --prices
  std::string gpu_hour{};
  std::string kwh{};
  std::string pue{};
  std::string co2{};
  std::string currency{};
};

// The environment and file system load_prices reads (tests replace them).
struct PriceSources {
  std::function<const char*(const char*)> getenv = [](const char* name) -> const char* { return std::getenv(name); };
  std::string system_file = "/etc/gpudoc/prices.json";
};

// Errors: kUsage for a bad flag or environment value (naming it and the value); kBadInput for a
// prices file that is not as documented (naming the file, the key and the value); kUsage for
// --prices / $GPUDOC_PRICES naming a file that does not exist; kIo when it cannot be read.
[[nodiscard]] core::Result<PriceBook> load_prices(const PriceFlags& flags, const PriceSources& sources = {});

// parse_prices_file's text form. `name` is used in messages. Errors: kBadInput.
[[nodiscard]] core::Result<PriceBook> parse_prices_file(std::string_view text, const std::string& name);

// {"currency", "file", "gpu_hour", "kwh", "pue", "co2_g_per_kwh", "sources": {...}} for one GPU.
[[nodiscard]] nlohmann::json to_json(const GpuPrices& p, const PriceBook& book);

[[nodiscard]] const char* field_name(PriceField f);  // "gpu_hour", "kwh", "pue", "co2_g_per_kwh"

}  // namespace gpudoc::cost

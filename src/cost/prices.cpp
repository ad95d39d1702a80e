#include "cost/prices.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <utility>

#include <fmt/format.h>

#include "core/file.hpp"
#include "core/number_input.hpp"

namespace gpudoc::cost {
namespace {

struct FieldSpec {
  const char* key;   // in the file and in JSON
  const char* flag;  // on the command line
  const char* env;   // in the environment
  core::NumberRange range;
};

// Bounds that only catch a slip (a price in cents given as units of another currency is still in
// range: the currency is the user's): a GPU-hour in any currency, a kWh, a PUE, a grid's intensity.
const std::array<FieldSpec, kPriceFields>& specs() {
  static const std::array<FieldSpec, kPriceFields> s{{
      {"gpu_hour", "--price-gpu-hour", "GPUDOC_PRICE_GPU_HOUR", {.min = 0, .max = 1e9, .unit = "money per GPU-hour"}},
      {"kwh", "--price-kwh", "GPUDOC_PRICE_KWH", {.min = 0, .max = 1e7, .unit = "money per kWh"}},
      {"pue",
       "--pue",
       "GPUDOC_PUE",
       {.min = 1, .max = 5, .unit = "facility energy over IT energy", .note = "a PUE is never below 1"}},
      {"co2_g_per_kwh", "--co2-per-kwh", "GPUDOC_CO2_PER_KWH", {.min = 0, .max = 3000, .unit = "grams of CO2 per kWh"}},
  }};
  return s;
}

constexpr core::InputLimits kPricesFile{.max_bytes = 4 << 20, .what = "a prices file"};

bool is_currency(std::string_view c) {
  return c.size() == 3 && std::all_of(c.begin(), c.end(), [](char x) { return x >= 'A' && x <= 'Z'; });
}

core::Status check_currency(std::string_view code, std::string_view where) {
  if (is_currency(code)) return core::ok_status();
  return core::Error(
      core::ErrorKind::kUsage,
      fmt::format("{} {}: expected a currency code of three capital letters (ISO 4217: USD, EUR, JPY)", where, code));
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

core::Error bad_file(const std::string& name, const std::string& what) {
  return core::Error(core::ErrorKind::kBadInput, fmt::format("prices file {}: {}", name, what));
}

core::Result<PriceEntry> parse_entry(const nlohmann::json& e, const std::string& name, std::size_t i) {
  const std::string at = fmt::format("prices[{}]", i);
  if (!e.is_object()) return bad_file(name, fmt::format("{} is not an object", at));
  PriceEntry out;
  for (const auto& [key, v] : e.items()) {
    if (key == "gpu" || key == "node" || key == "note") {
      if (!v.is_string()) return bad_file(name, fmt::format("{}.{}: expected a string, got {}", at, key, v.dump()));
      if (key == "gpu") out.gpu = v.get<std::string>();
      if (key == "node") out.node = v.get<std::string>();
      continue;
    }
    const auto& s = specs();
    auto it = std::find_if(s.begin(), s.end(), [&](const FieldSpec& f) { return key == f.key; });
    if (it == s.end())
      return bad_file(name, fmt::format("{}: unknown key \"{}\" (known: gpu, node, gpu_hour, kwh, pue, "
                                        "co2_g_per_kwh, note)",
                                        at, key));
    const double x = v.is_number() ? v.get<double>() : 0;
    if (!v.is_number() || x < it->range.min || x > it->range.max)
      return bad_file(name, fmt::format("{}.{}: {}: expected {}{}", at, key, v.dump(), core::describe(it->range),
                                        it->range.note.empty() ? "" : fmt::format(" ({})", it->range.note)));
    const auto f = static_cast<std::size_t>(it - s.begin());
    out.values.value[f] = x;
    out.values.source[f] = fmt::format("{} {}", name, at);
  }
  return out;
}

// The one file read: --prices, $GPUDOC_PRICES, the user's, the system's. Empty: none.
core::Result<std::string> prices_file(const PriceFlags& flags, const PriceSources& src) {
  namespace fs = std::filesystem;
  auto env = [&](const char* n) -> std::string {
    const char* v = src.getenv(n);
    return v != nullptr ? std::string(v) : std::string();
  };
  std::error_code ec;
  for (const auto& [path, what] : {std::pair{flags.file, "--prices"}, std::pair{env("GPUDOC_PRICES"), "GPUDOC_PRICES"}})
    if (!path.empty()) {
      if (!fs::exists(path, ec))
        return core::Error(core::ErrorKind::kUsage, fmt::format("{} {}: no such file", what, path));
      return path;
    }
  std::string user;
  if (const std::string x = env("XDG_CONFIG_HOME"); !x.empty() && x.front() == '/')
    user = x + "/gpudoc/prices.json";
  else if (const std::string h = env("HOME"); !h.empty())
    user = h + "/.config/gpudoc/prices.json";
  for (const std::string& p : {user, src.system_file})
    if (!p.empty() && fs::exists(p, ec)) return p;
  return std::string();
}

core::Status apply_override(PriceValues& v, std::size_t f, const std::string& text, const std::string& where) {
  if (text.empty() || v.value[f]) return core::ok_status();
  auto x = core::parse_number(where, text, specs()[f].range);
  if (!x) return x.error();
  v.value[f] = *x;
  v.source[f] = where;
  return core::ok_status();
}

// A money price with no currency anywhere: refused (the number alone does not say what it is).
core::Status check_has_currency(const PriceBook& book) {
  if (book.currency) return core::ok_status();
  std::string where;
  for (std::size_t f : {kGpuHour, kKwh}) {
    if (book.overrides.value[f]) where = book.overrides.source[f];
    for (const auto& e : book.entries)
      if (where.empty() && e.values.value[f]) where = e.values.source[f];
    if (!where.empty()) break;
  }
  if (where.empty()) return core::ok_status();
  return core::Error(core::ErrorKind::kUsage,
                     fmt::format("a price is given ({}) but no currency: give --currency CODE, GPUDOC_CURRENCY or "
                                 "\"currency\" in the prices file (docs/cost.md)",
                                 where));
}

}  // namespace

const char* field_name(PriceField f) { return specs()[f].key; }

core::Result<PriceBook> parse_prices_file(std::string_view text, const std::string& name) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return bad_file(name, "not valid JSON");
  if (!j.is_object()) return bad_file(name, "expected an object {\"currency\": ..., \"prices\": [...]}");
  PriceBook book;
  book.file = name;
  for (const auto& [key, v] : j.items()) {
    if (key == "currency") {
      if (!v.is_string() || !is_currency(v.get<std::string>()))
        return bad_file(name, fmt::format("currency: {}: expected a code of three capital letters (ISO 4217: USD, "
                                          "EUR, JPY)",
                                          v.dump()));
      book.currency = v.get<std::string>();
      book.currency_source = name;
    } else if (key == "prices") {
      if (!v.is_array()) return bad_file(name, "prices: expected a list of entries");
      for (std::size_t i = 0; i < v.size(); ++i) {
        auto e = parse_entry(v[i], name, i);
        if (!e) return e.error();
        book.entries.push_back(std::move(*e));
      }
    } else if (key != "note") {
      return bad_file(name, fmt::format("unknown key \"{}\" (known: currency, prices, note)", key));
    }
  }
  return book;
}

core::Result<PriceBook> load_prices(const PriceFlags& flags, const PriceSources& src) {
  PriceBook book;
  auto file = prices_file(flags, src);
  if (!file) return file.error();
  if (!file->empty()) {
    auto text = core::read_file(*file, kPricesFile);
    if (!text) return text.error();
    auto parsed = parse_prices_file(*text, *file);
    if (!parsed) return parsed.error();
    book = std::move(*parsed);
  }
  const std::array<const std::string*, kPriceFields> given{&flags.gpu_hour, &flags.kwh, &flags.pue, &flags.co2};
  for (std::size_t f = 0; f < kPriceFields; ++f) {
    if (auto s = apply_override(book.overrides, f, *given[f], specs()[f].flag); !s) return s.error();
    const char* e = src.getenv(specs()[f].env);
    if (auto s =
            apply_override(book.overrides, f, e != nullptr ? e : "", fmt::format("{} (environment)", specs()[f].env));
        !s)
      return s.error();
  }
  const char* env_currency = src.getenv("GPUDOC_CURRENCY");
  for (const auto& [code, where] : {std::pair<std::string, std::string>{flags.currency, "--currency"},
                                    {env_currency != nullptr ? env_currency : "", "GPUDOC_CURRENCY (environment)"}}) {
    if (code.empty()) continue;
    if (auto s = check_currency(code, where); !s) return s.error();
    book.currency = code;
    book.currency_source = where;
    break;
  }
  if (auto s = check_has_currency(book); !s) return s.error();
  return book;
}

GpuPrices PriceBook::for_gpu(std::string_view host, std::string_view gpu_name) const {
  std::array<std::optional<double>, kPriceFields> v{};
  GpuPrices out;
  for (std::size_t f = 0; f < kPriceFields; ++f) {
    if (overrides.value[f]) {
      v[f] = overrides.value[f];
      out.source[f] = overrides.source[f];
      continue;
    }
    for (const auto& e : entries) {
      if (!e.values.value[f]) continue;
      if (e.gpu && !same_name(*e.gpu, gpu_name)) continue;
      if (e.node && !same_name(*e.node, host)) continue;
      v[f] = e.values.value[f];
      out.source[f] = e.values.source[f];
      break;
    }
  }
  out.gpu_hour = v[kGpuHour];
  out.kwh = v[kKwh];
  out.pue = v[kPue];
  out.co2_g_per_kwh = v[kCo2];
  return out;
}

bool PriceBook::empty() const {
  for (std::size_t f = 0; f < kPriceFields; ++f) {
    if (overrides.value[f]) return false;
    for (const auto& e : entries)
      if (e.values.value[f]) return false;
  }
  return true;
}

nlohmann::json to_json(const GpuPrices& p, const PriceBook& book) {
  auto opt = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(nullptr); };
  nlohmann::json sources = nlohmann::json::object();
  for (std::size_t f = 0; f < kPriceFields; ++f)
    if (!p.source[f].empty()) sources[specs()[f].key] = p.source[f];
  if (book.currency) sources["currency"] = book.currency_source;
  return {{"currency", book.currency ? nlohmann::json(*book.currency) : nlohmann::json(nullptr)},
          {"gpu_hour", opt(p.gpu_hour)},
          {"kwh", opt(p.kwh)},
          {"pue", opt(p.pue)},
          {"co2_g_per_kwh", opt(p.co2_g_per_kwh)},
          {"sources", sources}};
}

}  // namespace gpudoc::cost

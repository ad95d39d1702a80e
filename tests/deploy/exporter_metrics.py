"""The metric names `gpudoc serve` exposes, for the deploy/ tests. Standard library only.

Per-GPU gauges are `gpudoc_` + each name of src/gpu/metrics.hpp's catalog (GPUDOC_METRICS), read
from that file so that a metric added there is allowed here at once; the rest are the series the
exporter adds besides (findings, health, XID, its own state) and Prometheus's own `up`.
"""
import pathlib
import re

# Series beyond the catalog (src/serve/exposition.cpp; a test checks this list against a real
# scrape): clock-event reasons, per-process series, findings, health, baselines, XIDs, and the
# sampler's and server's own state.
EXTRA = {
    # the catalog's one cumulative metric, a counter: Prometheus's _total suffix on its name (it shows
    # once the energy group's first sample is in, which a scrape right after start may precede)
    "gpudoc_energy_joules_total",
    # the error counters of the catalog's errors group, counters too
    "gpudoc_ecc_corrected_volatile_errors_total",
    "gpudoc_ecc_uncorrected_volatile_errors_total",
    "gpudoc_ecc_corrected_aggregate_errors_total",
    "gpudoc_ecc_uncorrected_aggregate_errors_total",
    "gpudoc_correctable_remapped_rows_total",
    "gpudoc_uncorrectable_remapped_rows_total",
    "gpudoc_pcie_replay_errors_total",
    "gpudoc_nvlink_crc_flit_errors_total",
    "gpudoc_nvlink_crc_data_errors_total",
    "gpudoc_nvlink_replay_errors_total",
    "gpudoc_nvlink_recovery_errors_total",
    "gpudoc_gpu_xid_errors_total",
    "gpudoc_gpu_info",
    "gpudoc_gpu_job_info",
    "gpudoc_gpu_allocation_info",
    "gpudoc_clock_event_reason",
    "gpudoc_process_sm_utilization_percent",
    "gpudoc_process_memory_utilization_percent",
    "gpudoc_process_memory_used_bytes",
    "gpudoc_finding",
    "gpudoc_finding_severity",
    "gpudoc_finding_gpu_time_lost_seconds",
    # the fleet counters: GPU time and energy observed, useful, lost by cause, unexplained
    # (src/serve/accounting.hpp), and the prices in effect for each GPU
    "gpudoc_gpu_observed_seconds_total",
    "gpudoc_gpu_useful_seconds_total",
    "gpudoc_gpu_lost_seconds_total",
    "gpudoc_gpu_unexplained_seconds_total",
    "gpudoc_gpu_energy_joules_total",
    "gpudoc_gpu_useful_energy_joules_total",
    "gpudoc_gpu_lost_energy_joules_total",
    "gpudoc_gpu_unexplained_energy_joules_total",
    "gpudoc_price_gpu_hour",
    "gpudoc_price_kwh",
    "gpudoc_price_pue",
    "gpudoc_price_co2_grams_per_kwh",
    "gpudoc_health_check",
    "gpudoc_health_last_run_timestamp_seconds",
    "gpudoc_baseline_verdict",
    "gpudoc_baseline_last_run_timestamp_seconds",
    "gpudoc_xid_errors_total",
    "gpudoc_sampler_up",
    "gpudoc_sampler_period_seconds",
    "gpudoc_sampler_reads_total",
    "gpudoc_sampler_samples_total",
    "gpudoc_sampler_errors_total",
    "gpudoc_sampler_gpu_lost",
    "gpudoc_sampler_gpu_unresponsive",
    "gpudoc_sampler_dropped_records_total",
    "gpudoc_scrapes_total",
    "gpudoc_scrape_render_seconds",
    "gpudoc_diagnosis_seconds",
    "gpudoc_build_info",
}
PROMETHEUS = {"up"}  # set by Prometheus for every target it scrapes
# The exporter's own process, under the names every Prometheus client library gives them
# (src/serve/process_metrics.hpp).
STANDARD = {
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
    "process_start_time_seconds",
    "process_open_fds",
    "process_max_fds",
}

# The labels of every per-GPU series.
GPU_LABELS = ("gpu", "uuid", "name", "pci_bus_id")


def catalog_names(source_dir):
    """The metric names of GPUDOC_METRICS in src/gpu/metrics.hpp ("power_watts", ...)."""
    text = (pathlib.Path(source_dir) / "src/gpu/metrics.hpp").read_text(encoding="utf-8")
    start = text.index("#define GPUDOC_METRICS(X)")
    end = text.index("enum class Metric", start)
    names = re.findall(r'X\(k\w+,\s*"([a-z0-9_]+)"', text[start:end])
    if len(names) < 10:
        raise AssertionError(f"read only {len(names)} metric names from src/gpu/metrics.hpp: has its format changed?")
    return names


def exposed(source_dir):
    """Every metric name a query on gpudoc's series may use."""
    return {"gpudoc_" + n for n in catalog_names(source_dir)} | EXTRA | PROMETHEUS | STANDARD


# PromQL words that look like names but are not metrics.
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
    "quantile", "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "bool", "offset", "rate", "irate", "increase", "delta", "idelta", "deriv", "changes", "resets",
    "abs", "ceil", "floor", "round", "clamp", "clamp_min", "clamp_max", "label_replace", "label_join",
    "max_over_time", "min_over_time", "avg_over_time", "sum_over_time", "count_over_time",
    "last_over_time", "present_over_time", "quantile_over_time", "absent", "absent_over_time",
    "vector", "scalar", "time", "timestamp", "sort", "sort_desc", "histogram_quantile", "inf", "nan",
    "label_values", "query_result",  # Grafana template functions
}


def metric_names_in(expr):
    """The metric names a PromQL expression reads (approximate but strict: label matchers, strings,
    durations and Grafana's $variables are removed first; every other bare word must be a function,
    keyword or metric)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)        # strings
    e = re.sub(r"'(?:[^'\\]|\\.)*'", "''", e)
    e = re.sub(r"\{[^}]*\}", "", e)                      # label matchers
    e = re.sub(r"\$\{?\w+(?::\w+)?\}?", "", e)           # $gpu, ${__rate_interval}, ${var:regex}
    e = re.sub(r"\[[^\]]*\]", "", e)                     # range selectors
    e = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)  # label lists
    e = re.sub(r"\b\d+(?:\.\d+)?(?:e[+-]?\d+)?(?:ms|s|m|h|d|w|y)?\b", "", e)  # numbers, durations
    words = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e))
    return {w for w in words if w.lower() not in PROMQL_WORDS}

"""Parses a /metrics body read from stdin with the Prometheus Python client's parsers, the
reference ones: `openmetrics` (strict OpenMetrics 1.0: # EOF, _total, UNIT as a name suffix) or
`prometheus` (the text format 0.0.4). Prints each family as NAME TYPE UNIT SAMPLES; exits 1 with the
parser's complaint. Run by tests/unit/serve/openmetrics_test.cpp.

    python3 openmetrics_check.py openmetrics|prometheus < body
"""

import sys


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("openmetrics", "prometheus"):
        print(__doc__, file=sys.stderr)
        return 2
    if sys.argv[1] == "openmetrics":
        from prometheus_client.openmetrics.parser import text_string_to_metric_families
    else:
        from prometheus_client.parser import text_string_to_metric_families
    text = sys.stdin.read()
    try:
        for family in text_string_to_metric_families(text):
            print(family.name, family.type, family.unit or "-", len(family.samples))
    except Exception as e:  # the parsers raise ValueError and others: any is a complaint
        print(f"{type(e).__name__}: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A rate() range spans at least two scrapes of the series it reads.

``rate``, ``irate``, ``increase``, ``delta``, ``idelta``, ``deriv``, ``predict_linear`` and
``double_exponential_smoothing`` need two samples inside their range; with fewer the series drops out of the result
(https://prometheus.io/docs/prometheus/latest/querying/functions/#rate; Prometheus's promql/functions.go returns
nothing for a series with fewer than two points). Cloudflare's pint reports a bug where a rate()'s range "is less
than 2x scrape_interval" (https://cloudflare.github.io/pint/checks/promql/rate.html);
https://www.robustperception.io/what-range-should-i-use-with-rate/ advises four. A range shorter than two scrape
intervals holds two samples at some evaluations at best, and below one interval never: the query returns nothing,
so KEDA reads 0 (or fails the poll) and never scales, an alert never fires, a panel stays empty. Nothing fails at
``pulumi up``.

The queries read are ``metrics.queries``'s (KEDA's Prometheus triggers, the rules the Prometheus loads, our processes'
own queries, the dashboards). A range applies to the selector it follows; the series that selector reads are
``metrics.writers``'s, each scraped at its job's ``scrape_interval`` (``additionalScrapeConfigs``) or its
PodMonitor/ServiceMonitor endpoint's ``interval``, else the Prometheus's ``prometheusSpec.scrapeInterval``, which
kube-prometheus-stack leaves empty so that the Operator's default applies: 30s ("Interval between consecutive
scrapes. Default: "30s"", https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.PrometheusSpec;
the chart's values.yaml: "Interval between consecutive scrapes. Defaults to 30s."). A range is judged against the
shortest interval among its series, so that it is flagged only where no series it reads ever has two samples in it
reliably. Subquery resolutions (``[5m:10s]``), Grafana's ``$__rate_interval`` and other templated ranges, functions
that need one sample (``*_over_time``) and selectors whose writers are unknown are not judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.metrics import Query, queries, writers
from tokenplane.proof.deployability.promql import PromQLError, selectors, tokens
from tokenplane.proof.deployability.scrape import (
    DEFAULT_SCRAPE_INTERVAL,
    PROMETHEUS_CHART,
    Exported,
    exported,
    known,
    seconds,
)

RULE = "range-spans-scrapes"
# Functions whose result needs two samples of a series inside the range (Prometheus's functions.go: each returns
# nothing for a series with fewer).
TWO_SAMPLES = frozenset(
    {"rate", "irate", "increase", "delta", "idelta", "deriv", "predict_linear", "double_exponential_smoothing"}
)
SAMPLES_NEEDED = 2


def check(graph: Graph) -> Iterator[Finding]:
    everything = known(graph)
    for region in graph.regions():
        default = _global_interval(graph, region)
        if default is None:
            continue  # no Prometheus (metrics-exported says so), or an interval not known offline
        read = list(queries(graph, region))
        stored = exported(graph, region) if read else Exported()
        for query in read:
            yield from _check_query(query, stored, everything, default)


def _global_interval(graph: Graph, region: str) -> tuple[str, float] | None:
    """The shortest global scrape interval of the region's Prometheus releases, as written and in seconds."""
    found: list[tuple[str, float]] = []
    for release in graph.releases(region, PROMETHEUS_CHART):
        text = lookup(release.inputs.get("values") or {}, "prometheus.prometheusSpec.scrapeInterval")
        text = text or DEFAULT_SCRAPE_INTERVAL
        value = seconds(text)
        if value is None:
            return None
        found.append((str(text), value))
    return min(found, key=lambda f: f[1]) if found else None


def _check_query(
    query: Query, stored: Exported, everything: dict[str, str], default: tuple[str, float]
) -> Iterator[Finding]:
    try:
        read = tokens(query.expr)
    except PromQLError:
        return  # metrics-exported reports a query that cannot be read
    said: set[str] = set()  # the windows already reported: one finding per too-short range of a query
    for i, token in enumerate(read):
        if token.kind != "range" or i == 0 or (read[i - 1].kind != "name" and read[i - 1].text != "}"):
            continue
        window = token.text[1:-1].strip()
        span = seconds(window)
        function = _enclosing_function([(t.kind, t.text) for t in read[:i]])
        if span is None or function not in TWO_SAMPLES:
            continue  # a subquery, a templated range, or a function that needs one sample
        try:
            selector = selectors(query.expr[: token.at])[-1]
        except (PromQLError, IndexError):
            continue
        if selector.name is None:
            continue
        series = writers(selector, stored, everything)
        intervals = [(s.interval, seconds(s.interval), s.job) for s in series if s.interval]
        intervals += [(default[0], default[1], s.job) for s in series if not s.interval]
        known_intervals = [(t, v, j) for t, v, j in intervals if v is not None]
        if not series or len(known_intervals) < len(intervals):
            continue  # nothing stores it (metrics-exported says so), or an interval not known offline
        text, interval, job = min(known_intervals, key=lambda k: k[1])
        if span >= SAMPLES_NEEDED * interval or window in said:
            continue
        said.add(window)
        need = _duration(SAMPLES_NEEDED * interval)
        yield Finding(
            RULE,
            query.urn,
            f"{query.where} reads {function}({selector}[{window}]): Prometheus scrapes it every {text} (job {job}), "
            f"so a {window} range never reliably holds the two samples {function}() needs; it returns no data, so "
            f"{query.effect}",
            f"make the range at least {need} (two scrape intervals; four, {_duration(4 * interval)}, is safer), or "
            "scrape the series more often",
        )


def _enclosing_function(before: list[tuple[str, str]]) -> str | None:
    """The name of the call whose parentheses are open at the end of ``before`` (kind, text tokens), or None."""
    depth = 0
    for j in range(len(before) - 1, -1, -1):
        text = before[j][1]
        if text == ")":
            depth += 1
        elif text == "(":
            if depth == 0:
                return before[j - 1][1] if j > 0 and before[j - 1][0] == "name" else None
            depth -= 1
    return None


def _duration(value: float) -> str:
    whole = int(value)
    if whole >= 60 and whole % 60 == 0:
        return f"{whole // 60}m"
    return f"{whole}s" if whole == value else f"{int(value * 1000)}ms"

"""Every metric queried is exported: each series a query reads is stored by the region's Prometheus.

A query over a name nothing exports, or with a matcher on a label no stored series carries (or carries
with another value), returns no data. Nothing fails: KEDA holds a pool at its floor, an alert never
fires, a dashboard panel stays empty. The queries read are KEDA's Prometheus triggers (ScaledObject,
ScaledJob), alert rules (PrometheusRule objects and kube-prometheus-stack's
``additionalPrometheusRulesMap``), Grafana dashboards (ConfigMaps the sidecar loads: panel targets
and variable queries on a Prometheus datasource) and the queries our processes send themselves
(``tokenplane.contract.CODE_QUERIES``, for a pod given ``TOKENPLANE_PROMETHEUS_URL``). What Prometheus stores is ``scrape.exported``: the
exporters' real families, on the pods the scrape jobs keep, with the labels their relabelling leaves.

A PodMonitor or ServiceMonitor that gives Prometheus no target is a finding whether or not a query reads its
series yet (``scrape.idle_monitors``). A ServiceMonitor discovers Services only in the namespaces of its
``namespaceSelector`` ("Selector to select which namespaces the Kubernetes Endpoints objects are discovered
from"; without one, its own namespace: https://prometheus-operator.dev/docs/api-reference/api/#monitoring.coreos.com/v1.NamespaceSelector),
through a Service its ``selector`` matches and a Service port of the name its endpoint gives; and only if the
Prometheus reads it (kube-prometheus-stack: ``serviceMonitorSelector``, by default the release's label unless
``serviceMonitorSelectorNilUsesHelmValues`` is false). A PrometheusRule is the same: the Prometheus loads only
the rules its ``ruleSelector`` picks (by default ``release: <release>`` unless ``ruleSelectorNilUsesHelmValues`` is
false: the chart's values.yaml), so an alert in one it does not pick is never evaluated.

A name no known exporter writes is not judged where a scraped pod runs an image whose exporters are unknown (it may
write any name) and the query's matchers may match that pod's target labels (its namespace, pod, job...), unless
the name is a near miss of a stored name (a typo).

It cannot see: queries in code not listed in ``CODE_QUERIES``, recording rules'
outputs as inputs to other queries, label values an exporter sets at run time (only their keys), and
scrape jobs of roles other than ``pod``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from dataclasses import dataclass

from tokenplane.contract import CODE_QUERIES
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, lookup
from tokenplane.proof.deployability.promql import Matcher, PromQLError, Selector, selectors
from tokenplane.proof.deployability.scrape import (
    PROMETHEUS_CHART,
    Exported,
    Series,
    exported,
    idle_monitors,
    known,
    unread,
)
from tokenplane.runtime_env import Var

RULE = "metrics-exported"
DASHBOARD_LABEL = "grafana_dashboard"
PROMETHEUS_TYPE = "prometheus"
TRIGGER_KINDS = ("ScaledObject", "ScaledJob")


@dataclass(frozen=True)
class Query:
    """One PromQL expression and where it is written."""

    urn: str
    where: str  # "ScaledObject inference/vllm-small trigger kv-cache-usage"
    expr: str
    effect: str  # what no data does there: "KEDA never scales on it"


def check(graph: Graph) -> Iterator[Finding]:
    everything = known(graph)
    for region in graph.regions():
        said: list[Finding] = []
        read = list(queries(graph, region))
        stored = exported(graph, region) if read else Exported()
        if read and not stored.series:
            for query in read:
                yield Finding(
                    RULE,
                    query.urn,
                    f"{query.where} queries Prometheus, but no {PROMETHEUS_CHART} runs in {region}: it never has "
                    f"data, so {query.effect}",
                    f"install Prometheus in {region} (tokenplane.components.Observability) or drop the query",
                )
            continue
        for query in read:
            said += _check_query(query, stored, everything, region)
        yield from said
        yield from _idle_monitors(graph, region, said)
        yield from _unloaded_rules(graph, region)


def _unloaded_rules(graph: Graph, region: str) -> Iterator[Finding]:
    """PrometheusRules no Prometheus of the region loads: their alerts are never evaluated."""
    releases = graph.releases(region, PROMETHEUS_CHART)
    if not releases:
        return  # no Prometheus of the program's: the query checks above say so
    for rules in graph.kube(region, "PrometheusRule"):
        why = unread(rules, releases)
        if why is None:
            continue
        alerts = [
            str(r.get("alert")) for g in lookup(rules.manifest, "spec.groups") or [] for r in g.get("rules") or []
        ]
        yield Finding(
            RULE,
            rules.urn,
            f"PrometheusRule {rules.namespace}/{rules.name} is loaded by no Prometheus: {why}; its rules "
            f"({', '.join(a for a in alerts if a != 'None') or 'recording rules'}) are never evaluated, so no alert "
            "from them ever fires",
            "label it with what the Prometheus's ruleSelector picks (kube-prometheus-stack: release: <release name>)",
        )


def _idle_monitors(graph: Graph, region: str, said: list[Finding]) -> Iterator[Finding]:
    """A monitor that scrapes nothing: the series it was made to collect never exist, queried or not yet."""
    for monitor, why, fix in idle_monitors(graph, region):
        what = f"{monitor.kind} {monitor.namespace}/{monitor.name}"
        if any(what in f.message for f in said):
            continue  # a query's finding already names it (one root cause, one finding)
        yield Finding(
            RULE,
            monitor.urn,
            f"{what} gives Prometheus no target: {why}; none of the series it is meant to collect is ever stored, "
            "so every query, alert or dashboard on them returns no data",
            fix,
        )


def _check_query(query: Query, stored: Exported, everything: dict[str, str], region: str) -> Iterator[Finding]:
    try:
        read = selectors(query.expr)
    except PromQLError as e:
        yield Finding(RULE, query.urn, f"{query.where}: {e}", "write the query in valid PromQL")
        return
    for selector in read:
        if selector.name is None:
            continue
        problem = _problem(selector, stored, everything, region)
        if problem is not None:
            message, fix = problem
            yield Finding(
                RULE,
                query.urn,
                f"{query.where} reads {selector}: {message}; it returns no data, so {query.effect}",
                fix,
            )


def _problem(selector: Selector, stored: Exported, everything: dict[str, str], region: str) -> tuple[str, str] | None:
    """Why ``selector`` selects nothing in ``region`` (message, fix), or None when some stored series matches."""
    name = str(selector.name)
    series = stored.series.get(name)
    if not series:
        if name in stored.unscraped:
            fix = stored.fixes.get(name, "annotate the pod prometheus.io/scrape")
            return f"{stored.unscraped[name]}: Prometheus never stores it", fix
        if name in everything:
            return (
                f"{name} is exported by {everything[name]}, which no scraped target in {region} runs",
                f"install {everything[name]} in {region} (and have Prometheus scrape it), or drop the query",
            )
        close = difflib.get_close_matches(name, list(stored.series), n=2, cutoff=0.75)
        if not close and any(_opaque_may_match(selector, s) for s in stored.opaque):
            return None  # a scraped pod whose exporters are unknown, and whose target labels it may match, may write it
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        return (
            f"no exporter in {region} writes {name}{hint}",
            "query a name the exporter writes (components/schemas/vllm-*-metrics.json, "
            "tokenplane/proof/deployability/exporters.json)",
        )
    if any(all(_may_match(m, s) for m in selector.matchers) for s in series):
        return None
    matcher = next(m for m in selector.matchers if not any(_may_match(m, s) for s in series))
    message, fix = _explain(name, matcher, series)
    # A monitor meant to scrape these pods (and add labels) that scrapes nothing is the likelier cause.
    misses = sorted({stored.misses[s.target.urn] for s in series if s.target.urn in stored.misses})
    if misses:
        message += f"; a monitor that selects its pods scrapes nothing: {'; '.join(misses)}"
        fix = "make the monitor's selectors and port match what Prometheus reads, or " + fix
    return message, fix


def writers(selector: Selector, stored: Exported, everything: dict[str, str]) -> list[Series]:
    """The stored series ``selector`` may select: the known exporters' that its matchers may match, or, for a name no
    known exporter writes, the targets of unknown exporters whose target labels it may match."""
    name = str(selector.name)
    if name in stored.series:
        return [s for s in stored.series[name] if all(_may_match(m, s) for m in selector.matchers)]
    if name in everything:
        return []
    return [s for s in stored.opaque if _opaque_may_match(selector, s)]


def _opaque_may_match(selector: Selector, target: Series) -> bool:
    """Whether an unknown exporter's series on ``target`` may match ``selector``: its target labels are known, and
    any other label it may set."""
    return all(
        m.label == "__name__" or target.labels.get(m.label) is None or _may_match(m, target) for m in selector.matchers
    )


def _may_match(matcher: Matcher, series: Series) -> bool:
    if matcher.label == "__name__":
        return True
    value = series.labels.get(matcher.label, "")
    if matcher.templated:  # a Grafana variable takes its values from the label: it needs the label, any value
        return matcher.label in series.labels
    return value is None or matcher.matches(value)  # None: the exporter sets it at run time


def _explain(name: str, matcher: Matcher, series: list[Series]) -> tuple[str, str]:
    first = series[0]
    carried = sorted(first.labels)
    if matcher.label not in first.labels:
        return (
            f"no series of {name} carries the label {matcher.label} after the scrape's relabelling "
            f"({first.target.what}, job {first.job}: {', '.join(carried)})",
            f"match on a label the series carry, or keep {matcher.label} in the scrape job's relabel_configs",
        )
    values = sorted({str(s.labels[matcher.label]) for s in series if s.labels.get(matcher.label) is not None})
    renamed = "exported_" + matcher.label in first.labels and not first.honor_labels
    why = (
        f"; the exporter's own {matcher.label} was renamed exported_{matcher.label} because job {first.job} does "
        "not set honor_labels"
        if renamed
        else ""
    )
    return (
        f"{matcher.label} is set by the scrape to {', '.join(values)}, which {matcher} never matches{why}",
        f"set honor_labels on job {first.job}" if renamed else f"match the value the scrape sets for {matcher.label}",
    )


def queries(graph: Graph, region: str) -> Iterator[Query]:
    """Every PromQL query the platform runs against the region's Prometheus: KEDA triggers, the alert and recording
    rules it loads, our processes' own queries and the dashboards' panels and variables."""
    for scaled in graph.kube(region, *TRIGGER_KINDS):
        for trigger in lookup(scaled.manifest, "spec.triggers") or []:
            if trigger.get("type") == PROMETHEUS_TYPE and lookup(trigger, "metadata.query"):
                where = f"{scaled.kind} {scaled.namespace}/{scaled.name} trigger {trigger.get('name', '?')}"
                yield Query(scaled.urn, where, str(trigger["metadata"]["query"]), "KEDA never scales on it")
    releases = graph.releases(region, PROMETHEUS_CHART)
    for rules in graph.kube(region, "PrometheusRule"):
        if releases and unread(rules, releases) is not None:
            continue  # loaded by no Prometheus: _unloaded_rules says so, once
        for group in lookup(rules.manifest, "spec.groups") or []:
            yield from _rules(rules.urn, f"PrometheusRule {rules.namespace}/{rules.name}", group)
    for release in graph.releases(region, PROMETHEUS_CHART):
        rule_map = lookup(release.inputs.get("values") or {}, "additionalPrometheusRulesMap") or {}
        for key, body in rule_map.items():
            for group in body.get("groups") or []:
                yield from _rules(release.urn, f"{PROMETHEUS_CHART} rules {key}", group)
    for workload in graph.workloads(region):
        for container in workload.pod_spec().get("containers") or []:
            command = [str(c) for c in container.get("command") or []]
            env = {str(e.get("name")) for e in container.get("env") or []}
            if command[:2] != ["python", "-m"] or len(command) < 3 or Var.PROMETHEUS_URL not in env:
                continue
            for expr in CODE_QUERIES.get(command[2], ()):
                where = f"{workload.kind} {workload.namespace}/{workload.name} ({command[2]}'s own query)"
                yield Query(workload.urn, where, expr, "the process reads nothing from it")
    for config in graph.kube(region, "ConfigMap"):
        if DASHBOARD_LABEL not in (lookup(config.manifest, "metadata.labels") or {}):
            continue
        for key, text in (config.manifest.get("data") or {}).items():
            try:
                board = json.loads(str(text))
            except json.JSONDecodeError:
                continue  # not JSON: Grafana's sidecar would skip it too
            for title, expr in _dashboard_queries(board):
                yield Query(config.urn, f"dashboard {config.name}/{key} {title}", expr, "the panel stays empty")


def _rules(urn: str, where: str, group: dict[str, object]) -> Iterator[Query]:
    for rule in group.get("rules") or []:  # type: ignore[attr-defined]  # a rule group's list, from YAML
        name = rule.get("alert") or rule.get("record") or "?"
        if rule.get("expr"):
            effect = "the alert never fires" if rule.get("alert") else "the recorded series is empty"
            yield Query(urn, f"{where} group {group.get('name')} rule {name}", str(rule["expr"]), effect)


def _dashboard_queries(board: dict[str, object]) -> Iterator[tuple[str, str]]:
    """(where, expr) of each Prometheus target of each panel (rows' panels too) and each variable query."""
    panels = list(board.get("panels") or [])  # type: ignore[call-overload]  # dashboard JSON
    while panels:
        panel = panels.pop(0)
        panels += panel.get("panels") or []
        for target in panel.get("targets") or []:
            source = target.get("datasource") or panel.get("datasource") or {}
            if _prometheus(source) and target.get("expr"):
                yield f"panel {panel.get('title')!r}", str(target["expr"])
    for variable in lookup(board, "templating.list") or []:
        query = variable.get("query")
        query = query.get("query") if isinstance(query, dict) else query
        if variable.get("type") == "query" and _prometheus(variable.get("datasource") or {}) and query:
            yield f"variable ${variable.get('name')}", str(query)


def _prometheus(source: object) -> bool:
    kind = source.get("type") if isinstance(source, dict) else None
    return kind in (None, PROMETHEUS_TYPE)

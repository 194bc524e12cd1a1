"""Every alert and recording rule the program gives Prometheus is one Prometheus can load.

kube-prometheus-stack installs the Prometheus Operator with its validating admission webhook on by default
(``prometheusOperator.admissionWebhooks.enabled``): each PrometheusRule is checked the way Prometheus loads a rule
file (``rulefmt``) and a rule that does not parse is denied ('admission webhook
"prometheusrulevalidate.monitoring.coreos.com" denied the request: Rules are not valid';
https://prometheus-operator.dev/docs/platform/webhook/), so ``pulumi up`` fails at the object. The chart's
``additionalPrometheusRulesMap`` renders PrometheusRules the same webhook judges, failing the Helm release. Without the
webhook, the Prometheus reloading the rule file refuses the whole file and keeps none of its rules.

What ``rulefmt`` (prometheus/model/rulefmt, ``RuleGroups.Validate`` and ``RuleNode.Validate``) refuses:

- a group without a name, or two groups of one name in one file ("groupname ... is repeated in the same file");
- a rule that is neither or both of ``alert`` and ``record``, or has no ``expr``;
- an ``expr`` that is not PromQL. It is parsed with a real PromQL parser (``promql-parser``, GreptimeDB's Rust
  parser): a Grafana variable copied from a panel (``$__rate_interval``, ``$__interval``, ``${var}``) is not PromQL.
  A function the parser does not know is not judged (a newer Prometheus may have it);
- a recording rule's name that is not a metric name (``[a-zA-Z_:][a-zA-Z0-9_:]*``), or one with ``for``,
  ``keep_firing_for`` or ``annotations`` ("invalid field 'for' in recording rule");
- a ``for``, ``keep_firing_for`` or group ``interval`` that is not a Prometheus duration (``model.ParseDuration``:
  units ms, s, m, h, d, w, y, largest first, e.g. ``1h30m``; a bare number other than 0 is not one).

Cannot see: rules loaded from files or ConfigMaps the program does not render, label and annotation templates.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import promql_parser

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, lookup

RULE = "prometheus-rule-valid"
PROMETHEUS_CHART = "kube-prometheus-stack"
# prometheus/common model.ParseDuration.
DURATION = re.compile(r"^(0|(\d+y)?(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?)$")
METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
UNKNOWN_FUNCTION = "unknown function"
WEBHOOK = (
    "the Prometheus Operator's admission webhook denies the object ('Rules are not valid') and pulumi up fails "
    "(without the webhook, Prometheus refuses the whole rule file)"
)
GRAFANA_VARIABLE = re.compile(r"\$(\{[^}]*\}|__\w+|\w+)")


def check(graph: Graph) -> Iterator[Finding]:
    for rules in graph.kube(None, "PrometheusRule"):
        where = f"PrometheusRule {rules.namespace}/{rules.name}"
        groups = lookup(rules.manifest, "spec.groups") or []
        yield from _groups(rules.urn, where, groups, WEBHOOK)
    for release in graph.of_type(HELM_RELEASE):
        if release.inputs.get("chart") != PROMETHEUS_CHART:
            continue
        rule_map = lookup(release.inputs.get("values") or {}, "additionalPrometheusRulesMap") or {}
        for key, body in rule_map.items() if isinstance(rule_map, dict) else []:
            groups = body.get("groups") if isinstance(body, dict) else None
            yield from _groups(
                release.urn,
                f"{PROMETHEUS_CHART} additionalPrometheusRulesMap.{key}",
                groups or [],
                f"{WEBHOOK} (the chart renders it as a PrometheusRule: the Helm release fails)",
            )


def _groups(urn: str, where: str, groups: Any, effect: str) -> Iterator[Finding]:
    if not isinstance(groups, list):
        return
    seen: set[str] = set()
    for i, group in enumerate(g for g in groups if isinstance(g, dict)):
        name = group.get("name")
        if not name:
            yield _invalid(
                urn,
                where,
                f"group {i} has no name (rulefmt: Groupname must not be empty)",
                effect,
                "name every rule group",
            )
        elif name in seen:
            yield _invalid(
                urn,
                where,
                f"group {name!r} is repeated in the same file",
                effect,
                "give each rule group of the object a distinct name, or merge them",
            )
        seen.add(str(name))
        interval = group.get("interval")
        if interval is not None and not DURATION.match(str(interval)):
            yield _invalid(
                urn,
                where,
                f"group {name!r} interval {interval!r} is not a Prometheus duration",
                effect,
                "write a duration such as 30s, 1m or 1h30m",
            )
        for j, rule in enumerate(r for r in group.get("rules") or [] if isinstance(r, dict)):
            yield from _rule(
                urn, f"{where} group {name!r} rule {rule.get('alert') or rule.get('record') or j}", rule, effect
            )


def _rule(urn: str, where: str, rule: dict[str, Any], effect: str) -> Iterator[Finding]:
    alert, record, expr = rule.get("alert"), rule.get("record"), rule.get("expr")
    if bool(alert) == bool(record):
        yield _invalid(
            urn,
            where,
            "must have exactly one of 'alert' and 'record'",
            effect,
            "give the rule an alert name or a record name, not both",
        )
    if expr is None or str(expr).strip() == "":
        yield _invalid(urn, where, "has no expr (field 'expr' must be set in rule)", effect, "give the rule its query")
    elif problem := _parse_error(str(expr)):
        yield _invalid(urn, where, f"expr {str(expr)!r} is not PromQL ({problem})", effect, _expr_fix(str(expr)))
    if record:
        if not METRIC_NAME.match(str(record)):
            yield _invalid(
                urn,
                where,
                f"record {record!r} is not a metric name (invalid recording rule name)",
                effect,
                "name the recorded series [a-zA-Z_:][a-zA-Z0-9_:]*, e.g. job:requests:rate5m",
            )
        for field in ("for", "keep_firing_for", "annotations"):
            if rule.get(field):
                yield _invalid(
                    urn,
                    where,
                    f"is a recording rule with {field!r} (invalid field in recording rule)",
                    effect,
                    f"drop {field} from the recording rule, or make it an alert",
                )
    for field in ("for", "keep_firing_for"):
        value = rule.get(field)
        if value is not None and not DURATION.match(str(value)):
            yield _invalid(
                urn,
                where,
                f"{field} {value!r} is not a Prometheus duration",
                effect,
                "write a duration such as 5m or 1h30m (units ms, s, m, h, d, w, y)",
            )


def _parse_error(expr: str) -> str | None:
    try:
        promql_parser.parse(expr)
    except ValueError as error:
        text = str(error)
        return None if UNKNOWN_FUNCTION in text else text
    return None


def _expr_fix(expr: str) -> str:
    variables = sorted(set(GRAFANA_VARIABLE.findall(expr)))
    if variables:
        names = ", ".join(f"${v}" for v in variables)
        return (
            f"replace the Grafana variable(s) {names} with a literal (a rate range of at least four scrape "
            "intervals, e.g. [2m] at 30s scrapes): Prometheus evaluates rules without Grafana's templating"
        )
    return "fix the expression so that promtool check rules accepts it"


def _invalid(urn: str, where: str, what: str, effect: str, fix: str) -> Finding:
    return Finding(RULE, urn, f"{where} {what}: {effect}", fix)

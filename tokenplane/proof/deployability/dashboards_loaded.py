"""A Grafana dashboard or datasource shipped as a ConfigMap or Secret is one Grafana's sidecar loads.

The Grafana chart loads dashboards and datasources from Kubernetes objects through its sidecars (kiwigrid
k8s-sidecar): each watches ConfigMaps and Secrets (``resource``: both, configmap or secret) that carry its label
(``label``, and ``labelValue`` where set: empty matches any value) in the namespaces of ``searchNamespace`` (a name,
a comma-separated list or a list; ``ALL`` for every namespace; unset: only the namespace Grafana runs in, the
release's). An object outside them is created and never read: the dashboard never appears, the datasource never
exists, and nothing fails. Defaults, from the pinned charts' values.yaml:

- grafana (8.8.x, grafana/helm-charts ``charts/grafana/values.yaml``): ``sidecar.dashboards``/``datasources``
  ``enabled: false``, ``label: grafana_dashboard``/``grafana_datasource``, ``labelValue: ""``,
  ``searchNamespace: null`` ("Otherwise the namespace in which the sidecar is running will be used"),
  ``resource: both``;
- kube-prometheus-stack (67.9.0, prometheus-community/helm-charts ``charts/kube-prometheus-stack/values.yaml``),
  under ``grafana:``: dashboards ``enabled: true``, ``label: grafana_dashboard``, ``labelValue: "1"``,
  ``searchNamespace: ALL``; datasources ``enabled: true``, ``label: grafana_datasource``, ``labelValue: "1"``, no
  searchNamespace (so the release's namespace only).

Judged: an object with a sidecar's label key (the chart's or the one a release sets) in a region where the program
installs Grafana, that no Grafana of the region loads; and a ConfigMap or Secret with no sidecar label at all whose
``*.json`` key holds a dashboard model (a JSON object with ``panels`` or ``rows``): a dashboard shipped without the
label the sidecar selects, never loaded either. Cannot see: a Grafana installed outside the program, values
files (``valueYamlFiles``) and templated values other than ``{{ .Release.Namespace }}``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup

RULE = "dashboard-loaded"
KINDS = ("dashboards", "datasources")
# chart -> (where its Grafana values sit, whether Grafana is on by default, per sidecar kind the defaults).
CHARTS: dict[str, tuple[str, bool, dict[str, dict[str, Any]]]] = {
    "grafana": (
        "",
        True,
        {
            "dashboards": {"enabled": False, "label": "grafana_dashboard", "labelValue": "", "searchNamespace": None},
            "datasources": {"enabled": False, "label": "grafana_datasource", "labelValue": "", "searchNamespace": None},
        },
    ),
    "kube-prometheus-stack": (
        "grafana",
        True,
        {
            "dashboards": {"enabled": True, "label": "grafana_dashboard", "labelValue": "1", "searchNamespace": "ALL"},
            "datasources": {"enabled": True, "label": "grafana_datasource", "labelValue": "1", "searchNamespace": None},
        },
    ),
}
RELEASE_NAMESPACE = re.compile(r"\{\{-?\s*\.Release\.Namespace\s*-?\}\}")


@dataclass(frozen=True)
class Sidecar:
    """One Grafana sidecar: what it loads, and from where."""

    release: str
    kind: str  # dashboards | datasources
    enabled: bool
    label: str
    value: str  # "" matches any value
    namespaces: frozenset[str] | None  # None: every namespace
    resources: frozenset[str]  # ConfigMap, Secret

    def loads(self, obj: KubeObject) -> bool:
        labels = lookup(obj.manifest, "metadata.labels") or {}
        return (
            self.enabled
            and obj.kind in self.resources
            and self.label in labels
            and (not self.value or str(labels[self.label]) == self.value)
            and (self.namespaces is None or obj.namespace in self.namespaces)
        )

    def why_not(self, obj: KubeObject) -> str:
        labels = lookup(obj.manifest, "metadata.labels") or {}
        if not self.enabled:
            return f"release {self.release}'s {self.kind} sidecar is off (sidecar.{self.kind}.enabled)"
        if obj.kind not in self.resources:
            return f"release {self.release}'s {self.kind} sidecar reads only {', '.join(sorted(self.resources))}s"
        if self.label not in labels:
            return f"release {self.release}'s {self.kind} sidecar selects the label {self.label}, which it lacks"
        if self.value and str(labels[self.label]) != self.value:
            return (
                f"release {self.release}'s {self.kind} sidecar selects {self.label}={self.value!r}, and its value "
                f"is {labels[self.label]!r}"
            )
        watched = ", ".join(sorted(self.namespaces or ()))
        return f"release {self.release}'s {self.kind} sidecar watches only namespace(s) {watched} (searchNamespace)"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        sidecars = [s for r in graph.of_type(HELM_RELEASE, region) for s in _sidecars(r.inputs, r.name)]
        if not sidecars:
            continue  # no Grafana of the program's here: one outside it may load anything
        # ConfigMaps the Grafana chart mounts by name (grafana.dashboardsConfigMaps: provider -> ConfigMap) are
        # loaded without the sidecar.
        mounted = {
            str(name)
            for r in graph.of_type(HELM_RELEASE, region)
            for where in ("grafana.dashboardsConfigMaps", "dashboardsConfigMaps")
            for name in ((lookup(r.inputs.get("values") or {}, where) or {}).values())
        }
        for obj in graph.kube(region, "ConfigMap", "Secret"):
            labels = lookup(obj.manifest, "metadata.labels") or {}
            for kind in KINDS:
                mine = [s for s in sidecars if s.kind == kind]
                keys = {s.label for s in mine} | {CHARTS["grafana"][2][kind]["label"]}
                if keys & set(labels):
                    by = f"label {', '.join(sorted(keys & set(labels)))}"
                elif kind == "dashboards" and obj.name not in mounted and not set(labels) & {s.label for s in sidecars}:
                    body = _dashboard_body(obj)
                    if body is None:
                        continue
                    by = body
                else:
                    continue
                if any(s.loads(obj) for s in mine):
                    continue
                what = kind.removesuffix("s")
                reasons = "; ".join(dict.fromkeys(s.why_not(obj) for s in mine))
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{obj.kind} {obj.namespace}/{obj.name} is a Grafana {what} ({by}), but no Grafana sidecar "
                    f"loads it: {reasons}; it is "
                    f"created and never read, so the {what} never appears in Grafana",
                    f"create it where the sidecar looks, with its label and value (kube-prometheus-stack: namespace "
                    f"of the release unless grafana.sidecar.{kind}.searchNamespace says otherwise, "
                    f'{CHARTS["kube-prometheus-stack"][2][kind]["label"]}: "1"), or widen searchNamespace',
                )


def _dashboard_body(obj: KubeObject) -> str | None:
    """How ``obj`` shows itself a Grafana dashboard without a sidecar's label: a ``*.json`` key whose value is a
    dashboard model (a JSON object with ``panels`` or ``rows``, Grafana's dashboard JSON model:
    https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/), or None."""
    for key, value in (obj.manifest.get("data") or {}).items():
        if not str(key).endswith(".json") or not isinstance(value, str):
            continue
        try:
            body = json.loads(value)
        except ValueError:
            continue
        if isinstance(body, dict) and ("panels" in body or "rows" in body):
            return f"its key {key} holds a dashboard model with {'panels' if 'panels' in body else 'rows'}"
    return None


def _sidecars(inputs: dict[str, Any], name: str) -> Iterator[Sidecar]:
    chart = CHARTS.get(str(inputs.get("chart") or ""))
    if chart is None:
        return
    where, on, defaults = chart
    values = inputs.get("values") or {}
    grafana = (lookup(values, where) if where else values) or {}
    if not isinstance(grafana, dict) or grafana.get("enabled", on) is False:
        return
    release = str(inputs.get("name") or name)
    namespace = str(inputs.get("namespace") or "default")
    for kind in KINDS:
        given = lookup(grafana, f"sidecar.{kind}") or {}
        merged = {**defaults[kind], **(given if isinstance(given, dict) else {})}
        namespaces = _namespaces(merged.get("searchNamespace"), namespace)
        if isinstance(namespaces, str):
            continue  # a templated value: not judged
        yield Sidecar(
            release,
            kind,
            bool(merged.get("enabled")),
            str(merged.get("label")),
            str(merged.get("labelValue") or ""),
            namespaces,
            _resources(str(merged.get("resource") or "both")),
        )


def _namespaces(value: Any, own: str) -> frozenset[str] | str | None:
    """The namespaces a sidecar watches: None for every one, "unknown" where a template hides them."""
    if value is None or value in ("", []):
        return frozenset({own})
    names = value if isinstance(value, list) else str(value).split(",")
    out = {RELEASE_NAMESPACE.sub(own, str(n)).strip() for n in names}
    if any("{{" in n for n in out):
        return "unknown"
    return None if "ALL" in out else frozenset(out)


def _resources(value: str) -> frozenset[str]:
    return {"configmap": frozenset({"ConfigMap"}), "secret": frozenset({"Secret"})}.get(
        value, frozenset({"ConfigMap", "Secret"})
    )

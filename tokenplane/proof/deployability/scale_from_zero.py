"""A workload scaled to zero wakes on a signal something else exports: not only on metrics its own pods write.

KEDA scales a ScaledObject's target to ``minReplicaCount`` (default 0) once no trigger is active for
``cooldownPeriod``, and back from zero only when a trigger's metric exceeds its ``activationThreshold`` (default 0;
https://keda.sh/docs/latest/reference/scaledobject-spec/ minReplicaCount, idleReplicaCount, cooldownPeriod;
https://keda.sh/docs/latest/concepts/scaling-deployments/ "Activation phase"). A Prometheus trigger whose query
finds no series reads 0 (``ignoreNullValues`` defaults to true: https://keda.sh/docs/latest/scalers/prometheus/).
When every trigger reads only series that the scaled workload's own pods export (by the scrape model of
``metrics-exported``: ``scrape.exported``), at zero replicas nothing exports them, every query is empty, KEDA reads 0
and never scales up again: the workload stays at zero while its callers fail (kedacore/keda#6040). A floor of one
replica, or a trigger on a signal that exists without the pods (a caller's request count, a queue's depth), keeps it
working.

It cannot see: queries that read series from outside the program's Prometheus (Thanos, another cluster), triggers of
other types than ``prometheus`` (they are taken as independent of the pods), and series an unknown exporter of another
workload may write with labels set at run time.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.metrics import PROMETHEUS_TYPE, writers
from tokenplane.proof.deployability.promql import PromQLError, selectors
from tokenplane.proof.deployability.scrape import Exported, exported, known

RULE = "scale-from-zero"


def check(graph: Graph) -> Iterator[Finding]:
    everything = known(graph)
    for region in graph.regions():
        scalers = [s for s in graph.kube(region, "ScaledObject") if _floor(s.manifest) == 0]
        if not scalers:
            continue
        stored = exported(graph, region)
        for scaler in scalers:
            target = _target(graph, region, scaler)
            if target is None:
                continue  # a target the program does not make: references say so
            triggers = lookup(scaler.manifest, "spec.triggers") or []
            reads = [_own_reads(t, target.urn, stored, everything) for t in triggers]
            if not triggers or any(r is None for r in reads):
                continue
            names = sorted({n for r in reads for n in r or []})
            field = (
                "idleReplicaCount"
                if lookup(scaler.manifest, "spec.idleReplicaCount") is not None
                else "minReplicaCount"
            )
            yield Finding(
                RULE,
                scaler.urn,
                f"ScaledObject {scaler.namespace}/{scaler.name} scales {target.kind} {target.name} to zero "
                f"(spec.{field} 0), but every trigger reads only series its own pods export ({', '.join(names)}): at "
                "zero replicas nothing exports them, the queries are empty, KEDA reads 0 and never scales it up again",
                f"set spec.{field} to 1 (a pod always exports the signal), or trigger on a metric that exists without "
                "the pods (a caller's request rate, a queue's depth)",
            )


def _floor(manifest: dict[str, Any]) -> int:
    """The replicas KEDA leaves when no trigger is active: idleReplicaCount if set, else minReplicaCount (default 0)."""
    idle = lookup(manifest, "spec.idleReplicaCount")
    value = idle if idle is not None else lookup(manifest, "spec.minReplicaCount")
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 1  # not a number: api-validation says so


def _target(graph: Graph, region: str, scaler: KubeObject) -> KubeObject | None:
    ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
    kind, name = str(ref.get("kind") or "Deployment"), ref.get("name")
    return next((w for w in graph.kube(region, kind) if w.name == name and w.namespace == scaler.namespace), None)


def _own_reads(trigger: dict[str, Any], own: str, stored: Exported, everything: dict[str, str]) -> list[str] | None:
    """The series names ``trigger`` reads when every one of them is written only by the pods of ``own`` (a URN);
    None when it reads anything else (or is not a Prometheus trigger, or its series are written by nothing: the
    metrics-exported rule says so)."""
    query = lookup(trigger, "metadata.query")
    if trigger.get("type") != PROMETHEUS_TYPE or not query:
        return None
    try:
        read = [s for s in selectors(str(query)) if s.name is not None]
    except PromQLError:
        return None  # metrics-exported reports it
    if not read:
        return None
    for selector in read:
        sources = writers(selector, stored, everything)
        if not sources or any(s.target.urn != own for s in sources):
            return None
    return [str(s.name) for s in read]

"""Every required pod-affinity term is satisfiable: some pod of the program, in the namespaces the term names,
carries labels its ``labelSelector`` matches.

A ``requiredDuringSchedulingIgnoredDuringExecution`` podAffinity term places the pod only on a node (zone, ...)
that already runs a pod the term selects. The term selects pods in the namespaces it names: its ``namespaces``
list and the namespaces its ``namespaceSelector`` matches; with neither, "this pod's namespace" only (PodAffinityTerm,
https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#PodAffinityTerm: "null or empty
namespaces list and null namespaceSelector means 'this pod's namespace'"; the nil-list semantics since
https://github.com/kubernetes/kubernetes/pull/22985). Where no pod there matches, the scheduler's InterPodAffinity
filter refuses every node ("node(s) didn't match pod affinity rules") and the pod stays Pending forever: the
Deployment never becomes available, ``pulumi up`` waits and times out. The one exception is the scheduler's: a pod
that matches its own term, in a namespace the term names, may schedule when no pod matches yet, so that the first
of a group that wants to sit together can start (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go,
satisfyPodAffinity: when no pod of the cluster matches the terms and the incoming pod matches all of its own, it is
placed, being the first of its group;
https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).

A term is judged only where the graph knows every pod of each namespace it names: a namespace the program creates,
without a Helm release in it (a chart's pods are not all modelled) and not declared as made elsewhere
(``--assume``). A term whose ``namespaceSelector`` is empty (every namespace) or selects a namespace the program
does not create, or that uses ``matchLabelKeys`` / ``mismatchLabelKeys`` (their values come from the incoming pod's
labels at admission), is left alone.

It cannot see: pods made outside the program (another stack, an operator) in the namespaces it creates.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.namespaces import BUILT_IN
from tokenplane.proof.deployability.reachability import Pod, Region, regions, selects
from tokenplane.proof.deployability.selectors import known_pods

RULE = "affinity-satisfiable"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def check(graph: Graph) -> Iterator[Finding]:
    for region in regions(graph):
        for workload in graph.pod_bearers(region.name):
            spec = workload.pod_template().get("spec") or {}
            terms = ((spec.get("affinity") or {}).get("podAffinity") or {}).get(REQUIRED) or []
            for i, term in enumerate(terms):
                if isinstance(term, dict):
                    yield from _term(graph, region, workload, i, term)


def _term(graph: Graph, region: Region, workload: KubeObject, i: int, term: dict[str, Any]) -> Iterator[Finding]:
    if term.get("matchLabelKeys") or term.get("mismatchLabelKeys"):
        return
    namespaces = _namespaces(graph, region, workload, term)
    if not namespaces:
        return
    pods: list[Pod] = []
    for namespace in namespaces:
        known = known_pods(graph, region, namespace)
        if known is None:
            return  # a namespace whose pods the graph does not all know may hold a match
        pods += known
    selector = term.get("labelSelector")
    if selector is None:
        matched: list[Pod] = []  # a null selector matches no pod
    else:
        matched = [p for p in pods if p.workload is not workload and selects(selector, p.labels)]
    labels = (workload.pod_template().get("metadata") or {}).get("labels") or {}
    own_labels = {str(k): str(v) for k, v in labels.items()}
    if matched or (selector is not None and workload.namespace in namespaces and selects(selector, own_labels)):
        return
    yield _finding(region, workload, i, term, namespaces)


def _namespaces(graph: Graph, region: Region, workload: KubeObject, term: dict[str, Any]) -> list[str] | None:
    """The namespaces the term selects pods in, or None where that includes namespaces the program does not make."""
    listed = [str(n) for n in term.get("namespaces") or []]
    selector = term.get("namespaceSelector")
    if selector is None:
        return listed or [workload.namespace]
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return None  # {} selects every namespace, the cluster's own among them
    chosen = [ns for ns in region.namespaces if selects(selector, region.namespace_labels(ns))]
    # Namespaces the program does not create carry only their name label (built-in ones, a chart's own) or labels
    # the graph cannot see (those assumed to exist): a selector that may match one may match pods the graph lacks.
    others = {*BUILT_IN, *(str(r.inputs.get("namespace") or "default") for r in region.releases)}
    if (
        not chosen
        or graph.assumed.namespaces
        or any(ns not in region.namespaces and selects(selector, region.namespace_labels(ns)) for ns in others)
    ):
        return None
    return sorted({*listed, *chosen})


def _finding(region: Region, workload: KubeObject, i: int, term: dict[str, Any], namespaces: list[str]) -> Finding:
    where = f"{workload.kind} {workload.namespace}/{workload.name}"
    at = f"spec.template.spec.affinity.podAffinity.{REQUIRED}[{i}]"
    selector = term.get("labelSelector")
    own_only = not term.get("namespaces") and term.get("namespaceSelector") is None
    scope = (
        f"names no namespace, so it looks in {workload.namespace} only"
        if own_only
        else "looks in " + ", ".join(namespaces)
    )
    elsewhere = sorted(
        {p.namespace for p in region.pods if selector is not None and selects(selector, p.labels)} - set(namespaces)
    )
    fix = (
        f"list {', '.join(elsewhere)} (where the pods it matches run) in the term's namespaces, or select it with "
        "namespaceSelector"
        if elsewhere
        else "correct the labelSelector to the labels of the pods it means, and name their namespace in the term"
    )
    return Finding(
        RULE,
        workload.urn,
        f"{where}'s {at} requires a pod matching {_show(selector)} on the same {term.get('topologyKey')} and {scope}, "
        "where no pod of the program carries those labels: the scheduler refuses every node (node(s) didn't match "
        "pod affinity rules) and the pods stay Pending forever",
        f"{fix} (or make the term preferredDuringSchedulingIgnoredDuringExecution)",
    )


def _show(selector: Any) -> str:
    if selector is None:
        return "a null labelSelector (which matches nothing)"
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    parts += [
        f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".strip()
        for e in selector.get("matchExpressions") or []
    ]
    return "{" + ", ".join(parts) + "}"

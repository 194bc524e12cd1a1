"""References by name between Kubernetes objects resolve to an object that exists and is what they expect.

- An HPA's or ScaledObject's ``scaleTargetRef`` names a workload of that kind in the same namespace; one that does
  not exist leaves the HPA in FailedGetScale (KEDA's ScaledObject: "ScaledObjectCheckFailed") and nothing scales.
- A PodDisruptionBudget's selector matches some pod the program runs in its namespace; one that matches none guards
  nothing (the disruption controller reports "NoPods"), so the drain it was written for is unprotected.
- An Ingress's ``ingressClassName`` names an IngressClass the program creates, or that a controller it installs
  creates (the AWS Load Balancer Controller's chart makes ``alb``; ingress-nginx's makes ``nginx``); with none, no
  controller reconciles the Ingress and it never gets an address.
- A pod template's ``priorityClassName`` names a PriorityClass the program creates or one every cluster has
  (``system-cluster-critical``, ``system-node-critical``); with none, the Priority admission plugin rejects every
  pod ("no PriorityClass with name X was found"), so the workload never has one.
Programs deploying into an existing cluster (``--assume cluster``) may use objects it has, so Ingress and priority
classes are not judged there, nor a priority class a Helm release's values name (its chart may create it). A Helm chart's workloads are not in the graph, so in a namespace a Helm release installs into, a scale
target or a PDB is judged only as a typo: a name one or two edits from one of the program's workloads there, or a
selector that selects none of the program's or the modelled chart pods there and would select one of the program's
with one value corrected (``selectors.typo_fix``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.cluster_names import strings
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup
from tokenplane.proof.deployability.reachability import Region, regions
from tokenplane.proof.deployability.selectors import typo_fix, typo_pods
from tokenplane.proof.deployability.typos import near_miss

RULE = "target-exists"
SCALERS = ("HorizontalPodAutoscaler", "ScaledObject")
# Chart -> the IngressClass its default values create, and the value that renames it.
INGRESS_CHARTS = {
    "aws-load-balancer-controller": ("alb", "ingressClass"),
    "ingress-nginx": ("nginx", "controller.ingressClassResource.name"),
}


def check(graph: Graph) -> Iterator[Finding]:
    modelled = {r.name: r for r in regions(graph)}
    for region in graph.regions():
        charted = {str(r.inputs.get("namespace") or "default") for r in graph.of_type(HELM_RELEASE, region)}
        workloads = graph.workloads(region)
        yield from _scale_targets(graph, region, workloads, charted)
        yield from _disruption_budgets(graph, modelled[region], workloads, charted)
        if not graph.assumed.cluster:
            yield from _ingress_classes(graph, region)
            yield from _priority_classes(graph, region)


def _scale_targets(graph: Graph, region: str, workloads: list[KubeObject], charted: set[str]) -> Iterator[Finding]:
    present = {(w.kind, w.namespace, w.name) for w in workloads}
    for scaler in graph.kube(region, *SCALERS):
        ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
        kind = str(ref.get("kind") or "Deployment")  # KEDA's default kind
        name = str(ref.get("name"))
        if (kind, scaler.namespace, name) in present:
            continue
        same = sorted(w.name for w in workloads if w.kind == kind and w.namespace == scaler.namespace)
        if scaler.namespace in charted and near_miss(name, set(same)) is None:
            continue  # a chart's workload, which the graph does not hold
        yield Finding(
            RULE,
            scaler.urn,
            f"{scaler.kind} {scaler.namespace}/{scaler.name} scales {kind} {name!r}, which the program does not "
            f"create in {scaler.namespace} (its {kind}s there: {', '.join(same) or 'none'}): it reports "
            "FailedGetScale and nothing is ever scaled",
            f"set spec.scaleTargetRef to the {kind} it is meant to scale",
        )


def _matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    """Kubernetes label-selector semantics: matchLabels and matchExpressions, all of them."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, op, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _disruption_budgets(
    graph: Graph, region: Region, workloads: list[KubeObject], charted: set[str]
) -> Iterator[Finding]:
    for pdb in graph.kube(region.name, "PodDisruptionBudget"):
        selector = lookup(pdb.manifest, "spec.selector")
        if not isinstance(selector, dict) or not selector:
            continue  # an empty selector selects every pod of the namespace
        pods_there = typo_pods(graph, region, pdb.namespace)
        fix = typo_fix(selector, pods_there) if pods_there is not None else None
        if pdb.namespace in charted and fix is None:
            continue  # a chart's pods, which the graph does not hold
        pods = [
            w
            for w in workloads
            if w.namespace == pdb.namespace
            and _matches(selector, lookup(w.manifest, "spec.template.metadata.labels") or {})
        ]
        if pods:
            continue
        yield Finding(
            RULE,
            pdb.urn,
            f"PodDisruptionBudget {pdb.namespace}/{pdb.name} selects {selector}, which no pod the program runs in "
            f"{pdb.namespace} carries{f' (they carry {fix}, one or two characters away)' if fix else ''}: it protects "
            "nothing, and a node drain takes the pods it was meant to keep",
            f"make spec.selector match the pod template labels of the workload it protects{f' ({fix})' if fix else ''}",
        )


def _ingress_classes(graph: Graph, region: str) -> Iterator[Finding]:
    classes = {o.name for o in graph.kube(region, "IngressClass")}
    for chart, (default, path) in INGRESS_CHARTS.items():
        for release in graph.releases(region, chart):
            classes.add(str(lookup(release.inputs.get("values") or {}, path) or default))
    for ingress in graph.kube(region, "Ingress"):
        name = lookup(ingress.manifest, "spec.ingressClassName")
        if not isinstance(name, str) or name in classes:
            continue
        yield Finding(
            RULE,
            ingress.urn,
            f"Ingress {ingress.namespace}/{ingress.name} asks for ingressClassName {name!r}, but no IngressClass of "
            f"that name is created and no installed controller serves it (there are: {', '.join(sorted(classes)) or 'none'})"
            ": no controller reconciles it and it never gets an address",
            f"use one of {', '.join(sorted(classes)) or 'the installed classes'}, or install the controller for {name!r}",
        )


BUILT_IN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


def _priority_classes(graph: Graph, region: str) -> Iterator[Finding]:
    made = {o.name for o in graph.kube(region, "PriorityClass")} | BUILT_IN_PRIORITY_CLASSES
    charted = {v for r in graph.of_type(HELM_RELEASE, region) for _, v in strings(r.inputs.get("values"))}
    for workload in graph.pod_bearers(region):
        name = workload.pod_spec().get("priorityClassName")
        if not isinstance(name, str) or not name or name in made or name in charted:
            continue
        yield Finding(
            RULE,
            workload.urn,
            f"{workload.kind} {workload.namespace}/{workload.name} runs its pods at priorityClassName {name!r}, which "
            f"no PriorityClass the program creates is named (there are: {', '.join(sorted(made))}): the Priority "
            "admission plugin rejects every pod (no PriorityClass with that name was found), so none ever runs",
            f"create PriorityClass {name!r} before the {workload.kind}, or name an existing one",
        )

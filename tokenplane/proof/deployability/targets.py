"""References by name between Kubernetes objects resolve to an object that exists and is what they expect.

- An HPA's or ScaledObject's ``scaleTargetRef`` names a workload of that kind in the same namespace; one that does
  not exist leaves the HPA in FailedGetScale (KEDA's ScaledObject: "ScaledObjectCheckFailed") and nothing scales.
- The group/version a scale target names serves its kind on the cluster's Kubernetes (its EKS cluster's
  ``version``, else the platform's default): the HPA controller maps ``scaleTargetRef``'s group and kind to a REST
  resource (any version of the group: ``RESTMappings(GroupKind)`` in kubernetes' podautoscaler/horizontal.go), KEDA
  its group, version and kind (``ParseGVKR``: ``RESTMapping(GroupKind, version)``; unset means ``apps/v1``), the VPA
  recommender its ``targetRef``'s group and kind. A group that no longer serves the kind (``extensions/v1beta1``
  Deployments went in 1.16) leaves the HPA at FailedGetScale ("no matches for kind "Deployment" in group
  "extensions""): it reports AbleToScale=False and never scales. Built-in kinds are judged by the schemas the render
  validates objects with (``render.served_versions``), a CRD's kind by the apiVersion of the program's object of
  that kind and name.
- A PodDisruptionBudget's selector matches some pod the program runs in its namespace; one that matches none guards
  nothing (the disruption controller reports "NoPods"), so the drain it was written for is unprotected.
- An Ingress's ``ingressClassName`` names an IngressClass the program creates, or that a controller it installs
  creates (the AWS Load Balancer Controller's chart makes ``alb``; ingress-nginx's makes ``nginx``); with none, no
  controller reconciles the Ingress and it never gets an address.
- An Ingress's or TargetGroupBinding's backend names a Service of its namespace, and a port that Service has; the
  controller otherwise builds no targets.
- A pod template's ``priorityClassName`` names a PriorityClass the program creates or one every cluster has
  (``system-cluster-critical``, ``system-node-critical``); with none, the Priority admission plugin rejects every
  pod ("no PriorityClass with name X was found"), so the workload never has one. The same for its
  ``runtimeClassName`` (a RuntimeClass; EKS creates none) and ``schedulerName`` (``default-scheduler``, or a
  scheduler the program runs: a pod whose argv carries the name).
Programs deploying into an existing cluster (``--assume cluster``) may use objects it has, so Ingress and priority
classes are not judged there, nor a priority class a Helm release's values name (its chart may create it). A Helm chart's workloads are not in the graph, so in a namespace a Helm release installs into, a scale
target or a PDB is judged only as a typo: a name one or two edits from one of the program's workloads there, or a
selector that selects none of the program's or the modelled chart pods there and would select one of the program's
with one value corrected (``selectors.typo_fix``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.proof.deployability.cluster_names import strings
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject, lookup
from tokenplane.proof.deployability.reachability import Region, regions
from tokenplane.proof.deployability.selectors import typo_fix, typo_pods
from tokenplane.proof.deployability.service_addresses import chart_service_manifests
from tokenplane.proof.deployability.typos import near_miss
from tokenplane.proof.render import built_in_group, served_versions
from tokenplane.spec import DEFAULT_KUBERNETES_VERSION

RULE = "target-exists"
SCALERS = ("HorizontalPodAutoscaler", "ScaledObject")
EKS_CLUSTER = "aws:eks/cluster:Cluster"
KEDA_DEFAULT_TARGET = "apps/v1"  # ScaledObject's scaleTargetRef.apiVersion when unset (KEDA's ParseGVKR)
# Object references by apiVersion/kind: where each kind keeps it, and whether the version counts (KEDA's does).
TARGET_REFS = {
    "HorizontalPodAutoscaler": ("spec.scaleTargetRef", False),
    "ScaledObject": ("spec.scaleTargetRef", True),
    "VerticalPodAutoscaler": ("spec.targetRef", False),
}
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
        yield from _target_api_versions(graph, region)
        yield from _disruption_budgets(graph, modelled[region], workloads, charted)
        yield from _backends(graph, region, charted)
        if not graph.assumed.cluster:
            yield from _ingress_classes(graph, region)
            yield from _cluster_references(graph, region)


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


def kubernetes_version(graph: Graph, region: str) -> str:
    """The Kubernetes minor the region's cluster runs: its EKS cluster's ``version``, else the platform's default."""
    versions = {str(c.inputs.get("version")) for c in graph.of_type(EKS_CLUSTER, region) if c.inputs.get("version")}
    return versions.pop() if len(versions) == 1 else DEFAULT_KUBERNETES_VERSION


def _target_api_versions(graph: Graph, region: str) -> Iterator[Finding]:
    version = kubernetes_version(graph, region)
    for scaler in graph.kube(region, *TARGET_REFS):
        path, exact = TARGET_REFS[scaler.kind]
        ref = lookup(scaler.manifest, path)
        if not isinstance(ref, dict):
            continue
        kind, name = (
            str(ref.get("kind") or ("Deployment" if scaler.kind == "ScaledObject" else "")),
            str(ref.get("name")),
        )
        if not kind:
            continue
        api = ref.get("apiVersion") or (KEDA_DEFAULT_TARGET if scaler.kind == "ScaledObject" else None)
        if not isinstance(api, str):
            continue  # unset on an HPA: the API server's concern, not judged here
        group = api.rsplit("/", 1)[0] if "/" in api else ""
        if built_in_group(api):
            served = served_versions(group, kind, version)
            where = f"Kubernetes {version}"
        else:
            # A CRD's kind: the program's object of that kind and name is created in a version its CRD serves.
            made = [o for o in graph.kube(region, kind) if o.namespace == scaler.namespace and o.name == name]
            if not made:
                continue
            served = tuple(sorted({str(o.manifest.get("apiVersion")) for o in made}))
            where = f"its CRD (the program creates {kind} {name} as {', '.join(served)})"
        groups = {s.rsplit("/", 1)[0] if "/" in s else "" for s in served}
        if (api in served) if exact else (group in groups):
            continue
        # Where the kind is served instead: the apiVersions the program creates it in.
        others = sorted({str(o.manifest.get("apiVersion")) for o in graph.kube(region, kind)} - {api})
        wanted = served[-1] if served else (others[0] if others else None)
        served_text = (
            f"it serves {kind} as {', '.join(served)}"
            if served
            else f"it serves no {kind} in {group or 'the core group'}"
            + (f"; the program creates its {kind}s as {', '.join(others)}" if others else "")
        )
        what = f'version "{api}"' if exact and group in groups else f'group "{group}"'
        outcome = (
            "KEDA marks the ScaledObject not Ready (ScaledObjectCheckFailed) and never scales it"
            if scaler.kind == "ScaledObject"
            else "the autoscaler reports AbleToScale=False (FailedGetScale) and never scales it"
        )
        field = path.rsplit(".", 1)[-1]
        yield Finding(
            RULE,
            scaler.urn,
            f"{scaler.kind} {scaler.namespace}/{scaler.name}'s {field} names {kind} {name!r} in {api}, which "
            f'{where} does not serve ({served_text}): no REST mapping matches kind "{kind}" in {what}, so {outcome}',
            f"set {field}.apiVersion to {wanted}" if wanted else "name an apiVersion that serves the kind",
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


def _backend_refs(obj: KubeObject) -> Iterator[tuple[str, Any]]:
    """(Service name, port: a number, a name, or None) of each backend an Ingress or TargetGroupBinding names."""
    if obj.kind == "TargetGroupBinding":
        ref = lookup(obj.manifest, "spec.serviceRef") or {}
        if isinstance(ref.get("name"), str):
            yield ref["name"], ref.get("port")
        return
    backends = [lookup(obj.manifest, "spec.defaultBackend")]
    for rule in lookup(obj.manifest, "spec.rules") or []:
        backends += [p.get("backend") for p in lookup(rule, "http.paths") or [] if isinstance(p, dict)]
    for backend in backends:
        service = lookup(backend, "service") if isinstance(backend, dict) else None
        if isinstance(service, dict) and isinstance(service.get("name"), str):
            port = service.get("port") or {}
            yield service["name"], port.get("number", port.get("name"))


def _backends(graph: Graph, region: str, charted: set[str]) -> Iterator[Finding]:
    """An Ingress's or TargetGroupBinding's backend is a Service of its namespace, on a port that Service has: the
    load balancer controller resolves the Service to build the target group and reports an error event otherwise
    (no targets: every request answers 503), https://kubernetes.io/docs/concepts/services-networking/ingress/."""
    charts = [KubeObject(r, m) for r in graph.of_type(HELM_RELEASE, region) for m in chart_service_manifests(r)]
    services = {(s.namespace, s.name): s for s in [*charts, *graph.kube(region, "Service")]}
    alb_classes = _alb_classes(graph, region)
    for obj in graph.kube(region, "Ingress", "TargetGroupBinding"):
        for name, port in _backend_refs(obj):
            service = services.get((obj.namespace, name))
            if service is None:
                if obj.namespace in charted:
                    continue  # a chart there may make it
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{obj.kind} {obj.namespace}/{obj.name} sends traffic to Service {name!r}, which the program does not "
                    f"create in {obj.namespace}: the load balancer controller finds no backend (an error event, no "
                    "targets), so every request through it fails",
                    "name a Service of the same namespace (an Ingress reaches no other namespace's)",
                )
                continue
            yield from _instance_targets(alb_classes, obj, service)
            if service.resource.type == HELM_RELEASE:
                continue  # a chart's Service: its type is read from the values, its ports are not all modelled
            ports = [p for p in lookup(service.manifest, "spec.ports") or [] if isinstance(p, dict)]
            if port is None or any(port in (p.get("port"), p.get("name")) for p in ports):
                continue
            have = ", ".join(str(p.get("name") or p.get("port")) for p in ports)
            yield Finding(
                RULE,
                obj.urn,
                f"{obj.kind} {obj.namespace}/{obj.name} sends traffic to Service {name} port {port!r}, which that Service "
                f"does not have (its ports: {have}): the controller finds no such port and registers no targets",
                f"name one of the Service's ports ({have}), by number or name",
            )


TARGET_TYPE = "alb.ingress.kubernetes.io/target-type"
ALB_CONTROLLER = "ingress.k8s.aws/alb"


def _alb_classes(graph: Graph, region: str) -> set[str]:
    """The IngressClasses the AWS Load Balancer Controller serves: its chart's (``ingressClass``, default ``alb``)
    and any the program makes for its controller name."""
    chart, (default, path) = "aws-load-balancer-controller", INGRESS_CHARTS["aws-load-balancer-controller"]
    out = {str(lookup(r.inputs.get("values") or {}, path) or default) for r in graph.releases(region, chart)}
    return out | {
        c.name for c in graph.kube(region, "IngressClass") if lookup(c.manifest, "spec.controller") == ALB_CONTROLLER
    }


def _instance_targets(alb_classes: set[str], ingress: KubeObject, service: KubeObject) -> Iterator[Finding]:
    """An ALB Ingress with instance targets (the controller's default) routes to the Service's NodePort, which a
    ClusterIP Service does not have: the controller fails to build the target group ("TargetGroup port is empty.
    When using Instance targets, your service must be of type 'NodePort' or 'LoadBalancer'") and makes no ALB
    (https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/ingress/annotations/#target-type)."""
    if ingress.kind != "Ingress" or lookup(ingress.manifest, "spec.ingressClassName") not in alb_classes:
        return
    annotations = {
        **(lookup(ingress.manifest, "metadata.annotations") or {}),
        **(lookup(service.manifest, "metadata.annotations") or {}),  # the Service's overrides the Ingress's
    }
    kind = lookup(service.manifest, "spec.type") or "ClusterIP"
    if annotations.get(TARGET_TYPE, "instance") == "instance" and kind == "ClusterIP":
        yield Finding(
            RULE,
            ingress.urn,
            f"Ingress {ingress.namespace}/{ingress.name} sends the ALB to Service {service.name} with instance targets "
            f"({TARGET_TYPE} {'unset: the default' if TARGET_TYPE not in annotations else 'instance'}), which route "
            "to the Service's NodePort, and a ClusterIP Service has none: the controller refuses the target group "
            "(TargetGroup port is empty) and never makes the ALB",
            f"annotate the Ingress {TARGET_TYPE}: ip (the pods are targeted directly; the VPC CNI gives them VPC "
            "addresses), or make the Service a NodePort",
        )


BUILT_IN_PRIORITY_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})


@dataclass(frozen=True)
class ClusterReference:
    """A pod spec field naming a cluster-scoped object, what the cluster has of it unasked, and what a missing one
    does."""

    field: str
    kind: str
    built_in: frozenset[str]
    refusal: str


# The kinds a pod names by a field of its own spec: each is refused or never placed when the name resolves to
# nothing (Priority admission; RuntimeClass admission, https://kubernetes.io/docs/concepts/containers/runtime-class/;
# a scheduler no pod of the cluster runs leaves the pod unscheduled,
# https://kubernetes.io/docs/tasks/extend-kubernetes/configure-multiple-schedulers/).
CLUSTER_REFERENCES = (
    ClusterReference(
        "priorityClassName",
        "PriorityClass",
        BUILT_IN_PRIORITY_CLASSES,
        "the Priority admission plugin rejects every pod (no PriorityClass with that name was found), so none ever runs",
    ),
    ClusterReference(
        "runtimeClassName",
        "RuntimeClass",
        frozenset(),
        "the RuntimeClass admission plugin rejects every pod (RuntimeClass not found), so none ever runs; EKS "
        "creates no RuntimeClass (its NVIDIA AMIs make the NVIDIA runtime containerd's default instead)",
    ),
    ClusterReference(
        "schedulerName",
        "scheduler",
        frozenset({"default-scheduler"}),
        "no scheduler of that name runs, so no one binds its pods: they stay Pending with no event",
    ),
)


def _cluster_references(graph: Graph, region: str) -> Iterator[Finding]:
    charted = {v for r in graph.of_type(HELM_RELEASE, region) for _, v in strings(r.inputs.get("values"))}
    argv = {a for w in graph.pod_bearers(region) for c in w.pod_spec().get("containers") or [] for a in _args(c)}
    for reference in CLUSTER_REFERENCES:
        made = {o.name for o in graph.kube(region, reference.kind)} | reference.built_in
        for workload in graph.pod_bearers(region):
            name = workload.pod_spec().get(reference.field)
            # A chart may make it from its values; a scheduler is a pod the program runs with its name in its argv.
            if not isinstance(name, str) or not name or name in made or name in charted or _in_argv(name, argv):
                continue
            there = f" (there are: {', '.join(sorted(made))})" if made else ""
            yield Finding(
                RULE,
                workload.urn,
                f"{workload.kind} {workload.namespace}/{workload.name} runs its pods with {reference.field} {name!r}, "
                f"which names no {reference.kind} the program creates{there}: {reference.refusal}",
                f"create {reference.kind} {name!r} before the {workload.kind}, or name an existing one (or drop "
                f"{reference.field})",
            )


def _args(container: Any) -> list[str]:
    if not isinstance(container, dict):
        return []
    return [str(a) for key in ("command", "args") for a in container.get(key) or []]


def _in_argv(name: str, argv: set[str]) -> bool:
    return any(name == a or a.endswith(f"={name}") for a in argv)

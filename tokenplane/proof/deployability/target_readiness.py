"""A rollout never removes the last healthy load-balancer target: pods behind ip targets carry a readiness gate.

With ip targets the AWS Load Balancer Controller registers each pod's IP in the target group itself (an ALB
Ingress with ``alb.ingress.kubernetes.io/target-type: ip``, an NLB Service with
``service.beta.kubernetes.io/aws-load-balancer-nlb-target-type: ip``). A new pod is Ready as soon as its own
readiness probe passes, long before the load balancer has registered it and seen it pass its health checks, so a
RollingUpdate terminates the old pods while the only targets the load balancer considers healthy are theirs: every
rollout answers 502/503 (ALB) or resets connections (NLB) until the new targets turn healthy. The controller's fix
is its pod readiness gate: in a namespace labelled ``elbv2.k8s.aws/pod-readiness-gate-inject: enabled`` its
webhook adds a ``target-health.elbv2.k8s.aws/...`` condition to every pod, and a pod is Ready only once its target
is healthy (https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/deploy/pod_readiness_gate/, the
chart's ``mpod.elbv2.k8s.aws`` webhook and its namespaceSelector). Instance targets (the nodes, via NodePort) are
registered once and do not change with a rollout.

Judged for Deployments and StatefulSets whose pod template a Service selects that is such a target (an ALB
Ingress's backend Service with target-type ip, or an NLB Service with ip targets), in a namespace the program
creates (its labels are known). Passes with the namespace label, a pod template that already lists a
``target-health.elbv2.k8s.aws/`` readiness gate, or a ``minReadySeconds`` at least the target group's time to turn
healthy (healthy threshold x interval, the annotations' or the controller's defaults: ALB 2 x 15 s, NLB 3 x 10 s).
It cannot see: target-type set by an IngressClassParams, the chart's ``webhookNamespaceSelectors`` overrides, and
the registration delay itself (minReadySeconds is held to the health checks only).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.lb_permissions import is_alb
from tokenplane.proof.deployability.lb_subnets import default_target_type, ingress_backends

RULE = "ip-target-readiness"
INJECT_LABEL = "elbv2.k8s.aws/pod-readiness-gate-inject"
GATE_PREFIX = "target-health.elbv2.k8s.aws/"
ALB = "alb.ingress.kubernetes.io/"
NLB = "service.beta.kubernetes.io/aws-load-balancer-"
# The controller's target-group health-check defaults (its annotation docs): (healthy threshold, interval seconds).
ALB_DEFAULTS = (2, 15)
NLB_DEFAULTS = (3, 10)


def _annotations(obj: KubeObject) -> dict[str, Any]:
    return (obj.manifest.get("metadata") or {}).get("annotations") or {}


def _int(value: Any, default: int) -> int:
    text = str(value).strip() if value is not None else ""
    return int(text) if text.isdigit() else default


def _ip_targets(graph: Graph, region: str) -> dict[tuple[str, str], tuple[str, int]]:
    """(namespace, Service) -> (what makes it an ip target, seconds until a new target is healthy)."""
    out: dict[tuple[str, str], tuple[str, int]] = {}
    services = {(s.namespace, s.name): s for s in graph.kube(region, "Service")}
    chart_default = default_target_type(graph, region)
    for ingress in graph.kube(region, "Ingress"):
        if not is_alb(ingress):
            continue
        notes = _annotations(ingress)
        healthy = _int(notes.get(f"{ALB}healthy-threshold-count"), ALB_DEFAULTS[0])
        interval = _int(notes.get(f"{ALB}healthcheck-interval-seconds"), ALB_DEFAULTS[1])
        default = notes.get(f"{ALB}target-type", chart_default)
        for name in ingress_backends(ingress.manifest):
            service = services.get((ingress.namespace, name))
            # The Service's annotation overrides the Ingress's, which overrides the controller's default.
            target = _annotations(service).get(f"{ALB}target-type", default) if service is not None else default
            if str(target).strip() == "ip":
                out[(ingress.namespace, name)] = (f"ALB Ingress {ingress.namespace}/{ingress.name}", healthy * interval)
    for service in graph.kube(region, "Service"):
        notes = _annotations(service)
        spec = service.manifest.get("spec") or {}
        if spec.get("type") != "LoadBalancer" or str(notes.get(f"{NLB}nlb-target-type", "")).strip() != "ip":
            continue
        healthy = _int(notes.get(f"{NLB}healthcheck-healthy-threshold"), NLB_DEFAULTS[0])
        interval = _int(notes.get(f"{NLB}healthcheck-interval"), NLB_DEFAULTS[1])
        out[(service.namespace, service.name)] = (f"NLB Service {service.namespace}/{service.name}", healthy * interval)
    return out


def _selected(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        targets = _ip_targets(graph, region)
        if not targets:
            continue
        namespaces = {n.name: n for n in graph.kube(region, "Namespace")}
        services = {(s.namespace, s.name): s for s in graph.kube(region, "Service")}
        for workload in graph.kube(region, "Deployment", "StatefulSet"):
            namespace = namespaces.get(workload.namespace)
            if namespace is None:
                continue  # a namespace the program does not create: its labels are unknown
            labels = (namespace.manifest.get("metadata") or {}).get("labels") or {}
            if labels.get(INJECT_LABEL) == "enabled":
                continue
            template = workload.pod_template()
            pod_labels = (template.get("metadata") or {}).get("labels") or {}
            gates = (template.get("spec") or {}).get("readinessGates") or []
            if any(str((g or {}).get("conditionType", "")).startswith(GATE_PREFIX) for g in gates):
                continue
            min_ready = (workload.manifest.get("spec") or {}).get("minReadySeconds") or 0
            for (ns, name), (via, healthy_after) in sorted(targets.items()):
                service = services.get((ns, name))
                if ns != workload.namespace or service is None:
                    continue
                if not _selected((service.manifest.get("spec") or {}).get("selector") or {}, pod_labels):
                    continue
                if isinstance(min_ready, int) and min_ready >= healthy_after:
                    continue
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name}'s pods are ip targets of {via} (Service "
                    f"{name}), and namespace {workload.namespace} lacks the label {INJECT_LABEL}: enabled: a new pod "
                    "is Ready on its own probe before the load balancer has registered it and found it healthy "
                    f"(at least {healthy_after} s of health checks), so every rollout removes old pods whose targets "
                    "are the only healthy ones and the load balancer answers 502/503 until the new ones pass",
                    f"label namespace {workload.namespace} {INJECT_LABEL}=enabled so the controller injects its "
                    "target-health readiness gate (its webhook admits pods, which a ReplicaSet retries until it answers)",
                )
                break

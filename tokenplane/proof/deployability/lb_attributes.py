"""Load balancer and target group attributes that Elastic Load Balancing refuses, set through the AWS Load Balancer
Controller's annotations.

The controller copies ``...load-balancer-attributes`` and ``...target-group-attributes`` (``key=value`` pairs, comma
separated: its ``ParseStringMapAnnotation``) into ModifyLoadBalancerAttributes and ModifyTargetGroupAttributes.
Elastic Load Balancing refuses a key that the load balancer's type does not have (an ALB's
``idle_timeout.timeout_seconds`` on an NLB is "not supported on load balancers with type 'network'"), a key it does
not know, and a value outside the attribute's range. The controller records FailedDeployModel on every reconcile and
the object never gets an address, so ``pulumi up`` waits out the Service's or Ingress's timeout. And one the service
takes that breaks later: ``deletion_protection.enabled=true`` makes the controller refuse to delete the load balancer
and keep the object's finalizer (kubernetes-sigs/aws-load-balancer-controller#2172 and #3957: "deletion_protection
is enabled, cannot delete the service"), so ``pulumi destroy`` or a replacement of the object hangs.

Which keys each type has is read from botocore's ELBv2 model: the ``Key`` documentation of ``LoadBalancerAttribute``
and ``TargetGroupAttribute`` is the API reference's text, sectioned by the load balancer types that support each key.
The values each key takes are the ones that text states (``VALUES`` below; a test holds each range to the text).
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject
from tokenplane.proof.deployability.ingress_claimed import by_alb_controller
from tokenplane.proof.deployability.load_balancers import by_controller

RULE = "lb-attributes"
ALB, NLB = "application", "network"
SERVICE = "service.beta.kubernetes.io/aws-load-balancer-"
INGRESS = "alb.ingress.kubernetes.io/"
# (annotation, the shape its pairs are, the load balancer type it sets)
SERVICE_ANNOTATIONS = ((SERVICE + "attributes", "LoadBalancerAttribute"),
                       (SERVICE + "target-group-attributes", "TargetGroupAttribute"))  # fmt: skip
INGRESS_ANNOTATIONS = ((INGRESS + "load-balancer-attributes", "LoadBalancerAttribute"),
                       (INGRESS + "target-group-attributes", "TargetGroupAttribute"))  # fmt: skip
# A section's heading -> the types it names ("supported by all load balancers", "only by Network Load Balancers").
TYPE_WORDS = {"Application": ALB, "Network": NLB, "Gateway": "gateway"}
ALL_TYPES = frozenset({ALB, NLB, "gateway"})

Check = Callable[[str], bool]


def _one_of(*allowed: str) -> tuple[Check, str]:
    return (lambda v: v in allowed), " or ".join(allowed)


def _range(low: int, high: int, *words: str) -> tuple[Check, str]:
    def ok(value: str) -> bool:
        return value in words or (value.isdigit() and low <= int(value) <= high)

    return ok, " or ".join((f"a whole number from {low} to {high}", *words))


BOOLEAN = _one_of("true", "false")
# Values per key, as the API reference states them (the text each range is quoted from is in the test).
VALUES: dict[str, tuple[Check, str]] = {
    "idle_timeout.timeout_seconds": _range(1, 4000),
    "client_keep_alive.seconds": _range(60, 604800),
    "routing.http.desync_mitigation_mode": _one_of("monitor", "defensive", "strictest"),
    "routing.http.xff_header_processing.mode": _one_of("append", "preserve", "remove"),
    "dns_record.client_routing_policy": _one_of(
        "availability_zone_affinity", "partial_availability_zone_affinity", "any_availability_zone"
    ),
    "secondary_ips.auto_assigned.per_subnet": _range(0, 7),
    "deregistration_delay.timeout_seconds": _range(0, 3600),
    "load_balancing.algorithm.type": _one_of("round_robin", "least_outstanding_requests", "weighted_random"),
    "load_balancing.algorithm.anomaly_mitigation": _one_of("on", "off"),
    "slow_start.duration_seconds": _range(30, 900, "0"),  # 0 is the default: slow start off
    "stickiness.app_cookie.duration_seconds": _range(1, 604800),
    "stickiness.lb_cookie.duration_seconds": _range(1, 604800),
    "target_group_health.dns_failover.minimum_healthy_targets.percentage": _range(1, 100, "off"),
    "target_group_health.unhealthy_state_routing.minimum_healthy_targets.percentage": _range(1, 100, "off"),
}
# Values that depend on the load balancer's type.
STICKINESS = {ALB: _one_of("lb_cookie", "app_cookie"), NLB: _one_of("source_ip")}
TARGET_GROUP_CROSS_ZONE = _one_of("true", "false", "use_load_balancer_configuration")


@cache
def supported(shape: str) -> dict[str, frozenset[str]]:
    """Each attribute key of ``shape`` -> the load balancer types that support it, from botocore's ELBv2 model."""
    import botocore  # type: ignore[import-untyped]  # no stubs; only its data files are read

    model = Path(botocore.__file__).parent / "data" / "elbv2" / "2015-12-01" / "service-2.json.gz"
    with gzip.open(model) as f:
        doc = json.load(f)["shapes"][shape]["members"]["Key"]["documentation"]
    keys: dict[str, frozenset[str]] = {}
    for section in re.split(r"<p>The following attributes? (?:is|are) supported ", doc)[1:]:
        heading = section[: section.index("</p>")]
        types = ALL_TYPES if "all load balancers" in heading else frozenset(
            t for word, t in TYPE_WORDS.items() if word in heading
        )  # fmt: skip
        # A key is an item's first code span with a dot in it; the values listed under a key have none.
        for key in re.findall(r"<li> <p> ?<code>([a-z0-9_]+\.[a-z0-9_.]+)</code>", section):
            keys[key] = keys.get(key, frozenset()) | types
    return keys


def check(graph: Graph) -> Iterator[Finding]:
    # Only the objects the controller builds: another controller ignores these annotations.
    for region in graph.regions():
        for service in graph.kube(region, "Service"):
            if by_controller(graph, region, service):
                yield from _annotations(service, SERVICE_ANNOTATIONS, NLB)
        for ingress in graph.kube(region, "Ingress"):
            if by_alb_controller(graph, region, ingress):
                yield from _annotations(ingress, INGRESS_ANNOTATIONS, ALB)


def _annotations(obj: KubeObject, annotations: tuple[tuple[str, str], ...], lb_type: str) -> Iterator[Finding]:
    notes = (obj.manifest.get("metadata") or {}).get("annotations") or {}
    for annotation, shape in annotations:
        raw = notes.get(annotation)
        if not isinstance(raw, str) or not raw.strip():
            continue
        keys = supported(shape)
        for pair in (p.strip() for p in raw.split(",") if p.strip()):
            key, sep, value = (part.strip() for part in pair.partition("="))
            if not sep:
                yield _refused(
                    obj, annotation, pair,
                    "the controller cannot read it (failed to parse stringMap annotation: not key=value)",
                    "FailedBuildModel", "write key=value pairs, comma separated",
                )  # fmt: skip
            elif key == "deletion_protection.enabled" and value == "true" and shape == "LoadBalancerAttribute":
                # The controller refuses to delete a protected load balancer and keeps the object's finalizer:
                # deleting or replacing the object hangs (aws-load-balancer-controller#2172, #3957).
                yield Finding(
                    RULE,
                    obj.urn,
                    f"{obj.kind} {obj.namespace}/{obj.name} sets {pair!r} in {annotation}: the Load Balancer "
                    "Controller then refuses to delete its load balancer ('deletion_protection is enabled, cannot "
                    "delete the service') and keeps the object's finalizer, so pulumi destroy, and any update that "
                    "replaces the object, waits on its deletion until it times out",
                    "protect the object in Pulumi instead (opts=pulumi.ResourceOptions(protect=True)), which refuses "
                    "the delete before anything starts; or set the attribute false before every delete",
                )
            elif (problem := _problem(shape, keys, lb_type, key, value)) is not None:
                error, fix = problem
                lb = "ALB" if lb_type == ALB else "NLB"
                said = f"Elastic Load Balancing refuses it for its {lb} (ValidationError: {error})"
                yield _refused(obj, annotation, pair, said, "FailedDeployModel", fix)


def _problem(shape: str, keys: dict[str, frozenset[str]], lb_type: str, key: str, value: str) -> tuple[str, str] | None:
    """(what Elastic Load Balancing says, the fix), or None when it takes the pair."""
    kind = "Load balancer" if shape == "LoadBalancerAttribute" else "Target group"
    if key not in keys:
        return f"{kind} attribute key '{key}' is not recognized", "use a key the API reference lists for the type"
    if lb_type not in keys[key]:
        takes = ", ".join(sorted(keys[key]))
        return (
            f"{kind} attribute key '{key}' is not supported on load balancers with type '{lb_type}' (only {takes})",
            "drop it; on an NLB use its own attributes (a listener's tcp.idle_timeout.seconds for idle time)"
            if lb_type == NLB
            else "drop it",
        )
    if key == "stickiness.type":
        ok, allowed = STICKINESS.get(lb_type, BOOLEAN)
    elif key == "load_balancing.cross_zone.enabled" and shape == "TargetGroupAttribute":
        ok, allowed = TARGET_GROUP_CROSS_ZONE
    elif key.endswith(".enabled"):
        ok, allowed = BOOLEAN
    elif key in VALUES:
        ok, allowed = VALUES[key]
    else:
        return None
    if ok(value):
        return None
    return f"{kind} attribute '{key}' value '{value}' is not valid", f"set {key} to {allowed}"


def _refused(obj: KubeObject, annotation: str, pair: str, said: str, event: str, fix: str) -> Finding:
    return Finding(
        RULE,
        obj.urn,
        f"{obj.kind} {obj.namespace}/{obj.name} sets {pair!r} in {annotation}: {said}, so the AWS Load Balancer "
        f"Controller fails every reconcile ({event}) and the object never gets an address",
        f"{fix} ({annotation})",
    )

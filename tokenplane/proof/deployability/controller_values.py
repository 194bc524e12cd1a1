"""Values a controller refuses: the API server accepts the object, and the controller never acts on it.

Annotations and flags are free text to the API server; the controller that reads them validates them on every
reconcile, records a warning event and builds nothing (or exits at start), so ``pulumi up`` waits for a load
balancer address that never comes, or an autoscaler that never scales. Each value set below is the controller's
own:

- AWS Load Balancer Controller, Services (``service.beta.kubernetes.io/aws-load-balancer-*``) and Ingresses
  (``alb.ingress.kubernetes.io/*``), https://kubernetes-sigs.github.io/aws-load-balancer-controller/latest/guide/
  service/annotations/ and .../ingress/annotations/; its model builders (``pkg/service/model_build_*.go``,
  ``pkg/ingress/model_build_*.go``) fail the reconcile with ``unknown scheme: X``, ``unknown target type: X``,
  ``unknown IPAddressType: X`` and ``failed to parse listen-ports configuration``; health-check settings outside the
  Elastic Load Balancing API's ranges (interval 5-300 s, timeout 2-120 s, thresholds 2-10: CreateTargetGroup,
  ``ValidationError``) fail its CreateTargetGroup call; ``ssl-ports`` naming no port of the Service terminates
  TLS on no listener, so the certificate is never used. Its Ingress model builder (v2.11.0, the pinned chart's
  controller) also refuses, for an ALB Ingress: a ``Prefix`` or ``Exact`` path holding ``*`` or ``?``
  (``model_build_listener_rules.go``: "prefix path shouldn't contain wildcards: /api/*"; for Prefix it generates
  ``/api`` and ``/api/*`` itself; ``ImplementationSpecific`` paths are passed through as ALB path patterns), a
  ``group.name`` that is not lower-case alphanumerics, '-' or '.' starting and ending alphanumeric, or longer than
  63 (``group_loader.go``: "invalid ingress group"), a ``group.order`` that is not a whole number in [-1000, 1000]
  ("explicit Ingress group order must be within [-1000:1000]"), and one group whose Ingresses set different
  ``scheme`` values (``model_build_load_balancer.go``: "conflicting scheme"). An ALB target group's health check
  interval must be greater than its timeout (CreateTargetGroup / ModifyTargetGroup: "ValidationError: Health check
  interval must be greater than the timeout",
  https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-health-checks.html; hashicorp/
  terraform-provider-aws#48071), so an Ingress whose effective ``healthcheck-interval-seconds`` is not above its
  ``healthcheck-timeout-seconds`` (the controller's defaults 15 and 5 for what is unset: the Ingress annotations
  page, "Health Check") never gets its target group; a backend Service's own ``alb.ingress.kubernetes.io/``
  health-check annotations override the Ingress's for its target group, as the controller merges them. An NLB
  Service's health check is not judged for this (the controller's own NLB defaults are an equal 10 and 10).
- Cluster Autoscaler's ``--expander`` (cluster-autoscaler/FAQ.md, "What are Expanders?"; ``expander/factory``:
  "Expander X not supported", and the process exits): random, most-pods, least-waste, price, priority, grpc; on
  AWS ``price`` is not implemented (the FAQ: GCE, GKE and Equinix Metal only) and the autoscaler does not start.
- ExternalDNS' ``policy`` (sync, upsert-only, create-only) and ``registry`` (txt, noop, dynamodb, aws-sd), from
  its flags (``pkg/apis/externaldns/types.go``): another value fails flag parsing and the pod exits, so no record
  is ever written.
- The CronJob controller's ``startingDeadlineSeconds``: the API server takes any value not negative, but the
  controller checks schedules about every 10 seconds and counts a run not started within the deadline of its time as
  missed, so a deadline under 10 seconds may keep the CronJob from ever being scheduled
  (https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#cron-job-limitations: "If
  startingDeadlineSeconds is set to a value less than 10 seconds, the CronJob may not be scheduled"). The caution
  dates from the polling controller; the one that replaced it in 1.21 requeues each CronJob for its due time, so a
  run is often still created, but any delay past the deadline (controller restart or leader change, a busy queue,
  clock skew) skips it: the finding says "may". Unset, or 10 and more, passes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import HELM_RELEASE, Graph, KubeObject
from tokenplane.proof.deployability.lb_permissions import is_alb
from tokenplane.proof.deployability.load_balancers import needs_controller
from tokenplane.proof.render import RenderedResource

RULE = "controller-values"
NLB = "service.beta.kubernetes.io/aws-load-balancer-"
ALB = "alb.ingress.kubernetes.io/"
SCHEMES = ("internal", "internet-facing")
# Annotation suffix -> the values the controller accepts (exact, as its switch statements compare them).
SERVICE_ENUMS: dict[str, tuple[str, ...]] = {
    "scheme": SCHEMES,
    "nlb-target-type": ("instance", "ip"),
    "ip-address-type": ("ipv4", "dualstack"),
    "healthcheck-protocol": ("TCP", "HTTP", "HTTPS", "tcp", "http", "https"),
}
INGRESS_ENUMS: dict[str, tuple[str, ...]] = {
    "scheme": SCHEMES,
    "target-type": ("instance", "ip"),
    "ip-address-type": ("ipv4", "dualstack", "dualstack-without-public-ipv4"),
    "backend-protocol": ("HTTP", "HTTPS", "http", "https"),
    "healthcheck-protocol": ("HTTP", "HTTPS", "http", "https"),
}
# Elastic Load Balancing's CreateTargetGroup ranges (seconds, counts).
HEALTH_RANGES: dict[str, tuple[int, int]] = {
    "healthcheck-interval": (5, 300),
    "healthcheck-interval-seconds": (5, 300),
    "healthcheck-timeout": (2, 120),
    "healthcheck-timeout-seconds": (2, 120),
    "healthcheck-healthy-threshold": (2, 10),
    "healthy-threshold-count": (2, 10),
    "healthcheck-unhealthy-threshold": (2, 10),
    "unhealthy-threshold-count": (2, 10),
}
LISTEN_PROTOCOLS = ("HTTP", "HTTPS")
# The controller's Ingress health-check defaults (seconds), for the annotations left unset.
INGRESS_HEALTH_DEFAULTS = {"healthcheck-interval-seconds": 15, "healthcheck-timeout-seconds": 5}
EXPANDERS = ("random", "most-pods", "least-waste", "price", "priority", "grpc")
EXPANDERS_NOT_ON_AWS = ("price",)
# The CronJob controller's check period (the cron-jobs page): a starting deadline shorter than it can miss every run.
CRONJOB_CHECK_SECONDS = 10
# The controller's Ingress group limits (pkg/ingress/group_loader.go at v2.11.0).
GROUP_NAME = re.compile(r"^([a-z0-9][-a-z0-9.]*)?[a-z0-9]$")
GROUP_NAME_MAX = 63
GROUP_ORDER = (-1000, 1000)
# The path types whose paths the controller turns into ALB path patterns itself, refusing wildcards in them.
LITERAL_PATH_TYPES = ("Prefix", "Exact")
# Elastic Load Balancing's CreateLoadBalancer Name (the controller itself checks only the length).
LB_NAME_MAX = 32
LB_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$")
LB_NAME_RESERVED_PREFIX = "internal-"
EXTERNAL_DNS_ENUMS: dict[str, tuple[str, ...]] = {
    "policy": ("sync", "upsert-only", "create-only"),
    "registry": ("txt", "noop", "dynamodb", "aws-sd"),
}


def check(graph: Graph) -> Iterator[Finding]:
    for service in graph.kube(None, "Service"):
        yield from _annotations(service, NLB, SERVICE_ENUMS, _service_ports(service))
        if needs_controller(service.manifest):
            yield from _load_balancer_name(service, f"{NLB}name")
    groups: dict[str, list[KubeObject]] = {}
    for ingress in graph.kube(None, "Ingress"):
        yield from _annotations(ingress, ALB, INGRESS_ENUMS, None)
        if is_alb(ingress):
            yield from _load_balancer_name(ingress, f"{ALB}load-balancer-name")
            yield from _health_timing(graph, ingress)
            yield from _paths(ingress)
            yield from _group(ingress, groups)
    yield from _conflicting_schemes(groups)
    yield from _conflicting_names(groups)
    for cronjob in graph.kube(None, "CronJob"):
        yield from _starting_deadline(cronjob)
    for release in graph.of_type(HELM_RELEASE):
        chart = str(release.inputs.get("chart") or "")
        values: dict[str, Any] = release.inputs.get("values") or {}
        if chart == "cluster-autoscaler":
            yield from _expander(release, values)
        elif chart == "external-dns":
            yield from _external_dns(release, values)


def _service_ports(service: KubeObject) -> set[str]:
    ports = (service.manifest.get("spec") or {}).get("ports") or []
    return {str(int(p["port"])) for p in ports if isinstance(p.get("port"), int | float)} | {
        str(p["name"]) for p in ports if p.get("name")
    }


def _annotations(
    obj: KubeObject, prefix: str, enums: dict[str, tuple[str, ...]], ports: set[str] | None
) -> Iterator[Finding]:
    annotations = (obj.manifest.get("metadata") or {}).get("annotations") or {}
    for key, raw in annotations.items():
        if not str(key).startswith(prefix) or not isinstance(raw, str):
            continue
        suffix, value = str(key).removeprefix(prefix), raw.strip()
        if suffix in enums and value not in enums[suffix]:
            error = {"scheme": "unknown scheme", "ip-address-type": "unknown IPAddressType"}.get(
                suffix, "unknown target type" if "target-type" in suffix else f"invalid {suffix}"
            )
            yield _refused(obj, key, raw, f"{error}: {value}", f"use one of {', '.join(enums[suffix])}")
        elif suffix in HEALTH_RANGES:
            low, high = HEALTH_RANGES[suffix]
            if not value.isdigit() or not low <= int(value) <= high:
                yield _refused(
                    obj,
                    key,
                    raw,
                    f"CreateTargetGroup: ValidationError, {suffix} must be between {low} and {high}",
                    f"set a whole number from {low} to {high}",
                )
        elif suffix == "listen-ports" and prefix == ALB:
            problem = _listen_ports(value)
            if problem is not None:
                yield _refused(
                    obj,
                    key,
                    raw,
                    f"failed to parse listen-ports configuration: {problem}",
                    'write a JSON list of one-key objects, e.g. [{"HTTP": 80}, {"HTTPS": 443}]',
                )
        elif suffix == "ssl-ports" and ports is not None and value != "*":
            wanted = [p.strip() for p in value.split(",") if p.strip()]
            if wanted and not set(wanted) & ports:
                yield _refused(
                    obj,
                    key,
                    raw,
                    f"no port of the Service is {', '.join(wanted)}: every listener stays TCP and the certificate "
                    "is never served",
                    f"name a Service port ({', '.join(sorted(ports))}) or '*'",
                )


def _backend_services(ingress: KubeObject) -> set[str]:
    spec = ingress.manifest.get("spec") or {}
    names = {str(((spec.get("defaultBackend") or {}).get("service") or {}).get("name") or "")}
    for rule in spec.get("rules") or []:
        for path in ((rule or {}).get("http") or {}).get("paths") or []:
            names.add(str((((path or {}).get("backend") or {}).get("service") or {}).get("name") or ""))
    return names - {""}


def _health_timing(graph: Graph, ingress: KubeObject) -> Iterator[Finding]:
    own = (ingress.manifest.get("metadata") or {}).get("annotations") or {}
    services = {
        s.name: (s.manifest.get("metadata") or {}).get("annotations") or {}
        for s in graph.kube(None, "Service")
        if s.namespace == ingress.namespace and s.name in _backend_services(ingress)
    }
    judged: set[tuple[int, int]] = set()
    for merged in [{**own, **extra} for extra in services.values()] or [own]:
        seconds: dict[str, int] = {}
        for suffix, default in INGRESS_HEALTH_DEFAULTS.items():
            raw = merged.get(f"{ALB}{suffix}", str(default))
            text = raw.strip() if isinstance(raw, str) else ""
            low, high = HEALTH_RANGES[suffix]
            if not text.isdigit() or not low <= int(text) <= high:
                break  # unknown, or out of range (reported above)
            seconds[suffix] = int(text)
        else:
            interval, timeout = seconds["healthcheck-interval-seconds"], seconds["healthcheck-timeout-seconds"]
            if interval > timeout or (interval, timeout) in judged:
                continue
            judged.add((interval, timeout))
            yield _refused(
                ingress,
                f"{ALB}healthcheck-interval-seconds",
                str(merged.get(f"{ALB}healthcheck-interval-seconds", "15 (default)")),
                f"CreateTargetGroup: ValidationError, Health check interval must be greater than the timeout; the "
                f"interval is {interval} s and the timeout {timeout} s"
                + ("" if f"{ALB}healthcheck-timeout-seconds" in merged else " (the controller's default)"),
                f"set an interval above the timeout, e.g. {max(timeout + 5, 10)}, or a timeout below {interval}",
            )


def _paths(ingress: KubeObject) -> Iterator[Finding]:
    rules = (ingress.manifest.get("spec") or {}).get("rules") or []
    for rule in rules:
        for path in ((rule or {}).get("http") or {}).get("paths") or []:
            value, kind = str((path or {}).get("path") or ""), (path or {}).get("pathType")
            if kind not in LITERAL_PATH_TYPES or value == "/" or not set(value) & {"*", "?"}:
                continue
            literal = value.replace("*", "").replace("?", "").rstrip("/") or "/"
            yield _refused(
                ingress,
                "spec.rules[].http.paths[].path",
                value,
                f"{kind.lower()} path shouldn't contain wildcards: {value}",
                f"write the literal path {literal!r} with pathType {kind} (for Prefix the controller adds "
                f"'{literal.rstrip('/')}/*' itself), or pathType ImplementationSpecific to pass an ALB path pattern",
            )


def _group(ingress: KubeObject, groups: dict[str, list[KubeObject]]) -> Iterator[Finding]:
    annotations = (ingress.manifest.get("metadata") or {}).get("annotations") or {}
    name = annotations.get(f"{ALB}group.name")
    if isinstance(name, str):
        if not GROUP_NAME.match(name) or len(name) > GROUP_NAME_MAX:
            yield _refused(
                ingress,
                f"{ALB}group.name",
                name,
                "invalid ingress group: groupName must consist of lower case alphanumeric characters, '-' or '.', "
                f"start and end with an alphanumeric character, and be no more than {GROUP_NAME_MAX} characters",
                "use a DNS-label-like lower-case name",
            )
        else:
            groups.setdefault(name, []).append(ingress)
    order = annotations.get(f"{ALB}group.order")
    if isinstance(order, str):
        low, high = GROUP_ORDER
        text = order.strip()
        number = int(text) if re.fullmatch(r"-?\d+", text) else None
        if number is None or not low <= number <= high:
            yield _refused(
                ingress,
                f"{ALB}group.order",
                order,
                f"explicit Ingress group order must be within [{low}:{high}]",
                f"set a whole number from {low} to {high}",
            )


def _conflicting_schemes(groups: dict[str, list[KubeObject]]) -> Iterator[Finding]:
    for name, members in groups.items():
        schemes = {
            str(((m.manifest.get("metadata") or {}).get("annotations") or {}).get(f"{ALB}scheme")).strip()
            for m in members
            if isinstance(((m.manifest.get("metadata") or {}).get("annotations") or {}).get(f"{ALB}scheme"), str)
        }
        if len(schemes) < 2:
            continue
        for member in members:
            yield _refused(
                member,
                f"{ALB}group.name",
                name,
                f"conflicting scheme: {sorted(schemes)} among the Ingresses of group {name} (one ALB, one scheme)",
                "give every Ingress of the group the same scheme, or put them in different groups",
            )


def _load_balancer_name(obj: KubeObject, key: str) -> Iterator[Finding]:
    name = ((obj.manifest.get("metadata") or {}).get("annotations") or {}).get(key)
    if not isinstance(name, str):
        return
    if len(name) > LB_NAME_MAX:
        error = f"load balancer name cannot be longer than {LB_NAME_MAX} characters; {name!r} has {len(name)}"
    elif not LB_NAME.match(name):
        error = (
            "CreateLoadBalancer: ValidationError, a load balancer name must hold only alphanumeric characters and "
            "hyphens and must not begin or end with a hyphen"
        )
    elif name.lower().startswith(LB_NAME_RESERVED_PREFIX):
        error = (
            f"CreateLoadBalancer: ValidationError, a load balancer name must not begin with {LB_NAME_RESERVED_PREFIX!r}"
        )
    else:
        return
    yield _refused(
        obj,
        key,
        name,
        error,
        f"name it with at most {LB_NAME_MAX} alphanumerics and inner hyphens, not beginning with "
        f"{LB_NAME_RESERVED_PREFIX!r}, or drop the annotation to let the controller generate one",
    )


def _conflicting_names(groups: dict[str, list[KubeObject]]) -> Iterator[Finding]:
    key = f"{ALB}load-balancer-name"
    for group, members in groups.items():
        named = {
            str(n)
            for m in members
            if isinstance(n := ((m.manifest.get("metadata") or {}).get("annotations") or {}).get(key), str)
        }
        if len(named) < 2:
            continue
        for member in members:
            yield _refused(
                member,
                key,
                ", ".join(sorted(named)),
                f"conflicting load balancer name: {sorted(named)} among the Ingresses of group {group} (one ALB, "
                "one name)",
                "set the same load-balancer-name on every Ingress of the group, or on one of them only",
            )


def _listen_ports(value: str) -> str | None:
    try:
        parsed = json.loads(value)
    except ValueError as e:
        return f"not JSON ({e})"
    if not isinstance(parsed, list) or not parsed:
        return "not a non-empty JSON list"
    for entry in parsed:
        if not isinstance(entry, dict) or len(entry) != 1:
            return f"{json.dumps(entry)} is not a one-key object"
        ((protocol, port),) = entry.items()
        if protocol not in LISTEN_PROTOCOLS or isinstance(port, bool) or not isinstance(port, int):
            return f"{json.dumps(entry)}: the key must be HTTP or HTTPS and the value a port number"
        if not 1 <= port <= 65535:
            return f"{json.dumps(entry)}: port out of range"
    return None


def _refused(obj: KubeObject, key: str, raw: str, error: str, fix: str) -> Finding:
    return Finding(
        RULE,
        obj.urn,
        f"{obj.kind} {obj.namespace}/{obj.name} has {key}: {raw!r}, which the AWS Load Balancer Controller refuses "
        f"on every reconcile ({error}; a FailedBuildModel/FailedDeployModel event): no load balancer is built and "
        "the object never gets an address",
        f"{fix} ({key})",
    )


def _flag(values: dict[str, Any], name: str) -> Any:
    """A flag as the chart's ``extraArgs`` map or list passes it, or None."""
    extra = values.get("extraArgs")
    if isinstance(extra, dict):
        return extra.get(name)
    if isinstance(extra, list):
        for arg in extra:
            text = str(arg)
            if text.startswith(f"--{name}="):
                return text.split("=", 1)[1]
    return None


def _expander(release: RenderedResource, values: dict[str, Any]) -> Iterator[Finding]:
    expander = _flag(values, "expander")
    if not isinstance(expander, str):
        return
    for name in [e.strip() for e in expander.split(",") if e.strip()]:
        if name not in EXPANDERS:
            why = f"Expander {name} not supported"
        elif name in EXPANDERS_NOT_ON_AWS:
            why = f"the {name} expander needs the cloud provider's pricing model, which AWS does not implement"
        else:
            continue
        yield Finding(
            RULE,
            release.urn,
            f"Cluster Autoscaler is started with --expander={expander}: {why}, the autoscaler exits at start and "
            "pending pods never get a node",
            f"use one of {', '.join(e for e in EXPANDERS if e not in EXPANDERS_NOT_ON_AWS)} (least-waste is the "
            "usual choice on EKS)",
        )


def _external_dns(release: RenderedResource, values: dict[str, Any]) -> Iterator[Finding]:
    for name, allowed in EXTERNAL_DNS_ENUMS.items():
        value = values.get(name, _flag(values, name))
        if isinstance(value, str) and value not in allowed:
            yield Finding(
                RULE,
                release.urn,
                f"ExternalDNS is given --{name}={value}, which its flag parser refuses ('{value}' is not one of "
                f"{', '.join(allowed)}): the pod exits at start and no record is ever written",
                f"set {name} to one of {', '.join(allowed)}",
            )


def _starting_deadline(cronjob: KubeObject) -> Iterator[Finding]:
    deadline = (cronjob.manifest.get("spec") or {}).get("startingDeadlineSeconds")
    if isinstance(deadline, bool) or not isinstance(deadline, int | float) or deadline >= CRONJOB_CHECK_SECONDS:
        return
    yield Finding(
        RULE,
        cronjob.urn,
        f"CronJob {cronjob.namespace}/{cronjob.name} has spec.startingDeadlineSeconds: {deadline:g}, under the "
        f"CronJob controller's {CRONJOB_CHECK_SECONDS}-second check period: a run not started within {deadline:g} "
        "s of its time is counted as missed, so the CronJob may never (or only by chance) be scheduled",
        f"set spec.startingDeadlineSeconds to {CRONJOB_CHECK_SECONDS} or more (e.g. 300), or leave it unset",
    )

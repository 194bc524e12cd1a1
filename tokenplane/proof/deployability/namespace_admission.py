"""Every pod is admitted by its namespace's LimitRanges and ResourceQuotas, at the most replicas it may run.

A workload's pods are created by its controller, after ``pulumi up`` has sent the workload: the API server's
admission plugins judge each pod then, and a refused pod is only an event (``FailedCreate`` on the ReplicaSet),
so the workload never becomes available. Two plugins read objects of the namespace
(https://kubernetes.io/docs/concepts/policy/limit-range/, https://kubernetes.io/docs/concepts/policy/resource-quotas/):

- **LimitRanger** first fills a container's missing limit from the LimitRange's ``default`` and its missing request
  from ``defaultRequest`` (else from its limit), then refuses a container whose request is under ``min`` or whose
  limit is over ``max`` (or has no limit while ``max`` is set). A defaulted limit below the container's own request
  makes an invalid pod ("must be less than or equal to cpu limit"), the classic trap of a namespace-wide default.
- **ResourceQuota** refuses a pod that leaves a tracked cpu or memory unset ("failed quota: must specify
  limits.memory": every container must set each ``requests.``/``limits.`` cpu and memory the quota tracks, after
  LimitRanger's defaults). Only those two: kubernetes pkg/quota/v1/evaluator/core/pods.go intersects the quota's
  resources with its ``validationSet`` (cpu, memory and their requests./limits. forms; "a mistake ... let's not make
  that mistake again with other resources"), so a quota on ``requests.nvidia.com/gpu`` or ephemeral-storage only
  counts, and a CPU-only pod beside it is admitted. It also refuses any pod past the quota's ``hard`` totals ("exceeded quota"). Totals are judged at each workload's most replicas
  (its HPA's or ScaledObject's maximum, else ``spec.replicas``; a Job's parallelism), so the replicas the
  autoscaler adds at peak are refused exactly when they are needed.

A rollout needs more: a Deployment's RollingUpdate creates up to ``maxSurge`` new pods before it removes old ones
("the total number of Pods running at any time during the update is at most 125% of desired Pods",
https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#max-surge; the default 25% rounds up, so one
pod for two replicas), and the quota admits each of them like any other pod. A quota with no room for the surge lets
the first ``pulumi up`` through and refuses every later rollout's new pods ("exceeded quota"): the new ReplicaSet
never gets a pod and the update exceeds its progress deadline (kubernetes/kubernetes#89209). The peak judged is the
lenient one, one workload rolling at a time: the namespace's workloads at their most replicas plus the largest single
surge. StatefulSets, Recreate and ``maxSurge: 0`` have no surge (rollouts.py's and tokenplane.model.rollout's
resolution: surge rounds up, unavailable down).

Quotas with ``scopes`` or a ``scopeSelector`` are not judged (which pods they count depends on priority classes
and QoS the checks do not resolve), nor DaemonSets' totals (one pod per node), nor pods a Helm chart makes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tokenplane.model.rollout import resolve
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.k8s_syntax import parse_quantity
from tokenplane.proof.deployability.node_capacity import maxima

RULE = "namespace-admits"
TRACKED = ("cpu", "memory", "ephemeral-storage")  # requests.X / limits.X; a bare X is requests.X
# What a quota makes every container state (pods.go's validationSet); any other tracked resource is only counted.
MUST_SPECIFY = ("cpu", "memory")


@dataclass(frozen=True)
class Container:
    """One container's requests and limits as admission sees them, after LimitRanger's defaults."""

    name: str
    requests: dict[str, float]
    limits: dict[str, float]


def check(graph: Graph) -> Iterator[Finding]:
    ranges: dict[str, list[KubeObject]] = defaultdict(list)
    quotas: dict[str, list[KubeObject]] = defaultdict(list)
    for obj in graph.kube(None, "LimitRange"):
        ranges[obj.namespace].append(obj)
    for obj in graph.kube(None, "ResourceQuota"):
        if not lookup(obj.manifest, "spec.scopes") and not lookup(obj.manifest, "spec.scopeSelector"):
            quotas[obj.namespace].append(obj)
    if not ranges and not quotas:
        return
    totals: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counted: dict[str, list[str]] = defaultdict(list)
    surges: dict[str, list[tuple[str, dict[str, float]]]] = defaultdict(list)
    for region in graph.regions():
        most = maxima(graph, region)
        for workload in graph.pod_bearers(region):
            namespace = workload.namespace
            if namespace not in ranges and namespace not in quotas:
                continue
            pod = workload.pod_spec()
            containers = [_defaulted(c, ranges[namespace]) for c in _containers(pod)]
            yield from _limit_ranges(workload, containers, ranges[namespace])
            yield from _must_specify(workload, containers, quotas[namespace])
            if workload.kind == "DaemonSet":
                continue
            replicas = _replicas(workload, most)
            usage = _pod_usage(pod, containers)
            totals[namespace]["pods"] += replicas
            for key, value in usage.items():
                totals[namespace][key] += value * replicas
            counted[namespace].append(f"{workload.kind} {workload.name} x{replicas}")
            if surge := _surge(workload, replicas):
                extra = {"pods": float(surge), **{key: value * surge for key, value in usage.items()}}
                surges[namespace].append((f"Deployment {workload.name} surges {surge} pod(s) past {replicas}", extra))
    for namespace, held in quotas.items():
        for quota in held:
            found = list(_exceeded(quota, totals[namespace], counted[namespace]))
            yield from found
            if not found:
                yield from _no_surge_room(quota, totals[namespace], counted[namespace], surges[namespace])


def _containers(pod: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """(container, is an init container)."""
    return [(c, False) for c in pod.get("containers") or []] + [(c, True) for c in pod.get("initContainers") or []]


def _amounts(values: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in (values or {}).items() if isinstance(values, dict) else []:
        amount = parse_quantity(value)
        if amount is not None:
            out[str(key)] = float(amount)
    return out


def _container_ranges(ranges: list[KubeObject]) -> list[dict[str, Any]]:
    return [
        limit
        for r in ranges
        for limit in lookup(r.manifest, "spec.limits") or []
        if isinstance(limit, dict) and limit.get("type", "Container") == "Container"
    ]


def _defaulted(entry: tuple[dict[str, Any], bool], ranges: list[KubeObject]) -> Container:
    container, _ = entry
    requests = _amounts(lookup(container, "resources.requests"))
    limits = _amounts(lookup(container, "resources.limits"))
    for limit in _container_ranges(ranges):
        for key, value in _amounts(limit.get("default")).items():
            limits.setdefault(key, value)
        for key, value in _amounts(limit.get("defaultRequest")).items():
            requests.setdefault(key, value)
    for key, value in limits.items():
        requests.setdefault(key, value)  # an unset request takes the limit (the API server's defaulting)
    return Container(str(container.get("name", "?")), requests, limits)


def _who(workload: KubeObject, container: Container) -> str:
    return f"{workload.kind} {workload.namespace}/{workload.name} container {container.name}"


def _limit_ranges(workload: KubeObject, containers: list[Container], ranges: list[KubeObject]) -> Iterator[Finding]:
    refused = f"so the API server refuses every pod of {workload.kind} {workload.name} (FailedCreate) and it never becomes available"
    for container in containers:
        for key, limit in container.limits.items():
            request = container.requests.get(key)
            if request is not None and request > limit:
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{_who(workload, container)} requests {_fmt(key, request)} {key} but its limit is {_fmt(key, limit)} "
                    f"(the namespace's LimitRange default where the container sets none): a request above the limit "
                    f"is an invalid pod (must be less than or equal to {key} limit), {refused}",
                    f"set the container's own {key} limit (at least its request), or raise the LimitRange's default",
                )
        for bounds in _container_ranges(ranges):
            for key, low in _amounts(bounds.get("min")).items():
                request = container.requests.get(key)
                if request is not None and request < low:
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{_who(workload, container)} requests {_fmt(key, request)} {key}, under the namespace's "
                        f"LimitRange minimum of {_fmt(key, low)} per container, {refused}",
                        f"request at least {_fmt(key, low)} {key}, or lower the LimitRange's min",
                    )
            for key, high in _amounts(bounds.get("max")).items():
                value = container.limits.get(key)
                if value is None or value > high:
                    said = "sets no limit" if value is None else f"has a {key} limit of {_fmt(key, value)}"
                    yield Finding(
                        RULE,
                        workload.urn,
                        f"{_who(workload, container)} {said}, where the namespace's LimitRange allows at most "
                        f"{_fmt(key, high)} {key} per container, {refused}",
                        f"set a {key} limit of at most {_fmt(key, high)}, or raise the LimitRange's max",
                    )


def _must_specify(workload: KubeObject, containers: list[Container], quotas: list[KubeObject]) -> Iterator[Finding]:
    for quota in quotas:
        for tracked in _amounts(lookup(quota.manifest, "spec.hard")):
            kind, resource = _split(tracked)
            if kind is None or resource not in MUST_SPECIFY:
                continue
            missing = [c.name for c in containers if resource not in (c.requests if kind == "requests" else c.limits)]
            if missing:
                yield Finding(
                    RULE,
                    workload.urn,
                    f"{workload.kind} {workload.namespace}/{workload.name}: container(s) {', '.join(missing)} set no "
                    f"{kind}.{resource}, which ResourceQuota {quota.name} tracks: the API server refuses every pod "
                    f"(failed quota: {quota.name}: must specify {kind}.{resource}), so it never becomes available",
                    f"set resources.{kind}.{resource} on every container (init containers too), or give the namespace a "
                    f"LimitRange whose default{'Request' if kind == 'requests' else ''} supplies it",
                )


def _split(tracked: str) -> tuple[str | None, str]:
    """A quota key as (requests | limits, resource); (None, key) for object counts and storage."""
    if tracked in TRACKED:
        return "requests", tracked
    head, _, resource = tracked.partition(".")
    if head in ("requests", "limits") and resource and resource != "storage":
        return head, resource
    return None, tracked


def _replicas(workload: KubeObject, most: dict[tuple[str, str], int]) -> int:
    spec = workload.manifest.get("spec") or {}
    if workload.kind in ("Job", "CronJob"):
        job = lookup(spec, "jobTemplate.spec") if workload.kind == "CronJob" else spec
        return int((job or {}).get("parallelism", 1))
    if workload.kind == "Pod":
        return 1
    return most.get((workload.namespace, workload.name), int(spec.get("replicas", 1)))


def _surge(workload: KubeObject, replicas: int) -> int:
    """The pods a Deployment's RollingUpdate adds above ``replicas`` (0 for Recreate and other kinds)."""
    if workload.kind != "Deployment":
        return 0
    strategy = lookup(workload.manifest, "spec.strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0
    try:
        return max(resolve((strategy.get("rollingUpdate") or {}).get("maxSurge", "25%"), replicas, round_up=True), 0)
    except ValueError:
        return 0  # not an int-or-percent: api-validation's to report


def _pod_usage(pod: dict[str, Any], containers: list[Container]) -> dict[str, float]:
    """What one pod counts against a quota: each resource's containers' sum, or the largest init container's."""
    init = {c.get("name") for c in pod.get("initContainers") or []}
    out: dict[str, float] = {}
    for kind in ("requests", "limits"):
        keys = {k for c in containers for k in getattr(c, kind)}
        for key in keys:
            running = sum(getattr(c, kind).get(key, 0.0) for c in containers if c.name not in init)
            first = max([getattr(c, kind).get(key, 0.0) for c in containers if c.name in init] or [0.0])
            out[f"{kind}.{key}"] = max(running, first)
    return out


def _exceeded(quota: KubeObject, used: dict[str, float], counted: list[str]) -> Iterator[Finding]:
    for tracked, hard in _amounts(lookup(quota.manifest, "spec.hard")).items():
        kind, resource = _split(tracked)
        key = "pods" if tracked == "pods" else f"{kind}.{resource}" if kind else None
        if key is None or used.get(key, 0.0) <= hard:
            continue
        yield Finding(
            RULE,
            quota.urn,
            f"ResourceQuota {quota.namespace}/{quota.name} allows {_fmt(resource, hard)} {tracked}, but the namespace's "
            f"workloads at their most replicas ({', '.join(counted)}) need {_fmt(resource, used[key])}: the pods past "
            "the quota are refused (exceeded quota) and never run, at the peak the autoscaler scaled for",
            f"raise the quota's {tracked} to at least {_fmt(resource, used[key])}, or lower the workloads' maxima",
        )


def _no_surge_room(
    quota: KubeObject, used: dict[str, float], counted: list[str], surges: list[tuple[str, dict[str, float]]]
) -> Iterator[Finding]:
    """One finding per quota: each tracked resource the namespace's peak plus the largest single surge passes."""
    over: list[tuple[str, str, str]] = []  # (tracked, hard, peak), formatted
    culprits: list[str] = []
    for tracked, hard in _amounts(lookup(quota.manifest, "spec.hard")).items():
        kind, resource = _split(tracked)
        key = "pods" if tracked == "pods" else f"{kind}.{resource}" if kind else None
        if key is None or not surges:
            continue
        who, extra = max(surges, key=lambda s: s[1].get(key, 0.0))
        peak = used.get(key, 0.0) + extra.get(key, 0.0)
        if peak > hard:
            over.append((tracked, _fmt(resource, hard), _fmt(resource, peak)))
            culprits += [who] if who not in culprits else []
    if not over:
        return
    needs = ", ".join(f"{tracked} {peak} (allows {hard})" for tracked, hard, peak in over)
    yield Finding(
        RULE,
        quota.urn,
        f"ResourceQuota {quota.namespace}/{quota.name} fits the namespace's workloads at their most replicas "
        f"({', '.join(counted)}) but leaves no room for a rollout's surge ({'; '.join(culprits)}): at its peak "
        f"the namespace needs {needs}. The surge pods are refused (exceeded quota: {quota.name}), the new ReplicaSet "
        "never gets a pod, and every later update exceeds its progress deadline and fails",
        f"raise the quota to {', '.join(f'{tracked} {peak}' for tracked, _, peak in over)}, or roll without surging "
        "(spec.strategy.rollingUpdate maxSurge 0, maxUnavailable 1)",
    )


def _fmt(resource: str, value: float) -> str:
    if resource in ("memory", "ephemeral-storage") or resource.endswith("memory"):
        return f"{value / 2**30:g}Gi"
    return f"{value:g}"

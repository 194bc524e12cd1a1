"""Values the Kubernetes API server rejects that the OpenAPI schema check does not see.

The schema says a field is an int-or-string; the API server's own validation (kubernetes/kubernetes, pkg/apis/*/
validation) then relates fields to each other. A rejected object fails ``pulumi up`` at create time. Each rule below
cites the function that rejects it:

- Deployment/DaemonSet ``rollingUpdate`` with maxSurge and maxUnavailable both 0 (pkg/apis/apps/validation/
  validation.go, ValidateRollingUpdateDeployment and ValidateRollingUpdateDaemonSet: "may not be 0 when `maxSurge`
  is 0"). The server compares the values as written (an int, or a percent's number: ``getIntOrPercentValue``), after
  defaulting the absent one (Deployment 25%/25%; DaemonSet maxSurge 0, maxUnavailable 1). A percent that resolves to
  0 against the replica count is not rejected: the controller then rolls one pod at a time (ResolveFenceposts).
- maxUnavailable above 100% (same functions, IsNotMoreThan100Percent).
- A strategy type the kind does not have, and ``rollingUpdate`` beside a Deployment's Recreate or a StatefulSet's
  OnDelete (ValidateDeploymentStrategy, ValidateStatefulSetUpdateStrategy).
- PodDisruptionBudget with both minAvailable and maxUnavailable (pkg/apis/policy/validation/validation.go,
  ValidatePodDisruptionBudgetSpec: "minAvailable and maxUnavailable cannot be both set").
- Deployment ``progressDeadlineSeconds`` not greater than ``minReadySeconds`` (pkg/apis/apps/validation/
  validation.go, ValidateDeploymentSpec: "must be greater than minReadySeconds"), after defaulting the absent
  deadline to 600 s (pkg/apis/apps/v1/defaults.go), so a minReadySeconds of 600 or more with no deadline fails too.
- HorizontalPodAutoscaler minReplicas below 1 (the HPAScaleToZero gate is alpha, off on EKS) or above maxReplicas
  (pkg/apis/autoscaling/validation/validation.go, validateHorizontalPodAutoscalerSpec).
- KEDA ScaledObjects as KEDA's admission webhook validates them (``keda_validation``: replica bounds, idle count,
  fallback, triggers, names), and RBAC roles and bindings as ValidateRole/ValidateRoleBinding do (``rbac_validation``).
- CronJob ``schedule`` not five cron fields (or a descriptor), ``TZ=``/``CRON_TZ=`` in it, or a ``timeZone`` that is
  not an IANA name (pkg/apis/batch/validation/validation.go, validateScheduleFormat with robfig/cron's
  ParseStandard, and validateTimeZone): the syntax is ``cron_syntax``'s.

Every object's metadata, pod templates and Services are held to the API server's own validation functions in
``object_validation`` and ``pod_validation`` (names per kind, labels, annotations, containers, ports, env, resources, volumes, mounts,
selectors, restart policies, with ``scheduling_validation``, ``container_validation``, ``volume_validation`` and
``pod_spec_validation``: hostname, class names, host aliases, sysctls, gates, host ports), and
the other kinds' own validators in ``service_validation`` (ValidateService's type-dependent fields),
``networking_validation`` (Ingress, NetworkPolicy), ``workload_validation`` (int-or-percent fields, Job, CronJob,
PDB, HPA metrics, PriorityClass), ``storage_validation`` (PVC, StorageClass) and ``quota_validation`` (LimitRange,
ResourceQuota), with label selectors' operators, values and keys in ``selector_validation``, under this same rule. The
validators were read from kubernetes/kubernetes through a search index of its history (the repository is too large
to check out here), not a pinned release tree: the messages quoted were checked against the validators' source text;
rules behind an alpha gate (tolerations' Gt/Lt, ContainerRestartRules) are read with the gate off, as EKS runs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability import (
    keda_validation,
    manual_endpoints,
    networking_validation,
    object_validation,
    pod_validation,
    quota_validation,
    rbac_validation,
    secret_validation,
    selector_validation,
    service_validation,
    storage_validation,
    workload_validation,
)
from tokenplane.proof.deployability.cron_syntax import schedule_error, time_zone_error
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import rejected as _rejected
from tokenplane.proof.deployability.object_validation import unsupported

RULE = object_validation.RULE

# Defaults the API server applies before validating (pkg/apis/apps/v1/defaults.go).
PROGRESS_DEADLINE_DEFAULT = 600
ROLLING_DEFAULTS = {"Deployment": ("25%", "25%"), "DaemonSet": (0, 1)}  # (maxSurge, maxUnavailable)
STRATEGY_VALIDATORS = {
    "Deployment": "ValidateDeploymentStrategy",
    "StatefulSet": "ValidateStatefulSetUpdateStrategy",
    "DaemonSet": "ValidateDaemonSetUpdateStrategy",
}
STRATEGY_TYPES = {
    "Deployment": ("RollingUpdate", "Recreate"),
    "StatefulSet": ("RollingUpdate", "OnDelete"),
    "DaemonSet": ("RollingUpdate", "OnDelete"),
}


def _number(value: Any) -> int | None:
    """An int-or-percent's number as the validator reads it: 3 -> 3, "25%" -> 25; None if neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.removesuffix("%")
        if text.isdigit():
            return int(text)
    return None


def check(graph: Graph) -> Iterator[Finding]:
    yield from object_validation.check(graph)
    yield from pod_validation.check(graph)
    yield from selector_validation.check(graph)
    yield from service_validation.check(graph)
    yield from networking_validation.check(graph)
    yield from workload_validation.check(graph)
    yield from storage_validation.check(graph)
    yield from quota_validation.check(graph)
    yield from secret_validation.check(graph)
    yield from keda_validation.check(graph)
    yield from rbac_validation.check(graph)
    yield from manual_endpoints.check_validation(graph)
    for region in graph.regions():
        for workload in graph.kube(region, *ROLLING_DEFAULTS):
            yield from _rolling_update(workload)
        for workload in graph.kube(region, *STRATEGY_TYPES):
            yield from _strategy_type(workload)
        for deployment in graph.kube(region, "Deployment"):
            yield from _progress_deadline(deployment)
        for cronjob in graph.kube(region, "CronJob"):
            yield from _schedule(cronjob)
        for pdb in graph.kube(region, "PodDisruptionBudget"):
            spec = pdb.manifest.get("spec") or {}
            if spec.get("minAvailable") is not None and spec.get("maxUnavailable") is not None:
                yield _rejected(
                    pdb,
                    f"sets both minAvailable ({spec['minAvailable']}) and maxUnavailable ({spec['maxUnavailable']})",
                    "ValidatePodDisruptionBudgetSpec: minAvailable and maxUnavailable cannot be both set",
                    "keep one of spec.minAvailable and spec.maxUnavailable",
                )
        for hpa in graph.kube(region, "HorizontalPodAutoscaler"):
            spec = hpa.manifest.get("spec") or {}
            low, high = spec.get("minReplicas", 1), spec.get("maxReplicas")
            if isinstance(low, int) and low < 1:
                yield _rejected(
                    hpa,
                    f"has minReplicas {low}",
                    "validateHorizontalPodAutoscalerSpec: must be greater than or equal to 1 (HPAScaleToZero is alpha)",
                    "set spec.minReplicas to 1 or more (KEDA's ScaledObject can scale to zero)",
                )
            elif isinstance(low, int) and isinstance(high, int) and high < low:
                yield _rejected(
                    hpa,
                    f"has maxReplicas {high} below minReplicas {low}",
                    "validateHorizontalPodAutoscalerSpec: must be greater than or equal to `minReplicas`",
                    "make spec.maxReplicas at least spec.minReplicas",
                )


def _strategy_type(workload: KubeObject) -> Iterator[Finding]:
    """A strategy type the kind has, and ``rollingUpdate`` only beside RollingUpdate: ValidateDeploymentStrategy
    ("may not be specified when strategy `type` is 'Recreate'") and ValidateStatefulSetUpdateStrategy ("only allowed
    for updateStrategy 'RollingUpdate'"); a DaemonSet's OnDelete ignores it."""
    field = "spec.strategy" if workload.kind == "Deployment" else "spec.updateStrategy"
    strategy = lookup(workload.manifest, field) or {}
    kind = strategy.get("type", "RollingUpdate")
    allowed = STRATEGY_TYPES[workload.kind]
    if kind not in allowed:
        yield unsupported(
            workload,
            f"{field}.type",
            kind,
            allowed,
            STRATEGY_VALIDATORS[workload.kind],
            f"set {field}.type to one of {', '.join(allowed)}",
        )
    elif kind != "RollingUpdate" and strategy.get("rollingUpdate") is not None and workload.kind != "DaemonSet":
        yield _rejected(
            workload,
            f"has {field}.rollingUpdate beside {field}.type {kind}",
            f"{field}.rollingUpdate: Forbidden: may not be specified when strategy `type` is '{kind}'",
            f"remove {field}.rollingUpdate (it applies only to RollingUpdate), or use type RollingUpdate",
        )


def _rolling_update(workload: KubeObject) -> Iterator[Finding]:
    field = "spec.strategy" if workload.kind == "Deployment" else "spec.updateStrategy"
    strategy = lookup(workload.manifest, field) or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return
    rolling = strategy.get("rollingUpdate") or {}
    surge_default, unavailable_default = ROLLING_DEFAULTS[workload.kind]
    surge = rolling.get("maxSurge", surge_default)
    unavailable = rolling.get("maxUnavailable", unavailable_default)
    validator = "ValidateRollingUpdate" + ("Deployment" if workload.kind == "Deployment" else "DaemonSet")
    if _number(surge) == 0 and _number(unavailable) == 0:
        yield _rejected(
            workload,
            f"has {field}.rollingUpdate maxSurge {surge!r} and maxUnavailable {unavailable!r}: no pod could ever be "
            "replaced",
            f"{validator}: maxUnavailable may not be 0 when `maxSurge` is 0",
            "allow a surge pod (maxSurge 1) where the nodes have room for one, else maxUnavailable 1",
        )
    if isinstance(unavailable, str) and (number := _number(unavailable)) is not None and number > 100:
        yield _rejected(
            workload,
            f"has {field}.rollingUpdate maxUnavailable {unavailable!r}",
            f"{validator}: must not be greater than 100%",
            "set maxUnavailable to 100% or less",
        )


def _progress_deadline(deployment: KubeObject) -> Iterator[Finding]:
    spec = deployment.manifest.get("spec") or {}
    ready = spec.get("minReadySeconds") or 0
    deadline = spec.get("progressDeadlineSeconds", PROGRESS_DEADLINE_DEFAULT)
    if isinstance(ready, int | float) and isinstance(deadline, int | float) and deadline <= ready:
        written = "" if "progressDeadlineSeconds" in spec else " (the default)"
        yield _rejected(
            deployment,
            f"has progressDeadlineSeconds {deadline:g}{written}, not greater than minReadySeconds {ready:g}",
            "ValidateDeploymentSpec: spec.progressDeadlineSeconds must be greater than minReadySeconds",
            f"set spec.progressDeadlineSeconds above {ready:g} (it must also cover a pod's start-up), or lower "
            "spec.minReadySeconds",
        )


def _schedule(cronjob: KubeObject) -> Iterator[Finding]:
    spec = cronjob.manifest.get("spec") or {}
    schedule, zone = spec.get("schedule"), spec.get("timeZone")
    if isinstance(schedule, str) and (error := schedule_error(schedule)) is not None:
        yield _rejected(
            cronjob,
            f"has spec.schedule {schedule!r}",
            f"validateScheduleFormat (robfig/cron ParseStandard): {error}",
            "write five fields: minute hour day-of-month month day-of-week (no seconds field; weekday 0-6), or "
            "@hourly/@daily/@weekly/@monthly/@yearly; put a time zone in spec.timeZone",
        )
    if isinstance(zone, str) and (error := time_zone_error(zone)) is not None:
        yield _rejected(
            cronjob,
            f"has spec.timeZone {zone!r}",
            f"validateTimeZone: {error}",
            "name an IANA time zone such as Europe/Berlin or Etc/UTC",
        )

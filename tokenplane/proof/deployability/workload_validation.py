"""Jobs, CronJobs, disruption budgets, autoscalers and priority classes as their validators see them
(part of ``api-validation``; the cross-field rules already there are ``api_validation``'s).

Sources (kubernetes/kubernetes, pkg/apis/*/validation/validation.go):

- replicas, minReadySeconds and revisionHistoryLimit not negative (apps ValidateDeploymentSpec,
  ValidateReplicaSetSpec, ValidateStatefulSetSpec, ValidateDaemonSetSpec: ValidateNonnegativeField); a StatefulSet's
  podManagementPolicy OrderedReady or Parallel and persistentVolumeClaimRetentionPolicy Retain or Delete;
- int-or-percent fields (apps ValidatePositiveIntOrPercent, IsNotMoreThan100Percent): a Deployment's and
  DaemonSet's rollingUpdate maxSurge and maxUnavailable, a PodDisruptionBudget's minAvailable and maxUnavailable
  (policy ValidatePodDisruptionBudgetSpec) are a non-negative integer or a percent string ("50%"); a quoted
  number ("1") is refused ("a valid percent string must be a numeric string followed by an ending '%'");
  a PDB's percent at most 100%; unhealthyPodEvictionPolicy IfHealthyBudget or AlwaysAllow;
- Job (batch validateJobSpec, also a CronJob's jobTemplate): parallelism, completions, activeDeadlineSeconds,
  backoffLimit, ttlSecondsAfterFinished not negative; completionMode NonIndexed or Indexed, and Indexed needs
  completions; the failure and index fields (podFailurePolicy, backoffLimitPerIndex, successPolicy) are
  ``job_validation``'s;
- CronJob (validateCronJobSpec): concurrencyPolicy Allow, Forbid or Replace (validateConcurrencyPolicy);
  startingDeadlineSeconds, successfulJobsHistoryLimit, failedJobsHistoryLimit not negative;
- HorizontalPodAutoscaler autoscaling/v2 (validateMetricSpec): a metric's type one of Object, Pods, Resource,
  External, ContainerResource, with its own source field populated and no other ("must populate information for
  the given metric source", "must populate the given metric source only"); validateMetricTarget: a target type
  Utilization, Value or AverageValue, values positive, averageUtilization above 0; validateResourceSource and
  validateContainerResourceSource: averageUtilization or averageValue, not both; validatePodsSource: averageValue;
  validateObjectSource and validateExternalSource: value or averageValue (External: not both);
  validateBehavior / validateScalingRules / validateScalingPolicy: for spec.behavior.scaleUp and scaleDown, a
  policy's type Pods or Percent, its value above 0, its periodSeconds above 0 and at most 1800 (MaxPeriodSeconds);
  stabilizationWindowSeconds 0 to 3600 (MaxStabilizationWindowSeconds); selectPolicy Max, Min or Disabled (the API
  reference, HPAScalingPolicy: "PeriodSeconds must be greater than zero and less than or equal to 1800 (30 min)",
  https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/horizontal-pod-autoscaler-v2/);
- HorizontalPodAutoscaler, any version (validateHorizontalPodAutoscalerSpec): maxReplicas at least 1 ("must be
  greater than 0"); scaleTargetRef's kind and name, where written, not empty and path segments
  (ValidateCrossVersionObjectReference: "Required value"); autoscaling/v2 metric sources named: a resource's and
  containerResource's name ("must specify a resource name"), a containerResource's container ("must specify a
  container"), a pods, object or external metric's name (validateMetricIdentifier: "must specify a metric name"),
  an object metric's describedObject kind and name (ValidateCrossVersionObjectReference). Only a written empty
  string is judged: the render leaves out a name unknown until apply;
- StatefulSet updateStrategy.rollingUpdate.partition and ordinals.start not negative (ValidateStatefulSetSpec,
  ValidateStatefulSetUpdateStrategy: ValidateNonnegativeField);
- PriorityClass (scheduling ValidatePriorityClass): a user class's value at most 1000000000
  (HighestUserDefinablePriority); a name starting "system-" is reserved for the two built-in classes; a
  preemptionPolicy PreemptLowerPriority or Never (ValidatePreemptionPolicy).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import job_validation
from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import path_segment_errors, rejected, unsupported

PERCENT = re.compile(r"[0-9]+%")  # IsValidPercent
NONNEGATIVE = "must be greater than or equal to 0"  # ValidateNonnegativeField
JOB_COUNTS = ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished")
CRONJOB_COUNTS = ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit")
WORKLOAD_COUNTS = {
    "Deployment": ("replicas", "minReadySeconds", "revisionHistoryLimit"),
    "ReplicaSet": ("replicas", "minReadySeconds"),
    "StatefulSet": ("replicas", "minReadySeconds", "revisionHistoryLimit"),
    "DaemonSet": ("minReadySeconds", "revisionHistoryLimit"),
}
METRIC_SOURCES = {
    "Object": "object",
    "Pods": "pods",
    "Resource": "resource",
    "External": "external",
    "ContainerResource": "containerResource",
}
TARGET_TYPES = ("Utilization", "Value", "AverageValue")
MAX_PERIOD_SECONDS = 1800  # MaxPeriodSeconds
MAX_STABILIZATION_WINDOW_SECONDS = 3600  # MaxStabilizationWindowSeconds
POLICY_TYPES = ("Pods", "Percent")
SELECT_POLICIES = ("Max", "Min", "Disabled")
USER_PRIORITY_MAX = 1_000_000_000  # HighestUserDefinablePriority
SYSTEM_CLASSES = {"system-cluster-critical": 2_000_000_000, "system-node-critical": 2_000_001_000}


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        spec = obj.manifest.get("spec")
        if obj.kind in WORKLOAD_COUNTS and isinstance(spec, dict):
            yield from _counts(obj, "spec", spec, WORKLOAD_COUNTS[obj.kind], f"Validate{obj.kind}Spec")
        if obj.kind == "StatefulSet" and isinstance(spec, dict):
            yield from _stateful_set(obj, spec)
        if obj.kind in ("Deployment", "DaemonSet") and isinstance(spec, dict):
            field = "spec.strategy" if obj.kind == "Deployment" else "spec.updateStrategy"
            rolling = lookup(obj.manifest, f"{field}.rollingUpdate")
            for name in ("maxSurge", "maxUnavailable"):
                if isinstance(rolling, dict):
                    yield from _int_or_percent(obj, f"{field}.rollingUpdate.{name}", rolling.get(name), "Rolling")
        elif obj.kind == "PodDisruptionBudget" and isinstance(spec, dict):
            yield from _budget(obj, spec)
        elif obj.kind == "Job" and isinstance(spec, dict):
            yield from _job(obj, "spec", spec)
        elif obj.kind == "CronJob" and isinstance(spec, dict):
            yield from _cronjob(obj, spec)
        elif obj.kind == "HorizontalPodAutoscaler" and str(obj.manifest.get("apiVersion")) == "autoscaling/v2":
            for i, metric in enumerate(spec.get("metrics") or [] if isinstance(spec, dict) else []):
                if isinstance(metric, dict):
                    yield from _metric(obj, f"spec.metrics[{i}]", metric)
            for direction in ("scaleUp", "scaleDown"):
                rules = lookup(obj.manifest, f"spec.behavior.{direction}")
                if isinstance(rules, dict):
                    yield from _scaling_rules(obj, f"spec.behavior.{direction}", rules)
        elif obj.kind == "PriorityClass":
            yield from _priority_class(obj)
        if obj.kind == "HorizontalPodAutoscaler" and isinstance(spec, dict):
            yield from _autoscaler(obj, spec)


def _whole(value: Any) -> int | None:
    """An int field's value where the render gives it as an int or a whole float (3.0); None otherwise."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return syntax.integer(value)


def _reference(obj: KubeObject, at: str, ref: Any, source: str) -> Iterator[Finding]:
    """ValidateCrossVersionObjectReference: kind and name required, each a path segment."""
    for field in ("kind", "name") if isinstance(ref, dict) else ():
        value = ref.get(field)
        if value == "":
            yield rejected(
                obj,
                f"has {at}.{field} empty",
                f"{source}: {at}.{field}: Required value",
                f"set {at}.{field} to the target's {field}",
            )
        elif isinstance(value, str) and (errors := path_segment_errors(value)):
            yield rejected(
                obj,
                f"has {at}.{field} {value!r}, which {'; '.join(errors)}",
                f'{source}: {at}.{field}: Invalid value: "{value}"',
                f"write the target's {field} alone (no '/')",
            )


def _autoscaler(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    high = _whole(spec.get("maxReplicas"))
    if high is not None and high < 1:
        yield rejected(
            obj,
            f"has spec.maxReplicas {high}",
            f"validateHorizontalPodAutoscalerSpec: spec.maxReplicas: Invalid value: {high}: must be greater than 0",
            "set spec.maxReplicas to 1 or more (to stop scaling, scale the workload itself)",
        )
    source = "ValidateCrossVersionObjectReference"
    yield from _reference(obj, "spec.scaleTargetRef", spec.get("scaleTargetRef"), source)
    if str(obj.manifest.get("apiVersion")) != "autoscaling/v2":
        return
    metrics = spec.get("metrics")
    for i, metric in enumerate(metrics if isinstance(metrics, list) else []):
        if not isinstance(metric, dict):
            continue
        at = f"spec.metrics[{i}]"
        names: list[tuple[str, Any, str, str]] = []
        for kind in ("resource", "containerResource"):
            if isinstance(part := metric.get(kind), dict):
                names.append((f"{at}.{kind}.name", part.get("name"), "must specify a resource name", kind))
                if kind == "containerResource":
                    names.append((f"{at}.{kind}.container", part.get("container"), "must specify a container", kind))
        for kind in ("pods", "object", "external"):
            if isinstance(part := metric.get(kind), dict) and isinstance(identifier := part.get("metric"), dict):
                names.append((f"{at}.{kind}.metric.name", identifier.get("name"), "must specify a metric name", kind))
        for field, value, message, kind in names:
            if value == "":
                yield rejected(
                    obj,
                    f"has {field} empty",
                    f"validate{kind[0].upper()}{kind[1:]}Source: {field}: Required value: {message}",
                    f"set {field}",
                )
        described = lookup(metric, "object.describedObject") if isinstance(metric.get("object"), dict) else None
        yield from _reference(obj, f"{at}.object.describedObject", described, source)


def _int_or_percent(obj: KubeObject, at: str, value: Any, source: str) -> Iterator[Finding]:
    validator = "ValidatePodDisruptionBudgetSpec" if source == "PDB" else "ValidateRollingUpdate"
    if isinstance(value, str) and not PERCENT.fullmatch(value):
        yield rejected(
            obj,
            f"has {at} {value!r}",
            f"{validator} (ValidatePositiveIntOrPercent): a valid percent string must be a numeric string followed "
            "by an ending '%'",
            f"write {at.rsplit('.', 1)[-1]} as an integer (1, unquoted) or a percent ('25%')",
        )
    elif (number := syntax.integer(value)) is not None and number < 0:
        yield rejected(
            obj, f"has {at} {number}", f"{validator} (ValidatePositiveIntOrPercent): {NONNEGATIVE}", "use 0 or more"
        )
    elif source == "PDB" and isinstance(value, str) and int(value[:-1]) > 100:
        yield rejected(
            obj, f"has {at} {value!r}", f"{validator}: must not be greater than 100%", "use a percent of 100% or less"
        )


def _stateful_set(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    partition = (
        lookup(spec, "updateStrategy.rollingUpdate.partition")
        if isinstance(spec.get("updateStrategy"), dict)
        and isinstance(spec["updateStrategy"].get("rollingUpdate"), dict)
        else None
    )
    start = spec["ordinals"].get("start") if isinstance(spec.get("ordinals"), dict) else None
    for field, value in (("spec.updateStrategy.rollingUpdate.partition", partition), ("spec.ordinals.start", start)):
        if (number := _whole(value)) is not None and number < 0:
            yield rejected(
                obj,
                f"has {field} {number}",
                f"ValidateStatefulSetSpec: {field}: Invalid value: {number}: {NONNEGATIVE}",
                "use 0 or more (a partition of 0 updates every pod)",
            )
    policy = spec.get("podManagementPolicy")
    if policy not in (None, "") and policy not in ("OrderedReady", "Parallel"):
        yield rejected(
            obj,
            f"has spec.podManagementPolicy {policy!r}",
            "ValidateStatefulSetSpec: podManagementPolicy: Invalid value: must be 'OrderedReady' or 'Parallel'",
            "use OrderedReady (the default: one pod at a time) or Parallel",
        )
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    for field in ("whenDeleted", "whenScaled"):
        value = retention.get(field) if isinstance(retention, dict) else None
        if value not in (None, "") and value not in ("Retain", "Delete"):
            yield unsupported(
                obj,
                f"spec.persistentVolumeClaimRetentionPolicy.{field}",
                value,
                ("Retain", "Delete"),
                "ValidatePersistentVolumeClaimRetentionPolicyType",
                "use Retain (the default: keep the volumes) or Delete",
            )


def _budget(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    for name in ("minAvailable", "maxUnavailable"):
        yield from _int_or_percent(obj, f"spec.{name}", spec.get(name), "PDB")
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in ("IfHealthyBudget", "AlwaysAllow"):
        yield unsupported(
            obj,
            "spec.unhealthyPodEvictionPolicy",
            policy,
            ("AlwaysAllow", "IfHealthyBudget"),
            "ValidatePodDisruptionBudgetSpec",
            "use IfHealthyBudget (the default) or AlwaysAllow",
        )


def _counts(
    obj: KubeObject, at: str, spec: Mapping[str, Any], fields: tuple[str, ...], source: str
) -> Iterator[Finding]:
    for field in fields:
        number = syntax.integer(spec.get(field))
        if number is not None and number < 0:
            yield rejected(obj, f"has {at}.{field} {number}", f"{source}: {NONNEGATIVE}", f"set {field} to 0 or more")


def _job(obj: KubeObject, at: str, spec: Mapping[str, Any]) -> Iterator[Finding]:
    yield from _counts(obj, at, spec, JOB_COUNTS, "validateJobSpec")
    yield from job_validation.check_spec(obj, at, spec)
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        yield unsupported(
            obj,
            f"{at}.completionMode",
            mode,
            ("Indexed", "NonIndexed"),
            "validateJobSpec",
            "use NonIndexed (the default) or Indexed",
        )
    elif mode == "Indexed" and spec.get("completions") is None:
        yield rejected(
            obj,
            f"has {at}.completionMode Indexed without completions",
            "validateJobSpec: completions: Required value: when completion mode is Indexed",
            "set completions (the number of indexes), or use completionMode NonIndexed",
        )


def _cronjob(obj: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    yield from _counts(obj, "spec", spec, CRONJOB_COUNTS, "validateCronJobSpec")
    policy = spec.get("concurrencyPolicy")
    if policy is not None and policy not in ("Allow", "Forbid", "Replace"):
        yield unsupported(
            obj,
            "spec.concurrencyPolicy",
            policy,
            ("Allow", "Forbid", "Replace"),
            "validateConcurrencyPolicy",
            "use Allow (the default), Forbid or Replace (case matters)",
        )
    job = lookup(obj.manifest, "spec.jobTemplate.spec")
    if isinstance(job, dict):
        yield from _job(obj, "spec.jobTemplate.spec", job)


def _metric(obj: KubeObject, at: str, metric: Mapping[str, Any]) -> Iterator[Finding]:
    kind = metric.get("type")
    present = [f for f in METRIC_SOURCES.values() if metric.get(f) is not None]
    expected = METRIC_SOURCES.get(str(kind))
    if expected is None:
        yield unsupported(
            obj,
            f"{at}.type",
            kind,
            METRIC_SOURCES,
            "validateMetricSpec",
            "use Resource, ContainerResource, Pods, Object or External",
        )
        return
    if expected not in present or len(present) > 1:
        yield rejected(
            obj,
            f"has {at}.type {kind} with {', '.join(present) or 'no source'}",
            "validateMetricSpec: must populate information for the given metric source (and only it)",
            f"put the metric under {at}.{expected}, matching its type, and drop the others",
        )
        return
    source = metric[expected]
    target = source.get("target") if isinstance(source, dict) else None
    if not isinstance(target, dict):
        return
    where = f"{at}.{expected}.target"
    kind_of_target = target.get("type")
    if kind_of_target not in TARGET_TYPES:
        yield rejected(
            obj,
            f"has {where}.type {kind_of_target!r}",
            "validateMetricTarget: must be either Utilization, Value, or AverageValue",
            "set target.type to Utilization, Value or AverageValue",
        )
    for field in ("value", "averageValue"):
        value = target.get(field)
        if value is not None and ((parsed := syntax.parse_quantity(value)) is None or parsed <= 0):
            yield rejected(
                obj,
                f"has {where}.{field} {value!r}",
                "validateMetricTarget: must be positive",
                "use a positive quantity",
            )
    utilization = syntax.integer(target.get("averageUtilization"))
    if utilization is not None and utilization < 1:
        yield rejected(
            obj,
            f"has {where}.averageUtilization {utilization}",
            "validateMetricTarget: must be greater than 0",
            "set a utilization percent of 1 or more (e.g. 70)",
        )
    yield from _target_values(obj, where, expected, target)


def _target_values(obj: KubeObject, where: str, source: str, target: Mapping[str, Any]) -> Iterator[Finding]:
    has = {f for f in ("value", "averageValue", "averageUtilization") if target.get(f) is not None}
    validator = f"validate{source[0].upper()}{source[1:]}Source"
    if source in ("resource", "containerResource"):
        if not has & {"averageUtilization", "averageValue"}:
            problem = "must set either a target raw value or a target utilization"
            fix = "set target.averageUtilization (type Utilization) or target.averageValue (type AverageValue)"
        elif {"averageUtilization", "averageValue"} <= has:
            problem, fix = "may not set both a target raw value and a target utilization", "keep one of the two"
        else:
            return
    elif source == "pods" and "averageValue" not in has:
        problem = "must specify a positive target averageValue"
        fix = "set target.type AverageValue and target.averageValue (a Pods metric is averaged over the pods)"
    elif source in ("object", "external") and not has & {"value", "averageValue"}:
        problem = "must set either a target value or averageValue"
        fix = "set target.value (type Value) or target.averageValue (type AverageValue)"
    elif source == "external" and {"value", "averageValue"} <= has:
        problem, fix = "may not set both a target value for metric and a per-pod target", "keep one of the two"
    else:
        return
    yield rejected(obj, f"has {where} with {', '.join(sorted(has)) or 'no value'}", f"{validator}: {problem}", fix)


def _scaling_rules(obj: KubeObject, at: str, rules: Mapping[str, Any]) -> Iterator[Finding]:
    window = syntax.integer(rules.get("stabilizationWindowSeconds"))
    if window is not None and not 0 <= window <= MAX_STABILIZATION_WINDOW_SECONDS:
        yield rejected(
            obj,
            f"has {at}.stabilizationWindowSeconds {window}",
            "validateScalingRules: must be greater than or equal to zero and less than or equal to "
            f"{MAX_STABILIZATION_WINDOW_SECONDS}",
            f"set stabilizationWindowSeconds between 0 and {MAX_STABILIZATION_WINDOW_SECONDS} (one hour)",
        )
    select = rules.get("selectPolicy")
    if select is not None and select not in SELECT_POLICIES:
        yield unsupported(
            obj,
            f"{at}.selectPolicy",
            select,
            SELECT_POLICIES,
            "validateScalingRules",
            "use Max (the default), Min or Disabled",
        )
    for i, policy in enumerate(rules.get("policies") or []):
        if isinstance(policy, dict):
            yield from _scaling_policy(obj, f"{at}.policies[{i}]", policy)


def _scaling_policy(obj: KubeObject, at: str, policy: Mapping[str, Any]) -> Iterator[Finding]:
    kind = policy.get("type")
    if kind not in POLICY_TYPES:
        yield unsupported(obj, f"{at}.type", kind, POLICY_TYPES, "validateScalingPolicy", "use Pods or Percent")
    value = syntax.integer(policy.get("value"))
    if value is not None and value <= 0:
        yield rejected(
            obj,
            f"has {at}.value {value}",
            "validateScalingPolicy: must be greater than zero",
            "set value to 1 or more (to stop scaling in this direction, set selectPolicy: Disabled)",
        )
    period = syntax.integer(policy.get("periodSeconds"))
    if period is not None and period <= 0:
        yield rejected(
            obj,
            f"has {at}.periodSeconds {period}",
            "validateScalingPolicy: must be greater than zero",
            "set periodSeconds between 1 and 1800",
        )
    elif period is not None and period > MAX_PERIOD_SECONDS:
        yield rejected(
            obj,
            f"has {at}.periodSeconds {period}",
            f"validateScalingPolicy: must be less than or equal to {MAX_PERIOD_SECONDS}",
            f"set periodSeconds to at most {MAX_PERIOD_SECONDS} (30 minutes); to slow scaling further, lower the "
            "policy's value or lengthen stabilizationWindowSeconds (up to 3600)",
        )


def _priority_class(obj: KubeObject) -> Iterator[Finding]:
    name, value = str(obj.name), syntax.integer(obj.manifest.get("value"))
    policy = obj.manifest.get("preemptionPolicy")
    if isinstance(policy, str) and policy not in ("PreemptLowerPriority", "Never"):
        yield unsupported(
            obj,
            "preemptionPolicy",
            policy,
            ("Never", "PreemptLowerPriority"),
            "ValidatePriorityClass/ValidatePreemptionPolicy",
            "use PreemptLowerPriority (the default) or Never (case matters)",
        )
    if name.startswith("system-"):
        if SYSTEM_CLASSES.get(name) != value:
            yield rejected(
                obj,
                f"is named {name!r} with value {value}",
                "ValidatePriorityClass: priority class names with 'system-' prefix are reserved for system use only",
                "rename the class without the system- prefix (use the built-in system-cluster-critical or "
                "system-node-critical by name in priorityClassName instead of creating it)",
            )
    elif value is not None and value > USER_PRIORITY_MAX:
        yield rejected(
            obj,
            f"has value {value}",
            f"ValidatePriorityClass: maximum allowed value of a user defined priority is {USER_PRIORITY_MAX}",
            f"use a value of at most {USER_PRIORITY_MAX}",
        )

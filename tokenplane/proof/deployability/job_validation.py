"""A Job's failure and index fields as the API server's validateJobSpec relates them (part of ``api-validation``,
called for a Job's spec and a CronJob's jobTemplate by ``workload_validation``).

Source: kubernetes/kubernetes pkg/apis/batch/validation/validation.go, the version with successPolicy and managedBy
(v1.30+; podFailurePolicy is on by default since v1.26 and GA in v1.31, backoffLimitPerIndex on by default since
v1.29), read through the search index: validateJobSpec, validatePodFailurePolicy, validatePodFailurePolicyRule,
validatePodFailurePolicyRuleOnExitCodes, validatePodFailurePolicyRuleOnPodConditions, validatePodReplacementPolicy.
The rules, each quoted from its error:

- a podFailurePolicy needs the pod template's restartPolicy Never ("only "Never" is supported when
  podFailurePolicy is specified"): with OnFailure the kubelet restarts the container in place and the pod never
  fails, so the policy could never match (https://kubernetes.io/docs/concepts/workloads/controllers/job/
  #pod-failure-policy);
- a podFailurePolicy allows podReplacementPolicy Failed only;
- at most 20 rules (maxPodFailurePolicyRules); a rule's action Count, FailJob, Ignore or FailIndex, and FailIndex
  "requires the backoffLimitPerIndex to be set"; exactly one of onExitCodes and onPodConditions ("specifying both
  OnExitCodes and OnPodConditions is not supported", "specifying one of OnExitCodes and OnPodConditions is
  required");
- onExitCodes: operator In or NotIn; containerName one of the template's containers or initContainers; 1 to 255
  values, no duplicates, "must be ordered", and no 0 under In ("must not be 0 for the In operator");
- onPodConditions: at most 20 patterns, status True, False or Unknown;
- backoffLimitPerIndex and maxFailedIndexes not negative and only with completionMode Indexed ("requires indexed
  completion mode"); maxFailedIndexes needs backoffLimitPerIndex and is at most completions; an Indexed Job's
  parallelism at most 100000 (maxParallelismForIndexedJob); successPolicy only with completionMode Indexed;
- the generated selector (pkg/registry/batch/job/strategy.go Validate and generateSelector, validation.go
  ValidateGeneratedSelector, https://kubernetes.io/docs/concepts/workloads/controllers/job/
  #specifying-your-own-pod-selector): unless manualSelector is true (unset and false alike), the strategy keeps the
  written selector, adds matchLabels batch.kubernetes.io/controller-uid, and the result must match the labels it
  generates (controller-uid and batch.kubernetes.io/controller-uid = the new uid, job-name and
  batch.kubernetes.io/job-name = the name), else "`selector` not auto-generated". Judged only for a selector that
  names none of those four keys (their values are the server's uid or the name, not judged): any matchLabels, In or
  Exists on another key is refused; NotIn or DoesNotExist alone, or an empty selector, is accepted. A CronJob's
  jobTemplate may carry no selector at all ("`selector` will be auto-generated") and no manualSelector true
  (ValidateJobTemplateSpec). Cannot see: template labels that conflict with the generated ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import KubeObject, lookup
from tokenplane.proof.deployability.object_validation import rejected, unsupported
from tokenplane.proof.deployability.pod_validation import selector_matches

MAX_RULES = 20  # maxPodFailurePolicyRules
MAX_EXIT_CODES = 255  # maxPodFailurePolicyOnExitCodesValues
MAX_CONDITIONS = 20  # maxPodFailurePolicyOnPodConditionsPatterns
MAX_INDEXED_PARALLELISM = 100_000  # maxParallelismForIndexedJob
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")  # supportedPodFailurePolicyActions
OPERATORS = ("In", "NotIn")
STATUSES = ("False", "True", "Unknown")
REPLACEMENTS = ("Failed", "TerminatingOrFailed")  # supportedPodReplacementPolicy
SOURCE = "validateJobSpec"


def check_spec(obj: KubeObject, at: str, spec: Mapping[str, Any]) -> Iterator[Finding]:
    """Findings for one JobSpec at ``at`` (``spec`` or ``spec.jobTemplate.spec``)."""
    indexed = spec.get("completionMode") == "Indexed"
    yield from _indexes(obj, at, spec, indexed)
    yield from _selector(obj, at, spec)
    policy = spec.get("podFailurePolicy")
    pod = lookup(spec, "template.spec")
    pod = pod if isinstance(pod, dict) else {}
    if policy is not None:
        restart = pod.get("restartPolicy")
        # Unset or Always is refused for any Job (pod_validation says so); OnFailure only beside a policy.
        if restart == "OnFailure":
            yield rejected(
                obj,
                f"has {at}.podFailurePolicy with {at}.template.spec.restartPolicy OnFailure",
                f'{SOURCE}: {at}.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported '
                "when podFailurePolicy is specified",
                f"set {at}.template.spec.restartPolicy to Never (each retry is a new pod, which the policy can "
                "match), or drop podFailurePolicy",
            )
        if isinstance(policy, dict):
            yield from _policy(obj, f"{at}.podFailurePolicy", policy, spec, pod)
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ("Failed",) if policy is not None else REPLACEMENTS
        if replacement not in allowed:
            yield unsupported(
                obj,
                f"{at}.podReplacementPolicy",
                replacement,
                allowed,
                "validatePodReplacementPolicy",
                "use podReplacementPolicy Failed (the only value beside a podFailurePolicy)"
                if policy is not None
                else "use Failed or TerminatingOrFailed",
            )
    if spec.get("successPolicy") is not None and not indexed:
        yield rejected(
            obj,
            f"has {at}.successPolicy without completionMode Indexed",
            f"{SOURCE}: {at}.successPolicy: requires indexed completion mode",
            "set completionMode Indexed (with completions), or drop successPolicy",
        )


def _selector(obj: KubeObject, at: str, spec: Mapping[str, Any]) -> Iterator[Finding]:
    """The generated selector: a CronJob's jobTemplate may carry none (ValidateJobTemplateSpec), and a Job's without
    manualSelector true must still select the labels the strategy generates (ValidateGeneratedSelector)."""
    selector, manual = spec.get("selector"), spec.get("manualSelector")
    if at != "spec":  # a CronJob's jobTemplate
        if selector is not None:
            yield rejected(
                obj,
                f"sets {at}.selector",
                f"ValidateJobTemplateSpec: {at}.selector: Invalid value: `selector` will be auto-generated",
                "drop the jobTemplate's selector (each Job the CronJob makes gets a generated one)",
            )
        if manual is True:
            yield unsupported(
                obj,
                f"{at}.manualSelector",
                "true",
                ("nil", "false"),
                "ValidateJobTemplateSpec",
                "drop manualSelector from the jobTemplate",
            )
        return
    if manual is True or not isinstance(selector, dict):
        return
    if not _refused_without_manual(selector):
        return
    yield rejected(
        obj,
        f"sets spec.selector {json.dumps(selector, sort_keys=True)} without spec.manualSelector true",
        "ValidateGeneratedSelector: spec.selector: Invalid value: `selector` not auto-generated (the Job strategy "
        "adds batch.kubernetes.io/controller-uid to the selector, which must then match the generated "
        "controller-uid and job-name labels)",
        "drop spec.selector (the API server generates one from the Job's uid), or set spec.manualSelector true "
        "with a selector unique to this Job's pods",
    )


UID = "\x00uid"  # the Job's uid, unknown until it is created
NAME = "\x00name"  # the Job's name (a generated key's value is not judged, so neither is the name)
GENERATED = {
    "controller-uid": UID,
    "batch.kubernetes.io/controller-uid": UID,
    "job-name": NAME,
    "batch.kubernetes.io/job-name": NAME,
}


def _refused_without_manual(selector: Mapping[str, Any]) -> bool:
    """True where the selector, once the strategy has added controller-uid, cannot match the generated labels.
    A selector naming a generated key is not judged (its value is the server's or the name Pulumi gives)."""
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, dict) or not isinstance(expressions, list):
        return False
    keys = {str(k) for k in match_labels} | {str(e.get("key")) for e in expressions if isinstance(e, dict)}
    if keys & set(GENERATED) or not keys:
        return False
    if not all(isinstance(v, str) for v in match_labels.values()):
        return False
    with_uid = {"matchLabels": {**match_labels, "controller-uid": UID}, "matchExpressions": expressions}
    return not selector_matches(with_uid, GENERATED)


def _indexes(obj: KubeObject, at: str, spec: Mapping[str, Any], indexed: bool) -> Iterator[Finding]:
    per_index = syntax.integer(spec.get("backoffLimitPerIndex"))
    max_failed = syntax.integer(spec.get("maxFailedIndexes"))
    completions = syntax.integer(spec.get("completions"))
    parallelism = syntax.integer(spec.get("parallelism"))
    for field, number in (("backoffLimitPerIndex", per_index), ("maxFailedIndexes", max_failed)):
        if number is not None and number < 0:
            yield rejected(
                obj, f"has {at}.{field} {number}", f"{SOURCE}: must be greater than or equal to 0", f"set {field} to 0+"
            )
        if number is not None and not indexed:
            yield rejected(
                obj,
                f"has {at}.{field} {number} without completionMode Indexed",
                f"{SOURCE}: {at}.{field}: Invalid value: {number}: requires indexed completion mode",
                f"set completionMode Indexed (with completions), or drop {field}",
            )
    if max_failed is not None and spec.get("backoffLimitPerIndex") is None:
        yield rejected(
            obj,
            f"has {at}.maxFailedIndexes without backoffLimitPerIndex",
            f"{SOURCE}: {at}.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
            "set backoffLimitPerIndex, or drop maxFailedIndexes",
        )
    if indexed and max_failed is not None and completions is not None and max_failed > completions:
        yield rejected(
            obj,
            f"has {at}.maxFailedIndexes {max_failed} above completions {completions}",
            f"{SOURCE}: {at}.maxFailedIndexes: must be less than or equal to completions",
            f"set maxFailedIndexes to at most {completions}",
        )
    if indexed and parallelism is not None and parallelism > MAX_INDEXED_PARALLELISM:
        yield rejected(
            obj,
            f"has {at}.parallelism {parallelism} with completionMode Indexed",
            f"{SOURCE}: must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed",
            f"set parallelism to at most {MAX_INDEXED_PARALLELISM}",
        )


def _policy(
    obj: KubeObject, at: str, policy: Mapping[str, Any], spec: Mapping[str, Any], pod: Mapping[str, Any]
) -> Iterator[Finding]:
    rules = policy.get("rules")
    if not isinstance(rules, list):
        return
    if len(rules) > MAX_RULES:
        yield rejected(
            obj,
            f"has {len(rules)} {at}.rules",
            f"validatePodFailurePolicy: Too many: {len(rules)}: must have at most {MAX_RULES} items",
            f"merge the rules into at most {MAX_RULES}",
        )
    names = {
        c.get("name") for key in ("containers", "initContainers") for c in (pod.get(key) or []) if isinstance(c, dict)
    }
    for i, rule in enumerate(rules):
        if isinstance(rule, dict):
            yield from _rule(obj, f"{at}.rules[{i}]", rule, spec, names)


def _rule(
    obj: KubeObject, at: str, rule: Mapping[str, Any], spec: Mapping[str, Any], names: set[Any]
) -> Iterator[Finding]:
    action = rule.get("action")
    source = "validatePodFailurePolicyRule"
    if action not in ACTIONS:
        yield unsupported(obj, f"{at}.action", action, ACTIONS, source, "use FailJob, Ignore, Count or FailIndex")
    elif action == "FailIndex" and spec.get("backoffLimitPerIndex") is None:
        yield rejected(
            obj,
            f"has {at}.action FailIndex without backoffLimitPerIndex",
            f'{source}: {at}.action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set',
            "set backoffLimitPerIndex (with completionMode Indexed), or use FailJob",
        )
    codes = rule.get("onExitCodes")
    conditions = rule.get("onPodConditions")
    if codes is not None and conditions:
        yield rejected(
            obj,
            f"has both onExitCodes and onPodConditions in {at}",
            f"{source}: specifying both OnExitCodes and OnPodConditions is not supported",
            "split it into two rules",
        )
    elif codes is None and not conditions:
        yield rejected(
            obj,
            f"has neither onExitCodes nor onPodConditions in {at}",
            f"{source}: specifying one of OnExitCodes and OnPodConditions is required",
            "give the rule onExitCodes or onPodConditions",
        )
    if isinstance(codes, dict):
        yield from _exit_codes(obj, f"{at}.onExitCodes", codes, names)
    if isinstance(conditions, list):
        yield from _conditions(obj, f"{at}.onPodConditions", conditions)


def _exit_codes(obj: KubeObject, at: str, codes: Mapping[str, Any], names: set[Any]) -> Iterator[Finding]:
    source = "validatePodFailurePolicyRuleOnExitCodes"
    operator = codes.get("operator")
    if operator not in OPERATORS:
        yield unsupported(obj, f"{at}.operator", operator, OPERATORS, source, "use In or NotIn")
    container = codes.get("containerName")
    if container is not None and container not in names:
        yield rejected(
            obj,
            f"has {at}.containerName {container!r}, not a container of its pod template",
            f"{source}: must be one of the container or initContainer names in the pod template",
            f"name one of {sorted(str(n) for n in names)}, or drop containerName (then any container matches)",
        )
    values = [v for v in codes.get("values") or [] if syntax.integer(v) is not None]
    if not values:
        yield rejected(
            obj, f"has no {at}.values", f"{source}: at least one value is required", "list the exit codes to match"
        )
    elif len(values) > MAX_EXIT_CODES:
        yield rejected(
            obj,
            f"has {len(values)} {at}.values",
            f"{source}: Too many: must have at most {MAX_EXIT_CODES} items",
            "use NotIn for a long list",
        )
    if operator == "In" and 0 in values:
        yield rejected(
            obj,
            f"has exit code 0 in {at}.values with operator In",
            f"{source}: must not be 0 for the In operator",
            "drop 0 (a container that exits 0 has not failed)",
        )
    if len(set(values)) != len(values):
        yield rejected(obj, f"repeats a value in {at}.values", f"{source}: Duplicate value", "list each code once")
    if values != sorted(values):
        yield rejected(obj, f"has {at}.values {values} out of order", f"{source}: must be ordered", "sort them")


def _conditions(obj: KubeObject, at: str, conditions: list[Any]) -> Iterator[Finding]:
    source = "validatePodFailurePolicyRuleOnPodConditions"
    if len(conditions) > MAX_CONDITIONS:
        yield rejected(
            obj,
            f"has {len(conditions)} {at} patterns",
            f"{source}: Too many: must have at most {MAX_CONDITIONS} items",
            "split them over rules",
        )
    for i, pattern in enumerate(conditions):
        status = pattern.get("status") if isinstance(pattern, dict) else None
        if status not in STATUSES:
            yield unsupported(obj, f"{at}[{i}].status", status, STATUSES, source, "use True, False or Unknown")

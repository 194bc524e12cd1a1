"""LimitRanges and ResourceQuotas as ValidateLimitRange and ValidateResourceQuota see them (``api-validation``).

A namespace's LimitRange is written once and then silently shapes every pod in it; a wrong one is refused at
create. Sources (kubernetes/kubernetes, pkg/apis/core/validation/validation.go):

- LimitRange (ValidateLimitRange): each type (Container, Pod, PersistentVolumeClaim) once; a Pod item without
  default or defaultRequest ("may not be specified when `type` is 'Pod'"); a PersistentVolumeClaim item with a min
  or max storage; per resource min <= defaultRequest <= default <= max, and maxLimitRequestRatio at least 1
  ("min value %s is greater than max value %s", "default request value %s is greater than default limit value %s",
  ...). A Container item is compared after the v1 defaults (pkg/apis/core/v1/defaults.go,
  SetDefaults_LimitRangeItem: default from max, defaultRequest from default, else from min), as the server does;
- ResourceQuota (ValidateResourceQuotaSpec, ValidateResourceQuantityValue): each hard value a quantity that is not
  negative; each hard key a qualified name and, without a domain, a standard quota resource
  (ValidateResourceQuotaResourceName, helper.IsStandardQuotaResourceName: "must be a standard resource for quota",
  so "gpu" or "nvidia.com/gpu"'s bare "gpu" is refused, "requests.nvidia.com/gpu" and "count/jobs.batch" are not);
- LimitRange names (validateLimitRangeTypeName, validateLimitRangeResourceName): a type without a domain one of
  Pod, Container, PersistentVolumeClaim ("must be a standard limit type or fully qualified": "container" is
  refused); a resource name without a domain a standard resource (helper.IsStandardResourceName: "must be a
  standard resource type or fully qualified").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import rejected

# helper.standardQuotaResources and standardResources (pkg/apis/core/helper/helpers.go); hugepages-* and
# requests.hugepages-* are standard to both (IsQuotaHugePageResourceName).
QUOTA_RESOURCES = frozenset(
    {
        *("cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage"),
        *("requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods"),
        *("resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps"),
        *("services.nodeports", "services.loadbalancers"),
    }
)
STANDARD_RESOURCES = QUOTA_RESOURCES | {"storage"}
HUGEPAGES = ("hugepages-", "requests.hugepages-")
LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
BOUNDS = ("min", "max", "default", "defaultRequest", "maxLimitRequestRatio")
# (lower, upper, the validator's words) in the order ValidateLimitRange compares them.
ORDER = (
    ("min", "max", "min value {a} is greater than max value {b}"),
    ("min", "defaultRequest", "min value {a} is greater than default request value {b}"),
    ("defaultRequest", "max", "default request value {a} is greater than max value {b}"),
    ("defaultRequest", "default", "default request value {a} is greater than default limit value {b}"),
    ("min", "default", "min value {a} is greater than default value {b}"),
    ("default", "max", "default value {a} is greater than max value {b}"),
)


def check(graph: Graph) -> Iterator[Finding]:
    for obj in graph.kube_objects:
        if obj.kind == "LimitRange":
            yield from _limit_range(obj)
        elif obj.kind == "ResourceQuota":
            hard = lookup(obj.manifest, "spec.hard")
            for name, raw in hard.items() if isinstance(hard, dict) else ():
                yield from _name(obj, f"spec.hard[{name}]", str(name), QUOTA_RESOURCES, "quota")
                value = syntax.parse_quantity(raw)
                if value is None or value < 0:
                    yield rejected(
                        obj,
                        f"has spec.hard[{name}] {raw!r}",
                        "ValidateResourceQuotaSpec: ValidateResourceQuantityValue: "
                        + (
                            "quantities must match the regular expression"
                            if value is None
                            else "must be greater than or equal to 0"
                        ),
                        "write a non-negative quantity such as 8, 64Gi or 500m",
                    )


def _name(obj: KubeObject, field: str, name: str, standard: frozenset[str], what: str) -> Iterator[Finding]:
    """validateResourceName / ValidateResourceQuotaResourceName / validateLimitRangeResourceName."""
    source = "ValidateResourceQuotaResourceName" if what == "quota" else "validateLimitRangeResourceName"
    fix = (
        "use a standard name (cpu, memory, requests.storage, pods, ...) or a fully qualified one "
        "(requests.nvidia.com/gpu, count/jobs.batch)"
    )
    if errors := syntax.is_qualified_name(name):
        yield rejected(obj, f"has {field}, which {'; '.join(errors)}", f"{source}: Invalid value", fix)
    elif "/" not in name and name not in standard and not name.startswith(HUGEPAGES):
        words = (
            "must be a standard resource for quota"
            if what == "quota"
            else "must be a standard resource type or fully qualified"
        )
        yield rejected(obj, f"has {field}", f'{source}: {field}: Invalid value: "{name}": {words}', fix)


def _limit_range(obj: KubeObject) -> Iterator[Finding]:
    items = lookup(obj.manifest, "spec.limits")
    seen: set[str] = set()
    for i, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        at, kind = f"spec.limits[{i}]", str(item.get("type"))
        if isinstance(item.get("type"), str) and "/" not in kind and kind not in LIMIT_TYPES:
            yield rejected(
                obj,
                f"has {at}.type {kind!r}",
                f'validateLimitRangeTypeName: {at}.type: Invalid value: "{kind}": must be a standard limit type or '
                "fully qualified",
                "use Container, Pod or PersistentVolumeClaim (case matters)",
            )
        for bound in BOUNDS:
            values = item.get(bound)
            for name in values if isinstance(values, dict) else {}:
                yield from _name(obj, f"{at}.{bound}[{name}]", str(name), STANDARD_RESOURCES, "limit")
        if kind in seen:
            yield rejected(
                obj, f"has two {kind} items in spec.limits", "ValidateLimitRange: type: Duplicate value", "merge them"
            )
        seen.add(kind)
        if kind == "Pod" and (item.get("default") or item.get("defaultRequest")):
            yield rejected(
                obj,
                f"has {at} of type Pod with a default or defaultRequest",
                "ValidateLimitRange: Forbidden: may not be specified when `type` is 'Pod'",
                "move defaults to a Container item (a pod's limits are its containers' sum)",
            )
        if kind == "PersistentVolumeClaim" and not (
            "storage" in (item.get("min") or {}) or "storage" in (item.get("max") or {})
        ):
            yield rejected(
                obj,
                f"has {at} of type PersistentVolumeClaim without a min or max storage",
                "ValidateLimitRange: Required value: either minimum or maximum storage value is required, but neither "
                "was provided",
                "give min.storage or max.storage",
            )
        yield from _bounds(obj, at, _defaulted(item) if kind == "Container" else _parsed(item))


def _parsed(item: Mapping[str, Any]) -> dict[str, dict[str, tuple[Any, Decimal]]]:
    """bound -> resource -> (as written, value); quantities that do not parse are left out (``pod_validation`` and
    the schema report them)."""
    out: dict[str, dict[str, tuple[Any, Decimal]]] = {}
    for bound in BOUNDS:
        values = item.get(bound)
        out[bound] = {}
        for name, raw in values.items() if isinstance(values, dict) else ():
            if (value := syntax.parse_quantity(raw)) is not None:
                out[bound][str(name)] = (raw, value)
    return out


def _defaulted(item: Mapping[str, Any]) -> dict[str, dict[str, tuple[Any, Decimal]]]:
    """SetDefaults_LimitRangeItem for a Container item: default from max, then defaultRequest from default, then
    from min."""
    out = _parsed(item)
    for name, value in out["max"].items():
        out["default"].setdefault(name, value)
    for name, value in out["default"].items():
        out["defaultRequest"].setdefault(name, value)
    for name, value in out["min"].items():
        out["defaultRequest"].setdefault(name, value)
    return out


def _bounds(obj: KubeObject, at: str, values: dict[str, dict[str, tuple[Any, Decimal]]]) -> Iterator[Finding]:
    names = sorted({n for bound in BOUNDS for n in values[bound]})
    for name in names:
        for lower, upper, words in ORDER:
            low, high = values[lower].get(name), values[upper].get(name)
            if low is not None and high is not None and low[1] > high[1]:
                yield rejected(
                    obj,
                    f"has {at} {lower}[{name}] {low[0]} above {upper}[{name}] {high[0]}",
                    f"ValidateLimitRange: {words.format(a=low[0], b=high[0])}",
                    f"order {name} as min <= defaultRequest <= default <= max (an absent default is the max, an absent "
                    "defaultRequest the default, else the min)",
                )
        ratio = values["maxLimitRequestRatio"].get(name)
        if ratio is not None and ratio[1] < 1:
            yield rejected(
                obj,
                f"has {at} maxLimitRequestRatio[{name}] {ratio[0]}",
                f"ValidateLimitRange: ratio {ratio[0]} is less than 1",
                "use a ratio of 1 or more (a limit is never below its request)",
            )

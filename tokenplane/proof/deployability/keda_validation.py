"""A KEDA ScaledObject as KEDA's admission webhook validates it (part of ``api-validation``).

KEDA's webhook (installed by the pinned chart, ``pins.KEDA_CHART`` 2.20.0) runs these checks on every create and
update and refuses the object with the first error, so ``pulumi up`` fails; where the webhook is not installed the
operator runs the same bounds and fallback checks, marks the object ScaledObjectCheckFailed and creates no HPA (the
workload never scales). Sources: kedacore/keda v2.20.0, ``apis/keda/v1alpha1``:

- replica bounds (scaledobject_types.go, CheckReplicaCountBoundsAreValid): the minimum is 0 when minReplicaCount is
  absent, and 1 when it is written as 0 (GetHPAMinReplicas: the HPA's minimum is at least 1); the maximum is
  maxReplicaCount or 100. "MinReplicaCount=%d must be less than MaxReplicaCount=%d" when min > max, and
  "IdleReplicaCount=%d must be less than MinReplicaCount=%d" when idleReplicaCount >= min (the documented form is
  idleReplicaCount 0 below a minReplicaCount of 1 or more, https://keda.sh/docs/2.20/reference/scaledobject-spec/
  #idlereplicacount);
- fallback (CheckFallbackValid): failureThreshold and replicas not negative; without scalingModifiers at least one
  trigger other than cpu or memory ("at least one trigger (that is not cpu or memory) has to have the `AverageValue`
  type for the fallback to be enabled"); fallback behavior ``scalingModifiers`` only with a scalingModifiers formula
  (scaledobject_webhook.go, verifyScaledObjects);
- triggers (scaletriggers_types.go, ValidateTriggers): at least one ("no triggers defined in the
  ScaledObject/ScaledJob"); trigger names unique; ``useCachedMetrics`` not on a cpu, memory or cron trigger;
- cpu and memory triggers (verifyCPUMemoryScalers): a ScaledObject with only cpu/memory triggers and a minReplicaCount
  absent or 0 ("scale to zero doesn't work in this case");
- names (verifyName): the ScaledObject's name and its HPA's (``advanced.horizontalPodAutoscalerConfig.name``, else
  ``keda-hpa-<name>``) at most 63 characters, label values both.

Two ScaledObjects, or a ScaledObject and an HPA, on one target are ``one-autoscaler``'s (verifyScaledObjects,
verifyHpas); a cpu/memory trigger's container without the request is ``utilization-request``'s.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from tokenplane.proof.deployability import k8s_syntax as syntax
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup
from tokenplane.proof.deployability.object_validation import RULE

DEFAULT_MAX = 100  # defaultHPAMaxReplicas
HPA_MIN = 1  # defaultHPAMinReplicas: what a written minReplicaCount of 0 counts as
LABEL_MAX = 63  # maxK8sLabelValueLength
RESOURCE_TRIGGERS = ("cpu", "memory")
UNCACHEABLE = ("cpu", "memory", "cron")


def check(graph: Graph) -> Iterator[Finding]:
    for scaled in graph.kube(None, "ScaledObject"):
        spec = scaled.manifest.get("spec")
        if isinstance(spec, dict):
            yield from _bounds(scaled, spec)
            yield from _fallback(scaled, spec)
            yield from _triggers(scaled, spec)
            yield from _names(scaled, spec)


def refused(scaled: KubeObject, what: str, error: str, fix: str) -> Finding:
    return Finding(
        RULE,
        scaled.urn,
        f"ScaledObject {scaled.namespace}/{scaled.name} {what}: KEDA's admission webhook rejects it (kedacore/keda "
        f"{error}) and pulumi up fails; without the webhook the operator marks it ScaledObjectCheckFailed and "
        "never scales the workload",
        fix,
    )


def _bounds(scaled: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    written, high = spec.get("minReplicaCount"), spec.get("maxReplicaCount", DEFAULT_MAX)
    idle = syntax.integer(spec.get("idleReplicaCount"))
    if (written is not None and syntax.integer(written) is None) or syntax.integer(high) is None:
        return  # not an integer: the CRD's schema refuses it (render/schema)
    low = 0 if written is None else max(int(written), HPA_MIN)
    if low > int(high):
        yield refused(
            scaled,
            f"has minReplicaCount {written} above maxReplicaCount {high}",
            f"CheckReplicaCountBoundsAreValid: MinReplicaCount={low} must be less than MaxReplicaCount={high}",
            "make spec.maxReplicaCount at least spec.minReplicaCount",
        )
    elif idle is not None and idle >= low:
        shown = "absent (0)" if written is None else f"{written}" + (f" (counted {low})" if low != written else "")
        yield refused(
            scaled,
            f"has idleReplicaCount {idle}, not below minReplicaCount {shown}",
            f"CheckReplicaCountBoundsAreValid: IdleReplicaCount={idle} must be less than MinReplicaCount={low}",
            "idleReplicaCount is the count with no trigger active and KEDA supports only 0 there: set "
            "idleReplicaCount 0 with minReplicaCount 1 or more (to scale to zero when idle), or drop "
            "idleReplicaCount and let minReplicaCount be the floor",
        )


def _fallback(scaled: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    fallback = spec.get("fallback")
    if not isinstance(fallback, dict):
        return
    for field in ("failureThreshold", "replicas"):
        value = syntax.integer(fallback.get(field))
        if value is not None and value < 0:
            yield refused(
                scaled,
                f"has fallback.{field} {value}",
                "CheckFallbackValid: FailureThreshold & Replicas must both be greater than or equal to 0",
                f"give fallback.{field} a count of 0 or more",
            )
    modifiers = lookup(spec, "advanced.scalingModifiers")
    types = [str(t.get("type")) for t in spec.get("triggers") or [] if isinstance(t, dict)]
    if not modifiers and types and all(t in RESOURCE_TRIGGERS for t in types):
        yield refused(
            scaled,
            f"has a fallback but only {' and '.join(sorted(set(types)))} triggers",
            "CheckFallbackValid: at least one trigger (that is not cpu or memory) has to have the `AverageValue` "
            "type for the fallback to be enabled",
            "drop spec.fallback (the metrics server's cpu/memory need none), or add a trigger of an external scaler "
            "with metricType AverageValue for the fallback to stand in for",
        )
    formula = modifiers.get("formula") if isinstance(modifiers, dict) else None
    if fallback.get("behavior") == "scalingModifiers" and not formula:
        yield refused(
            scaled,
            "has fallback.behavior scalingModifiers without advanced.scalingModifiers.formula",
            "verifyScaledObjects: scalingModifiers fallback behavior requires scalingModifiers.formula to be defined",
            "define advanced.scalingModifiers (formula and target), or use fallback.behavior static",
        )


def _triggers(scaled: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    triggers = [t for t in spec.get("triggers") or [] if isinstance(t, dict)]
    if not triggers:
        yield refused(
            scaled,
            "has no triggers",
            "ValidateTriggers: no triggers defined in the ScaledObject/ScaledJob",
            "give spec.triggers at least one trigger (prometheus, cron, cpu, ...)",
        )
        return
    names = Counter(str(t["name"]) for t in triggers if t.get("name"))
    for name in sorted(n for n, count in names.items() if count > 1):
        yield refused(
            scaled,
            f"names two triggers {name!r}",
            f'ValidateTriggers: triggerName "{name}" is defined multiple times in the ScaledObject/ScaledJob, but '
            "it must be unique",
            "give each trigger its own name (or none)",
        )
    for trigger in triggers:
        if trigger.get("useCachedMetrics") is True and trigger.get("type") in UNCACHEABLE:
            yield refused(
                scaled,
                f"sets useCachedMetrics on its {trigger['type']} trigger",
                f'ValidateTriggers: property "useCachedMetrics" is not supported for "{trigger["type"]}" scaler',
                "drop useCachedMetrics from the cpu, memory or cron trigger (the metrics server's values are not "
                "KEDA's to cache)",
            )
    low = spec.get("minReplicaCount")
    if all(t.get("type") in RESOURCE_TRIGGERS for t in triggers) and low in (None, 0):
        yield refused(
            scaled,
            f"has only {' and '.join(sorted({str(t['type']) for t in triggers}))} triggers and minReplicaCount "
            f"{'absent (0)' if low is None else 0}",
            "verifyCPUMemoryScalers: scaledobject has only cpu/memory triggers AND minReplica is 0 (scale to zero "
            "doesn't work in this case)",
            "set minReplicaCount 1 or more (a pod at zero replicas reports no cpu or memory to scale up on), or add "
            "a trigger that can wake the workload (prometheus, a queue)",
        )


def _names(scaled: KubeObject, spec: Mapping[str, Any]) -> Iterator[Finding]:
    hpa = lookup(spec, "advanced.horizontalPodAutoscalerConfig.name") or f"keda-hpa-{scaled.name}"
    for what, name in (("its name", scaled.name), ("its HPA's name", str(hpa))):
        if len(name) > LABEL_MAX:
            yield refused(
                scaled,
                f"has {what} {name!r} of {len(name)} characters",
                f"verifyName: must be no more than {LABEL_MAX} characters (it is used as a label value)",
                "shorten metadata.name (the HPA is keda-hpa-<name>), or set "
                "spec.advanced.horizontalPodAutoscalerConfig.name to a shorter name",
            )
            return

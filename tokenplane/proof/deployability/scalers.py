"""One autoscaler per workload: no two ScaledObjects or HPAs set the same scale target's replicas.

KEDA's admission webhook rejects a ScaledObject whose scaleTargetRef is already scaled by another ScaledObject or an
HPA ("the workload ... is already managed by the ScaledObject/hpa ..."; kedacore/keda
apis/keda/v1alpha1/scaledobject_webhook.go, verifyScaledObjects and verifyHpas;
https://keda.sh/docs/latest/concepts/admission-webhooks/), so ``pulumi up`` fails creating the second one. Where the
webhook is not installed (its failurePolicy is Ignore) both run and fight over ``spec.replicas``. Two HPAs on one
target are refused by the HPA controller itself: it sets ScalingActive False, reason AmbiguousSelector ("pods by
selector ... are controlled by multiple HPAs"; kubernetes pkg/controller/podautoscaler/horizontal.go) and scales
neither. A KEDA ScaledObject composes any number of triggers: a second signal belongs in the first object.

``scale-up-enabled``: an HPA (or the one a ScaledObject's ``advanced.horizontalPodAutoscalerConfig`` shapes) whose
``behavior.scaleUp.selectPolicy`` is ``Disabled`` never adds a replica ("selectPolicy ... Disabled turns off scaling
the given direction", https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#scaling-policies):
with maxReplicas above minReplicas the maximum is unreachable and the workload saturates at its minimum (status
ScalingLimited). A Disabled scale-down is a legitimate choice and is not judged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "one-autoscaler"
SCALE_UP = "scale-up-enabled"


def check(graph: Graph) -> Iterator[Finding]:
    for region in graph.regions():
        by_target: dict[tuple[str, str, str], list[KubeObject]] = defaultdict(list)
        for scaler in graph.kube(region, "ScaledObject", "HorizontalPodAutoscaler"):
            ref = lookup(scaler.manifest, "spec.scaleTargetRef") or {}
            if not ref.get("name"):
                continue
            by_target[(scaler.namespace, str(ref.get("kind") or "Deployment"), str(ref["name"]))].append(scaler)
        for (namespace, kind, name), scalers in by_target.items():
            if len(scalers) < 2:
                continue
            # The ScaledObjects' operator and webhook judge the newcomer: report every one but the first.
            first, *rest = sorted(scalers, key=lambda s: (s.kind != "ScaledObject", s.name))
            for scaler in rest:
                keda = "ScaledObject" in (scaler.kind, first.kind)
                effect = (
                    "KEDA's admission webhook rejects the ScaledObject (verifyScaledObjects/verifyHpas) and pulumi up "
                    "fails; without the webhook both set the replicas and fight"
                    if keda
                    else "the HPA controller scales neither (ScalingActive False, AmbiguousSelector)"
                )
                yield Finding(
                    RULE,
                    scaler.urn,
                    f"{scaler.kind} {namespace}/{scaler.name} scales {kind} {name}, which {first.kind} "
                    f"{first.name} already scales: {effect}",
                    f"add its triggers or metrics to {first.kind} {first.name} (one autoscaler per workload; a "
                    "ScaledObject composes triggers and scales to the largest) and delete this one",
                )


def check_scale_up(graph: Graph) -> Iterator[Finding]:
    for scaler in graph.kube(None, "ScaledObject", "HorizontalPodAutoscaler"):
        spec = scaler.manifest.get("spec") or {}
        if scaler.kind == "HorizontalPodAutoscaler":
            behavior, at = spec.get("behavior") or {}, "spec.behavior"
            low, high = spec.get("minReplicas", 1), spec.get("maxReplicas")
        else:
            behavior = lookup(spec, "advanced.horizontalPodAutoscalerConfig.behavior") or {}
            at = "spec.advanced.horizontalPodAutoscalerConfig.behavior"
            low, high = spec.get("minReplicaCount", 0), spec.get("maxReplicaCount", 100)  # KEDA's defaults
        if (behavior.get("scaleUp") or {}).get("selectPolicy") != "Disabled":
            continue
        if not isinstance(low, int) or not isinstance(high, int) or high <= max(low, 1):
            continue
        yield Finding(
            SCALE_UP,
            scaler.urn,
            f"{scaler.kind} {scaler.namespace}/{scaler.name} sets {at}.scaleUp.selectPolicy Disabled with "
            f"{high} replicas at most and {low} at least: scaling up is turned off, so it never adds a replica "
            "however busy the pods are (ScalingLimited) and its maximum is unreachable",
            f"drop selectPolicy: Disabled from {at}.scaleUp (slow scale-up with a policy such as Pods 1 per 60 s, or "
            "a stabilizationWindowSeconds), or set maxReplicas to minReplicas if it must not scale out",
        )

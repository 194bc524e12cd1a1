"""One autoscaler per workload: no two ScaledObjects or HPAs set the same scale target's replicas.

KEDA's admission webhook rejects a ScaledObject whose scaleTargetRef is already scaled by another ScaledObject or an
HPA ("the workload ... is already managed by the ScaledObject/hpa ..."; kedacore/keda
apis/keda/v1alpha1/scaledobject_webhook.go, verifyScaledObjects and verifyHpas;
https://keda.sh/docs/latest/concepts/admission-webhooks/), so ``pulumi up`` fails creating the second one. Where the
webhook is not installed (its failurePolicy is Ignore) both run and fight over ``spec.replicas``. Two HPAs on one
target are refused by the HPA controller itself: it sets ScalingActive False, reason AmbiguousSelector ("pods by
selector ... are controlled by multiple HPAs"; kubernetes pkg/controller/podautoscaler/horizontal.go) and scales
neither. A KEDA ScaledObject composes any number of triggers: a second signal belongs in the first object.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "one-autoscaler"


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

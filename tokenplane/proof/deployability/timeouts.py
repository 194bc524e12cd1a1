"""Every GPU Deployment's expected time to Ready fits the time ``pulumi up`` waits for it.

pulumi-kubernetes awaits a Deployment's rollout (ten minutes unless
``customTimeouts`` or the ``pulumi.com/timeoutSeconds`` annotation say
otherwise, or ``pulumi.com/skipAwait`` turns the wait off) and fails the
update when it runs out, though the pods would have become Ready later.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.contract import POOL_LABEL, TIME_TO_READY_ANNOTATION
from tokenplane.model.startup import PULUMI_DEFAULT_AWAIT_SECONDS, parse_duration, time_to_ready
from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, KubeObject, lookup

RULE = "await-timeout"
SKIP_AWAIT = "pulumi.com/skipAwait"
TIMEOUT_ANNOTATION = "pulumi.com/timeoutSeconds"


def await_seconds(deployment: KubeObject, operation: str) -> float | None:
    """How long Pulumi waits for ``operation`` (create or update); None when it does not wait."""
    annotations = lookup(deployment.manifest, "metadata.annotations") or {}
    if str(annotations.get(SKIP_AWAIT, "")).lower() == "true":
        return None
    if TIMEOUT_ANNOTATION in annotations:
        return float(annotations[TIMEOUT_ANNOTATION])
    text = deployment.resource.custom_timeouts.get(operation)
    if text:
        seconds = parse_duration(text)
        if seconds is None:
            raise ValueError(f"{deployment.urn}: customTimeouts.{operation}={text!r} is not a duration like 40m")
        return seconds
    return PULUMI_DEFAULT_AWAIT_SECONDS


def check(graph: Graph) -> Iterator[Finding]:
    for deployment in graph.kube(None, "Deployment"):
        pool_name = (lookup(deployment.manifest, "metadata.labels") or {}).get(POOL_LABEL)
        if pool_name is None:
            continue
        expected = expected_ready(graph, deployment, str(pool_name))
        if isinstance(expected, Finding):
            yield expected
            continue
        seconds, why = expected
        for operation in ("create", "update"):
            waits = await_seconds(deployment, operation)
            if waits is not None and waits < seconds:
                yield Finding(
                    RULE,
                    deployment.urn,
                    f"pulumi up waits {waits:.0f} s for the {operation} of Deployment {deployment.name}, "
                    f"but its first replica needs {why}",
                    f"set customTimeouts {operation} to at least {seconds / 60:.0f}m on the Deployment",
                )


def expected_ready(graph: Graph, deployment: KubeObject, pool_name: str) -> tuple[float, str] | Finding:
    """The pool's time to Ready and how it was found: from the spec's pool, or, for a program without a spec,
    from the estimate ``VllmPool`` wrote on the Deployment (the same ``time_to_ready`` over the same models)."""
    if graph.spec is not None:
        pool = next((p for p in graph.spec.pools if p.name == pool_name), None)
        if pool is None:
            return Finding(
                RULE,
                deployment.urn,
                f"labelled {POOL_LABEL}={pool_name}, a pool the spec does not have",
                "label it with one of the spec's pools",
            )
        estimate = time_to_ready(graph.spec, pool)
        return estimate.total, str(estimate)
    written = (lookup(deployment.manifest, "metadata.annotations") or {}).get(TIME_TO_READY_ANNOTATION)
    try:
        seconds = float(written) if written is not None else None
    except ValueError:
        seconds = None
    if seconds is None:
        return Finding(
            RULE,
            deployment.urn,
            f"labelled {POOL_LABEL}={pool_name}, but with no spec to estimate its start-up from and no readable "
            f"{TIME_TO_READY_ANNOTATION} annotation (got {written!r}): nothing shows that pulumi up waits long enough",
            f"build the pool with components.VllmPool, which writes it, or set {TIME_TO_READY_ANNOTATION} to the "
            "seconds a first replica takes (tokenplane.model.startup.time_to_ready)",
        )
    return seconds, f"{seconds:.0f} s (its {TIME_TO_READY_ANNOTATION} annotation)"

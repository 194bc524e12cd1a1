"""Every GPU Deployment's expected time to Ready fits the time ``pulumi up`` waits for it.

pulumi-kubernetes awaits a Deployment's rollout (ten minutes unless
``customTimeouts`` or the ``pulumi.com/timeoutSeconds`` annotation say
otherwise, or ``pulumi.com/skipAwait`` turns the wait off) and fails the
update when it runs out, though the pods would have become Ready later.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.contract import POOL_LABEL
from tokenplane.deploy.findings import Finding
from tokenplane.deploy.graph import Graph, KubeObject, lookup
from tokenplane.startup import PULUMI_DEFAULT_AWAIT_SECONDS, parse_duration, time_to_ready

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
    pools = {p.name: p for p in graph.spec.pools}
    for deployment in graph.kube(None, "Deployment"):
        pool_name = (lookup(deployment.manifest, "metadata.labels") or {}).get(POOL_LABEL)
        if pool_name is None:
            continue
        pool = pools.get(str(pool_name))
        if pool is None:
            yield Finding(
                RULE,
                deployment.urn,
                f"labelled {POOL_LABEL}={pool_name}, a pool the spec does not have",
                "label it with one of the spec's pools",
            )
            continue
        expected = time_to_ready(graph.spec, pool)
        for operation in ("create", "update"):
            waits = await_seconds(deployment, operation)
            if waits is not None and waits < expected.total:
                yield Finding(
                    RULE,
                    deployment.urn,
                    f"pulumi up waits {waits:.0f} s for the {operation} of Deployment {deployment.name}, "
                    f"but its first replica needs {expected}",
                    f"set customTimeouts {operation} to at least {expected.total / 60:.0f}m on the Deployment",
                )

"""A container's preStop sleep ends inside the pod's termination grace period.

The preStop hook runs inside ``terminationGracePeriodSeconds`` (default 30): the kubelet sends the container
SIGTERM only after the hook returns, and when the grace period runs out first it gives one 2 s extension and then
SIGKILLs the container with the hook still running. A ``sleep N`` hook (the usual way to let callers' pooled
connections drain after the pod leaves the endpoints) with N at or above the grace period therefore never lets the
server see SIGTERM: it is killed mid-drain on every rollout, drain and scale-in, and requests still arriving on
kept-alive connections are reset. The exec form is not checked by the API server; the native ``sleep`` action is
(validateSleepAction: "must be non-negative and less than terminationGracePeriodSeconds", refusing
``sleep.Seconds > *gracePeriod``, as quoted in KEP-4818 in kubernetes/enhancements), so ``pulumi up`` fails there
when N exceeds the grace period.
https://kubernetes.io/docs/concepts/containers/container-lifecycle-hooks/#hook-handler-execution ,
https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination

Read: an exec preStop of the shapes ``["sleep", "N"]`` and ``["sh", "-c", "sleep N"]`` (also ``sleep N && ...`` or
``sleep N; ...``), N in whole seconds with an optional ``s``, and the native ``sleep: {seconds: N}``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph

RULE = "prestop-within-grace"
DEFAULT_GRACE_SECONDS = 30  # PodSpec.terminationGracePeriodSeconds' default
SHELLS = {"sh", "bash", "ash", "dash"}
SCRIPT_SLEEP = re.compile(r"\s*(?:exec\s+)?sleep\s+(\d+)s?\s*(?:$|&&|;|\|\|)")


def prestop_sleep(hook: Any) -> tuple[int, str] | None:
    """The seconds a preStop hook sleeps before anything else, and its form ("exec" or "sleep"); None if unknown."""
    if not isinstance(hook, dict):
        return None
    native = hook.get("sleep")
    if isinstance(native, dict) and isinstance(native.get("seconds"), int):
        return native["seconds"], "sleep"
    command = [str(word) for word in ((hook.get("exec") or {}).get("command") or [])]
    program = command[0].rsplit("/", 1)[-1] if command else ""
    if program == "sleep" and len(command) == 2 and (match := re.fullmatch(r"(\d+)s?", command[1])):
        return int(match.group(1)), "exec"
    if program in SHELLS and len(command) == 3 and command[1] == "-c" and (match := SCRIPT_SLEEP.match(command[2])):
        return int(match.group(1)), "exec"
    return None


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        pod = workload.pod_spec()
        grace = pod.get("terminationGracePeriodSeconds")
        grace = DEFAULT_GRACE_SECONDS if grace is None else grace
        if not isinstance(grace, int):
            continue
        for container in pod.get("containers") or []:
            found = prestop_sleep((container.get("lifecycle") or {}).get("preStop"))
            if found is None or found[0] < grace:
                continue
            seconds, form = found
            where = (
                f"container {container.get('name')} of {workload.kind} {workload.namespace}/{workload.name} sleeps "
                f"{seconds} s in its lifecycle.preStop ({form}), at least its terminationGracePeriodSeconds {grace}"
            )
            effect = (
                "the API server refuses a sleep action longer than the grace period (validateSleepAction) and pulumi "
                "up fails"
                if form == "sleep" and seconds > grace
                else "the kubelet SIGKILLs the container while the hook still sleeps (after the grace period and "
                "one 2 s extension), so the server never gets SIGTERM to drain and every rollout, drain or scale-in "
                "resets the connections still in use"
            )
            yield Finding(
                RULE,
                workload.urn,
                f"{where}: {effect}",
                f"raise spec.template.spec.terminationGracePeriodSeconds above {seconds} s plus the server's own "
                f"drain time, or shorten the sleep below {grace} s",
            )

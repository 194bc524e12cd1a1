"""Every container's memory is a figure a container can start in.

``memory-startable``: a Kubernetes quantity's ``m`` is milli, so ``memory: 4096m`` is about 4 bytes ("if you
request 400m of memory, this is a request for 0.4 bytes. Someone who types that probably meant to ask for 400
mebibytes (400Mi) or 400 megabytes (400M)",
https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#meaning-of-memory). The API server
accepts it; the runtime cannot start a container in a cgroup that small. CRI-O refuses any limit under 12 MiB ("set
memory limit 1048576 too low; should be at least 12582912", ``minMemoryLimit`` in cri-o's
server/container_create_linux.go), Docker any under 6 MiB ("Minimum memory limit allowed is 6MB", moby's
``linuxMinMemory``), and under containerd runc's init is OOM-killed before the process starts ("runc create
failed: unable to start container process: container init was OOM-killed (memory limit too low?)", runc's
libcontainer/process_linux.go). The pods never become Ready and Pulumi's await on the workload times out.

The floor judged is the lowest of those, ``MEMORY_FLOOR`` (6 MiB): a limit below it starts on no runtime. A request
below it (with no limit, or a limit above it) starts, but reserves nothing: the scheduler packs the pod onto a full
node and it is the first evicted and OOM-killed, so it is judged too. Any memory quantity written with ``m`` is a
fraction of a byte per unit and no one means it. Read for every container and init container of every pod-bearing
kind (Deployment, StatefulSet, DaemonSet, Job, CronJob, Pod) and for a LimitRange's Container ``default`` and
``defaultRequest``, which the admission plugin writes into every pod of its namespace that sets none.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph
from tokenplane.proof.deployability.k8s_syntax import parse_quantity

RULE = "memory-startable"
MEMORY_FLOOR = 6 * 2**20  # moby's linuxMinMemory; CRI-O's minMemoryLimit is higher (12 MiB), runc has no check
MILLI = "m"


def _problem(value: Any) -> str | None:
    """Why a memory quantity is no figure a container starts in, or None where it is one (or does not parse:
    ``api-validation`` reports that)."""
    parsed = parse_quantity(value)
    if parsed is None:
        return None
    text = str(value).strip()
    milli = text.endswith(MILLI) and not isinstance(value, int | float)
    if not milli and parsed >= MEMORY_FLOOR:
        return None
    size = f"{parsed.normalize():f} bytes" if parsed < 1024 else f"{parsed / Decimal(2**20):.2f} MiB"
    said = f"{text!r} is {size}"
    if milli:
        said += " ('m' is milli: thousandths of a byte)"
    return said


def _fix(value: Any) -> str:
    text = str(value).strip()
    if text.endswith(MILLI):
        number = text[: -len(MILLI)]
        return f"write {number}Mi (mebibytes) or {number}M (megabytes), not {text}"
    return f"give it at least {MEMORY_FLOOR // 2**20}Mi (more than the process needs)"


def check(graph: Graph) -> Iterator[Finding]:
    for workload in graph.pod_bearers():
        spec = workload.pod_template().get("spec") or {}
        for field in ("initContainers", "containers"):
            for container in spec.get(field) or []:
                if not isinstance(container, dict):
                    continue
                resources = container.get("resources") or {}
                who = (
                    f"{'init container' if field == 'initContainers' else 'container'} {container.get('name')} of "
                    f"{workload.kind} {workload.namespace}/{workload.name}"
                )
                yield from _resources(workload.urn, who, resources)
    for limit_range in graph.kube(None, "LimitRange"):
        for item in (limit_range.manifest.get("spec") or {}).get("limits") or []:
            if not isinstance(item, dict) or item.get("type") != "Container":
                continue
            who = f"LimitRange {limit_range.namespace}/{limit_range.name} (every container of its namespace without its own)"
            defaults = {"limits": item.get("default") or {}, "requests": item.get("defaultRequest") or {}}
            yield from _resources(limit_range.urn, who, defaults, prefix="spec.limits[].")


def _resources(urn: str, who: str, resources: dict[str, Any], prefix: str = "") -> Iterator[Finding]:
    limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
    limit_problem = _problem(limits.get("memory")) if "memory" in limits else None
    if limit_problem is not None:
        field = f"{prefix}{'default' if prefix else 'resources.limits'}.memory"
        yield Finding(
            RULE,
            urn,
            f"{who}: {field} {limit_problem}, below the {MEMORY_FLOOR // 2**20} MiB a container starts in: the API "
            "server accepts it, but the runtime refuses the cgroup or OOM-kills the container's init (\"container "
            'init was OOM-killed (memory limit too low?)"), so the pods never become Ready and the await times out',
            _fix(limits.get("memory")),
        )
    request_problem = _problem(requests.get("memory")) if "memory" in requests else None
    if request_problem is not None:
        field = f"{prefix}{'defaultRequest' if prefix else 'resources.requests'}.memory"
        yield Finding(
            RULE,
            urn,
            f"{who}: {field} {request_problem}: the scheduler reserves no memory for it, so the pod lands on full "
            "nodes and is the first evicted or OOM-killed",
            _fix(requests.get("memory")),
        )

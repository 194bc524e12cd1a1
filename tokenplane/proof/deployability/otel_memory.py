"""A collector's ``memory_limiter`` refuses data below its container's memory limit, before the kernel kills it.

The memory_limiter processor checks the process's memory every ``check_interval`` and refuses data above a soft
limit (``limit_mib - spike_limit_mib``) and forces a GC above the hard limit ``limit_mib``; its README says the
limit must sit below the container's: "Note that typically the total memory usage of process will be about 50MiB
higher than this value" and, in a container, to use ``limit_percentage`` / ``spike_limit_percentage`` (computed from
the cgroup limit) or a ``limit_mib`` under it (https://github.com/open-telemetry/opentelemetry-collector/blob/main/
processor/memorylimiterprocessor/README.md). A ``limit_mib`` at or above the container's ``resources.limits.memory``
never engages: the kernel OOM-kills the container at its cgroup limit first
(https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#requests-and-limits), so a burst
restarts the collector (OOMKilled) and drops what it held, while the deploy itself succeeds.

Judged where the whole configuration is known (``otel_collector_config.collectors``), the processor
(``memory_limiter`` or ``memory_limiter/<name>``) is in some pipeline, its ``limit_mib`` is a number, and the
container has a memory limit. Cannot see: ``limit_mib`` from a variable, a limiter under the limit that still leaves
too little headroom (the ~50 MiB the README names is a rule of thumb), a pod without a container memory limit.
"""

from __future__ import annotations

from collections.abc import Iterator

from tokenplane.proof.deployability.findings import Finding
from tokenplane.proof.deployability.graph import Graph, number
from tokenplane.proof.deployability.k8s_syntax import parse_quantity
from tokenplane.proof.deployability.otel_collector_config import (
    collectors,
    component_type,
    processors_in_use,
    section,
)

RULE = "otel-memory-limiter"
MIB = 1 << 20


def check(graph: Graph) -> Iterator[Finding]:
    for collector in collectors(graph):
        processors = section(collector.config, "processors")
        limit = ((collector.container.get("resources") or {}).get("limits") or {}).get("memory")
        container_bytes = parse_quantity(limit) if limit is not None else None
        if container_bytes is None or container_bytes <= 0:
            continue
        for pid in sorted(processors_in_use(collector.config)):
            settings = processors.get(pid)
            if component_type(pid) != "memory_limiter" or not isinstance(settings, dict):
                continue
            limit_mib = number(settings.get("limit_mib"))
            if limit_mib is None or limit_mib <= 0 or limit_mib * MIB < float(container_bytes):
                continue
            spike = number(settings.get("spike_limit_mib"))
            soft = limit_mib - (spike if spike is not None else limit_mib * 0.2)
            yield Finding(
                RULE,
                collector.workload.urn,
                f"{collector.where}: processor {pid} has limit_mib {limit_mib:g} (refusing data only above "
                f"{soft:g} MiB), at or above the container's memory limit {limit} "
                f"({float(container_bytes) / MIB:g} MiB): the kernel OOM-kills the collector at its cgroup limit "
                "before the limiter ever refuses data, so a burst restarts it (OOMKilled) and loses what it held",
                f"set limit_mib below the container's limit with headroom (about 80% of {float(container_bytes) / MIB:g} "
                "MiB), or use limit_percentage: 80 and spike_limit_percentage: 20, which read the cgroup limit",
            )

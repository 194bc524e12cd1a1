"""How many vCPUs the system node group must hold when every CPU workload is at its autoscaling maximum.

The gateways' HPAs and the batch workers' ScaledObject may scale far beyond
their floors; the Cluster Autoscaler can follow only up to the system node
group's maxSize, which is derived from this. The deployability check
``node-capacity`` adds up the same maxima from the rendered graph.
"""

from __future__ import annotations

import math

from tokenplane.allocatable import plannable_cpu
from tokenplane.components.batch_workers import WORKER_CPU, WORKER_MAX_REPLICAS
from tokenplane.components.finops import finops_cpu_at_maxima
from tokenplane.components.gateway import GATEWAY_CPU, replica_bounds
from tokenplane.components.gateway_config import GatewayConfig
from tokenplane.spec import PlatformSpec, Region, WorkloadClass

GATEWAYS = 2  # the AI gateway and the model gateway, each with the same replica bounds
OTHER_CPU = 4.0  # Qdrant (up to 3 x 1 vCPU), the OTel collectors and the publish Jobs


def system_cpu_at_maxima(spec: PlatformSpec, region: Region) -> float:
    """vCPUs the region's system nodes must hold with the gateways, batch workers and FinOps plane at their
    autoscaling maxima: ``ClusterArgs.system_cpu``, from which the system node group's maxSize is derived."""
    _, high = replica_bounds(GatewayConfig.from_spec(spec, region.name))
    cpu = GATEWAYS * high * GATEWAY_CPU + OTHER_CPU
    if any(WorkloadClass.D in spec.pool(p.pool).classes for p in region.pools):
        cpu += WORKER_MAX_REPLICAS * WORKER_CPU
    return cpu + finops_cpu_at_maxima(spec)


def system_max_nodes(cpu: float, instance: str, floor: int) -> int:
    """Nodes of ``instance`` that hold ``cpu`` of requests, and never fewer than ``floor``."""
    return max(floor, math.ceil(cpu / plannable_cpu(instance)))

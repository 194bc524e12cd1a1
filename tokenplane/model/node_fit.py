"""Whether a pool's default node fits it: the GPUs a pool pays for and leaves idle, and the node that would not.

A pool that names only its GPU runs on the catalog's default node for it (``catalog.DEFAULT_INSTANCE``),
a multi-GPU node chosen so that tensor parallelism has room. A pool at TP x PP = 1 with one warm replica
then pays for a 4-GPU ``g6e.12xlarge`` ($10.49/h) to use one GPU, where a ``g6e.xlarge`` ($1.86/h) holds
the replica. The planner says so, with the cost of the idle GPUs and the ``instance_type`` that fits.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenplane.catalog import INSTANCE_TYPES, InstanceType, canonical_gpu_name
from tokenplane.model import capacity as cap
from tokenplane.pool_model import node_for
from tokenplane.spec import Pool


@dataclass(frozen=True)
class IdleGpus:
    """A pool on its default node at ``replicas`` replicas: the GPUs left idle and a cheaper node that fits."""

    node: InstanceType
    replicas: int
    idle_gpus: int
    usd_per_hour: float  # the default nodes at ``replicas``
    smallest: InstanceType
    smallest_usd_per_hour: float  # the smallest fitting nodes at ``replicas``

    def message(self, where: str, pool: Pool) -> str:
        return (
            f"{where}: {pool.gpu} at TP x PP = {pool.gpus_per_replica} gets the default {self.node.name} "
            f"({self.node.gpus} GPUs, ${self.node.usd_per_hour:.2f}/h a node); at {self.replicas} replica(s) "
            f"{self.idle_gpus} GPU(s) sit idle, ${self.usd_per_hour:.2f}/h where {self.smallest.name} nodes cost "
            f"${self.smallest_usd_per_hour:.2f}/h. Set instance_type: {self.smallest.name} on the pool, or keep "
            "the default for the room tensor parallelism needs"
        )


def smallest_node(pool: Pool) -> InstanceType:
    """The cheapest node of the pool's GPU that holds one replica (its TP x PP GPUs)."""
    gpu = canonical_gpu_name(pool.gpu)
    fitting = [it for it in INSTANCE_TYPES.values() if it.gpu == gpu and it.gpus >= pool.gpus_per_replica]
    return min(fitting, key=lambda it: (it.usd_per_hour, it.gpus))


def idle_on_default_node(pool: Pool, replicas: int) -> IdleGpus | None:
    """The idle GPUs of a pool that names no instance_type, where a cheaper node fits; None otherwise."""
    if pool.instance_type is not None or replicas < 1:
        return None
    node, smallest = node_for(pool), smallest_node(pool)
    if smallest.name == node.name:
        return None
    nodes = cap.nodes_needed(replicas, pool.gpus_per_replica, node.gpus)
    idle = nodes * node.gpus - replicas * pool.gpus_per_replica
    small_nodes = cap.nodes_needed(replicas, pool.gpus_per_replica, smallest.gpus)
    cost, small_cost = nodes * node.usd_per_hour, small_nodes * smallest.usd_per_hour
    if idle == 0 or small_cost >= cost:
        return None
    return IdleGpus(node, replicas, idle, cost, smallest, small_cost)

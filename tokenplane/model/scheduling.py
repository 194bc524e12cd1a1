"""Which scheduling policy a pool's replicas run, decided once from the spec for every side that needs it.

vLLM orders its waiting queue, and picks what a full KV cache preempts, by its
``--scheduling-policy``: ``priority`` (the lowest level's latest arrival is preempted and
waits again in its level's place) or ``fcfs`` (the newest admitted sequence is preempted and
waits first in line). The render (``vllm_args``), the model gateway (which then sends each
request's level as vLLM's ``priority``), the planner's preemption model and the simulator
(``pool_model.timing``) all ask ``serves_several_levels``, so that what is sized and
simulated is what the replicas run. Imports only the spec.
"""

from __future__ import annotations

from tokenplane.spec import PlatformSpec, Pool, Priority, WorkloadClass


def priority_levels(spec: PlatformSpec, region: str, cls: WorkloadClass) -> tuple[float, ...]:
    """P(priority level | region, class), critical first: batch for class D, the tenants' mix (by RPM) otherwise.

    A tenant pinned to a jurisdiction sends traffic only to that jurisdiction's regions; the
    others spread over every region by traffic share. Batch-priority tenants are taken to be
    class D's senders. With no interactive tenants, interactive traffic is normal. The
    simulator draws priorities from the same shares (``sim.workload.priority_mix``).
    """
    levels = list(Priority)
    shares = [0.0] * len(levels)
    if cls is WorkloadClass.D:
        shares[levels.index(Priority.BATCH)] = 1.0
        return tuple(shares)
    here = spec.region(region)
    for tenant in spec.tenants:
        if tenant.priority is Priority.BATCH:
            continue
        if tenant.residency is None:
            share = here.traffic_share
        elif tenant.residency is here.jurisdiction:
            peers = sum(r.traffic_share for r in spec.regions if r.jurisdiction is here.jurisdiction)
            share = here.traffic_share / peers if peers > 0 else 0.0
        else:
            share = 0.0
        shares[levels.index(tenant.priority)] += tenant.rpm * share
    total = sum(shares)
    if total <= 0:
        shares = [0.0] * len(levels)
        shares[levels.index(Priority.NORMAL)] = 1.0
        return tuple(shares)
    return tuple(s / total for s in shares)


def serves_several_levels(spec: PlatformSpec, pool: Pool) -> bool:
    """Whether requests of more than one priority level reach ``pool`` in any region it runs in.

    Such a pool's replicas run vLLM's priority scheduler (``vllm_args``: ``--scheduling-policy priority``),
    as the planner and the simulator then assume (``pool_model.timing``); one level is first come, first
    served either way.
    """
    levels: set[int] = set()
    for region in spec.regions:
        if not any(p.pool == pool.name for p in region.pools):
            continue
        for cls in pool.classes:
            levels |= {i for i, share in enumerate(priority_levels(spec, region.name, cls)) if share > 0}
    return len(levels) > 1

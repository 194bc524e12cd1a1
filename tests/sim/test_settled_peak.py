"""A platform settled at its planned count keeps it at peak: the autoscaler's stabilization window at the start.

`tokenplane simulate --initial settled` starts every pool at the replicas the autoscaler settles on
for the starting load: a platform that has been running. The HPA scales down to the highest
recommendation inside ``behavior.scaleDown.stabilizationWindowSeconds`` (``scale_down_delay_seconds``),
so such a platform's window holds that count; an empty window let the first period's Poisson dip
in the arrival rate drain planned replicas 15 s into a flat peak (byteion seed 0: eu-west/medium-rag
413 -> 409, ap-southeast/batch-catalog 16 -> 15 and over its service rate).
"""

from __future__ import annotations

from tokenplane.sim.autoscale import EVALUATION_S, ReplicaState, Scaler, Signals
from tokenplane.spec import Autoscaling


def _scaler(delay_s: float) -> Scaler:
    return Scaler(
        first=0,
        min_replicas=2,
        max_replicas=40,
        spec=Autoscaling(scale_down_delay_seconds=delay_s),
        service_rps_per_replica=10.0,
        replicas_per_node=1,
        gpus_per_replica=1,
        gpus_per_node=1,
        usd_per_node_hour=1.0,
    )


def _quiet(arrival_rps: float) -> Signals:
    return Signals(arrival_rps=arrival_rps, queue_wait_s=0.0, kv_usage=0.0, ttft_p95_s=0.0)


def test_a_settled_pool_keeps_its_replicas_through_a_dip_inside_the_stabilization_window() -> None:
    scaler = _scaler(delay_s=600)
    scaler.settle(30)  # 30 x 10 req/s x 0.8: settled for 240 req/s
    _, draining, _ = scaler.step(EVALUATION_S, EVALUATION_S, _quiet(220.0))  # one period's dip: 28 recommended
    assert draining == []
    assert scaler.count(ReplicaState.READY) == 30


def test_a_settled_pool_scales_down_once_the_window_has_passed() -> None:
    scaler = _scaler(delay_s=60)
    scaler.settle(30)
    drained: list[int] = []
    for k in range(1, 7):  # 90 s of lower traffic: the settled recommendation leaves the 60 s window
        _, draining, _ = scaler.step(k * EVALUATION_S, k * EVALUATION_S, _quiet(160.0))
        drained += draining
    assert len(drained) == 10  # 160 / (10 x 0.8) = 20 replicas

"""How a pool's Deployment rolls: the batch per wave, whether it surges or takes replicas down, and the time.

One home for the rollout arithmetic: ``components.vllm_pool`` writes the strategy and update timeout from it,
and ``tokenplane.proof.deployability.rollouts`` checks any rendered Deployment with the same functions.

A rolling update of R replicas replaces ``maxSurge + maxUnavailable`` of them per wave (percentages resolved
against R, surge rounded up and unavailable down, as the Deployment controller does), and each wave waits a
whole time to Ready (node, image, weights, engine start). One replica per wave over a large pool takes hours,
far past any update timeout; and a surge pod needs a free node slot, which a node group sized exactly to its
maximum replicas does not have, so with ``maxUnavailable: 0`` it can never roll at all. Percentages, not
counts: the autoscaler sets R, and a count sized for the maximum would take a small pool down whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tokenplane.model.startup import TIMEOUT_MARGIN

# A rollout replaces about a third of the pool per wave: each wave costs one time to Ready, and when there is
# no spare node slot to surge into, each wave takes that share of the pool out of service.
WAVE_PERCENT = 34  # 34, not 33: floor(0.33 x 6) is 1, a pool of six would roll one at a time


@dataclass(frozen=True)
class Rollout:
    """A RollingUpdate's two knobs, the most waves they take at any replica count, and the update timeout."""

    max_surge: int | str
    max_unavailable: int | str
    waves: int
    timeout_minutes: int

    def strategy(self) -> dict[str, object]:
        return {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": self.max_surge, "maxUnavailable": self.max_unavailable},
        }


def plan_rollout(max_replicas: int, spare_replicas: int, time_to_ready_seconds: float) -> Rollout:
    """The rollout of a pool of at most ``max_replicas``, with room for ``spare_replicas`` more on its nodes.

    It surges a third of the pool where the spare room holds that even at the maximum (no capacity lost), and
    otherwise surges into what room there is and takes a third of the pool down per wave.
    """
    if max_replicas < 1:
        raise ValueError(f"max_replicas={max_replicas}: a pool rolls at least one replica")
    percent = f"{WAVE_PERCENT}%"
    surge: int | str
    down: int | str
    if spare_replicas >= resolve(percent, max_replicas, round_up=True):
        surge, down = percent, 0
    else:
        surge, down = max(spare_replicas, 0), percent
    slots = max_replicas + max(spare_replicas, 0)
    waves = worst_waves(max_replicas, surge, down, slots)
    return Rollout(surge, down, waves, math.ceil(waves * time_to_ready_seconds * TIMEOUT_MARGIN / 60))


def waves_at(replicas: int, surge: object, unavailable: object, slots: int | None) -> int:
    """Waves to roll ``replicas`` with this strategy on ``slots`` replica slots (None: unknown, unbounded);
    0 when a wave can never finish (its surge pods wait for slots that never free up)."""
    up = resolve(surge, replicas, round_up=True)
    down = resolve(unavailable, replicas, round_up=False)
    if up == 0 and down == 0:
        down = 1  # the controller's fencepost rule: both resolving to 0 rolls one at a time
    usable = up if slots is None else min(up, max(slots - replicas, 0))
    return math.ceil(replicas / (usable + down)) if usable + down > 0 else 0


def worst_waves(most: int, surge: object, unavailable: object, slots: int | None) -> int:
    """The most waves at any replica count the autoscaler may set (1..most); 0 if some count can never roll."""
    counts = [waves_at(r, surge, unavailable, slots) for r in range(1, most + 1)]
    return 0 if 0 in counts else max(counts)


def resolve(value: object, replicas: int, *, round_up: bool) -> int:
    """A RollingUpdate int-or-percent against ``replicas``: surge rounds up, unavailable down (as Kubernetes)."""
    text = str(value).strip()
    if text.endswith("%"):
        share = float(text[:-1]) / 100 * replicas
        return math.ceil(share) if round_up else math.floor(share)
    return int(float(text))

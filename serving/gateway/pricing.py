"""What a request costs, for quotas and usage events.

A provider charges its list prices per input and output token. A pool's price
is the planner's effective $ per 1M tokens at the load it was sized for: the
node-hours it costs, spread over the tokens it serves at peak. That is the
number chargeback wants, and the same one ``tokenplane plan`` prints.
"""

from __future__ import annotations

import math

from tokenplane.model import planner
from tokenplane.model.planner import Plan
from tokenplane.serving.types import Target, TargetKind, Usage
from tokenplane.spec import PlatformSpec

PER_MILLION = 1_000_000


class Prices:
    """$ per token for every target one region's gateway can reach.

    Args:
        spec: The platform spec (the providers' list prices).
        region: The gateway's region (its pools' prices).
        plan: The spec's capacity plan, when the caller has it already: sizing a whole platform takes
            seconds, and a gateway's start needs it once, for prices and admission permits both.
    """

    def __init__(self, spec: PlatformSpec, region: str, *, plan: Plan | None = None) -> None:
        plan = plan if plan is not None else planner.plan(spec)
        self._pools = {
            p.name: p.usd_per_million_tokens / PER_MILLION
            for p in plan.pools
            if p.region == region and math.isfinite(p.usd_per_million_tokens)
        }
        self._providers = {
            (provider.name, tier): (model.input_usd_per_1m / PER_MILLION, model.output_usd_per_1m / PER_MILLION)
            for provider in spec.providers
            for tier, model in provider.models.items()
        }

    def per_token(self, target: Target) -> tuple[float, float]:
        """(input, output) $ per token."""
        if target.kind is TargetKind.PROVIDER:
            return self._providers.get((target.name, target.tier), (0.0, 0.0))
        price = self._pools.get(target.name, 0.0)
        return price, price

    def cost(self, target: Target, usage: Usage) -> float:
        inp, out = self.per_token(target)
        return usage.prompt_tokens * inp + usage.completion_tokens * out

    def ceiling(self, targets: tuple[Target, ...], prompt_tokens: int, max_tokens: int) -> float:
        """The most the request can cost along its chain: what a quota reserves before the call."""
        return max(self.cost(t, Usage(prompt_tokens, max_tokens)) for t in targets)

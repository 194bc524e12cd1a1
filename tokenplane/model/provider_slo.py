"""The share of a class's requests a provider serves past its SLO: what sizing pools cannot fix.

The planner sizes each pool so that every class it serves reaches ``slo_attainment``. A class's
requests that a region sends to an external provider (``tokenplane.model.traffic.Spill``: no local
pool serves their tier) are served at the provider's stated latency (``providers[].latency``),
which no replica count changes. The workbench gives them that latency without jitter, so when it is
over the class's ``ttft_p95_ms`` (or the tokens it streams take it past ``e2e_p95_ms``) every one of
them misses, and the class's attainment over the whole platform falls by their share: on byteion,
APAC's large tier goes to anthropic (600 ms) while class A's SLO is 500 ms, 2% of class A, and
``tokenplane simulate`` measured class A at 97.5% against its 99% while every pool met it.
``tokenplane.model.platform_attainment`` weighs these misses with the pools' into the class's verdict.
"""

from __future__ import annotations

import math

from tokenplane.spec import ClassSpec, Provider


def missing_share(cls_spec: ClassSpec, provider: Provider) -> float:
    """The share of a class's requests that miss its SLO at this provider's latency, as the workbench serves them.

    The workbench (``tokenplane.sim.tally.settle``) gives a provider's request its first token after
    ``ttft_ms`` and the rest at ``tokens_per_second``; output lengths are uniform over the class's range.
    """
    if cls_spec.ttft_p95_ms is None:
        return 0.0
    latency = provider.latency
    if latency.ttft_ms > cls_spec.ttft_p95_ms:
        return 1.0
    if cls_spec.e2e_p95_ms is None:
        return 0.0
    lo, hi = cls_spec.output_tokens.min, cls_spec.output_tokens.max
    # Done at ttft + (output - 1) / rate: outputs above this many tokens finish after e2e_p95_ms.
    longest_ok = 1 + (cls_spec.e2e_p95_ms - latency.ttft_ms) / 1000 * latency.tokens_per_second
    over = hi - max(lo - 1, math.floor(longest_ok))
    return min(1.0, max(0, over) / (hi - lo + 1))

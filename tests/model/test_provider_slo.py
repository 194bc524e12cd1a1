"""A class whose traffic goes to a provider too slow for its SLO: the planner says so (tokenplane.model.provider_slo)."""

from __future__ import annotations

import pytest

from tests.paths import REPO_ROOT
from tokenplane.load import load_spec_text
from tokenplane.model.provider_slo import missing_share, provider_misses
from tokenplane.model.traffic import route
from tokenplane.spec import ClassSpec, PlatformSpec, Provider, WorkloadClass

BYTEION = (REPO_ROOT / "stacks" / "byteion.yaml").read_text()
ANTHROPIC_LATENCY = "latency: {ttft_ms: 600, tokens_per_second: 70}"


def _byteion(text: str = BYTEION) -> PlatformSpec:
    return load_spec_text(text, filename="byteion.yaml", base_dir=REPO_ROOT / "stacks")


def test_byteion_class_a_sent_to_anthropic_is_capped_below_its_target() -> None:
    # APAC has no large pool: its large tier goes to anthropic, whose 600 ms TTFT is over class A's 500 ms.
    misses = provider_misses(_byteion(), route(_byteion()))
    assert [m.cls for m in misses] == [WorkloadClass.A]
    miss = misses[0]
    assert [(s.region, s.provider) for s, _, _ in miss.spills] == [("ap-southeast", "anthropic")]
    # The simulator measured 19,800 of 985,213 class-A requests at anthropic (2.01%): A at 97.5% platform-wide.
    assert miss.share == pytest.approx(0.0201, abs=0.0005)
    assert miss.ceiling < miss.target
    message = miss.message()
    assert "class A" in message and "anthropic" in message and "600 ms" in message and "98.00%" in message


def test_a_provider_fast_enough_leaves_no_warning() -> None:
    assert ANTHROPIC_LATENCY in BYTEION
    fast = _byteion(BYTEION.replace(ANTHROPIC_LATENCY, "latency: {ttft_ms: 450, tokens_per_second: 70}"))
    assert provider_misses(fast, route(fast)) == []


def test_the_planner_warns_with_the_class_and_the_provider() -> None:
    from tokenplane.model.planner import plan

    result = plan(_byteion())
    slo = [w.message for w in result.warnings if w.kind == "slo"]
    assert len(slo) == 1 and slo[0].startswith("class A: 2.0")


def _cls(e2e_ms: float | None) -> ClassSpec:
    return ClassSpec.model_validate(
        {
            "share": 1.0,
            "prompt_tokens": {"min": 10, "max": 20},
            "output_tokens": {"min": 1, "max": 100},
            "ttft_p95_ms": 500,
            "e2e_p95_ms": e2e_ms,
        }
    )


def _provider(ttft_ms: float, rate: float) -> Provider:
    return Provider.model_validate(
        {
            "name": "p",
            "kind": "openai",
            "base_url": "https://api.example.com/v1",
            "api_key_secret": "aws-sm://x/y",
            "jurisdictions": ["US"],
            "models": {"small": {"model": "m", "input_usd_per_1m": 0.1, "output_usd_per_1m": 0.4}},
            "latency": {"ttft_ms": ttft_ms, "tokens_per_second": rate},
        }
    )


def test_missing_share_counts_outputs_that_stream_past_the_e2e_slo() -> None:
    assert missing_share(_cls(None), _provider(600, 10)) == 1.0  # TTFT alone is over 500 ms
    assert missing_share(_cls(None), _provider(400, 10)) == 0.0  # no e2e SLO: TTFT decides
    # Done at 0.4 s + (n - 1) / 10 s; within 5 s for n <= 47, so 53 of the 100 lengths miss.
    assert missing_share(_cls(5000), _provider(400, 10)) == pytest.approx(0.53)
    assert missing_share(_cls(60_000), _provider(400, 10)) == 0.0

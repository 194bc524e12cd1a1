"""The share of a class's requests a provider serves past its SLO (tokenplane.model.provider_slo).

The plan's verdict on it is in tests/model/test_platform_attainment.py.
"""

from __future__ import annotations

import pytest

from tokenplane.model.provider_slo import missing_share
from tokenplane.spec import ClassSpec, Provider


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

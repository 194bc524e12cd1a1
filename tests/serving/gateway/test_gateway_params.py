"""Every parameter the gateway passes on is checked to OpenAI's types and ranges: a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.serving.conftest import ROOT
from tokenplane.load import load_spec
from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.gateway import params
from tokenplane.serving.gateway.auth import KeyRing
from tokenplane.serving.types import Endpoint

CHAT = {"model": "small", "messages": [{"role": "user", "content": "hi"}]}
TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"logprobs": "yes"}, "logprobs"),
        ({"logprobs": True, "top_logprobs": 1000}, "top_logprobs"),
        ({"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
        ({"top_logprobs": 2}, "top_logprobs"),
        ({"stop": 5}, "stop"),
        ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
        ({"tools": "f"}, "tools"),
        ({"tools": [{"type": "function", "function": {"name": "bad name!"}}]}, "tools[0].function.name"),
        ({"tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "missing"}}}, "tool_choice"),
        ({"tool_choice": "auto"}, "tool_choice"),
        ({"tools": [TOOL], "tool_choice": "sometimes"}, "tool_choice"),
        ({"logit_bias": {"50256": 1000}}, "logit_bias"),
        ({"response_format": {"type": "yaml"}}, "response_format"),
        ({"seed": 1.5}, "seed"),
        ({"user": 7}, "user"),
        ({"parallel_tool_calls": "no"}, "parallel_tool_calls"),
    ],
)
def test_nonsense_chat_parameters_are_a_400_naming_the_parameter(extra: dict[str, Any], param: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        params.check(Endpoint.CHAT, {**CHAT, **extra})
    assert refused.value.param == param and refused.value.status == 400


@pytest.mark.parametrize(
    "extra",
    [
        {"logprobs": True, "top_logprobs": 20},
        {"stop": "\n"},
        {"stop": ["a", "b", "c", "d"]},
        {"tools": [TOOL], "tool_choice": {"type": "function", "function": {"name": "lookup"}}},
        {"tools": [TOOL], "tool_choice": "required"},
        {"tool_choice": "none"},
        {"logit_bias": {"50256": -100}},
        {"response_format": {"type": "json_object"}},
        {"seed": 42, "user": "u-1", "parallel_tool_calls": False},
    ],
)
def test_what_the_api_accepts_passes(extra: dict[str, Any]) -> None:
    params.check(Endpoint.CHAT, {**CHAT, **extra})


def test_completions_logprobs_is_an_integer_up_to_5() -> None:
    params.check(Endpoint.COMPLETIONS, {"logprobs": 5})
    with pytest.raises(InvalidRequest, match="from 0 to 5"):
        params.check(Endpoint.COMPLETIONS, {"logprobs": 6})


def test_a_huge_model_name_is_refused_and_echoed_only_in_part() -> None:
    name = "m" * 65536
    with pytest.raises(InvalidRequest) as refused:
        params.check_model(name)
    assert len(refused.value.message) < 400 and "65538 characters" in refused.value.message


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-tokenplane-timeout-ms", "0"),
        ("x-tokenplane-timeout-ms", "-5000"),
        ("x-tokenplane-timeout-ms", "nan"),
        ("x-tokenplane-timeout-ms", "1e12"),
        ("x-tokenplane-complexity", "2"),
        ("x-tokenplane-complexity", "inf"),
        ("x-tokenplane-latency-slo-ms", "soon"),
        ("x-tokenplane-priority", "urgent"),
        ("x-tokenplane-priority", "HIGH"),
        ("x-tokenplane-priority", ""),
        ("x-tokenplane-task-type", ""),
        ("x-tokenplane-task-type", "t" * 65536),
    ],
)
def test_tokenplane_headers_out_of_range_are_a_400_naming_the_header(header: str, value: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        params.check_headers({header: value})
    assert refused.value.param == header and len(refused.value.message) < 400


def test_tokenplane_headers_in_range_are_read() -> None:
    read = params.check_headers(
        {
            "x-tokenplane-timeout-ms": "1500",
            "x-tokenplane-complexity": "0.3",
            "x-tokenplane-priority": "batch",
            "x-tokenplane-task-type": "summarization",
        }
    )
    assert read == {"timeout_ms": 1500.0, "complexity": 0.3, "latency_slo_ms": None}


@pytest.mark.parametrize("trim", [True, False], ids=["exact", "unicode-strip"])
def test_a_key_followed_by_a_non_breaking_space_is_not_the_key(trim: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``unicode-strip`` puts the first round's ``str.strip()`` back: the key with a trailing NBSP then signs in."""
    from tokenplane.serving.errors import AuthenticationFailed
    from tokenplane.serving.gateway import auth

    if not trim:
        monkeypatch.setattr(auth, "HTTP_WHITESPACE", None)  # str.strip(None): every Unicode space
    spec = load_spec(ROOT / "stacks" / "dev.yaml")
    ring = KeyRing.from_spec(spec, {"env://TOKENPLANE_KEY_DEMO": "sk-demo-0001"}.get)
    assert ring.authenticate("Bearer sk-demo-0001 ").name == "demo"
    if trim:
        with pytest.raises(AuthenticationFailed):
            ring.authenticate("Bearer sk-demo-0001\xa0")
    else:
        assert ring.authenticate("Bearer sk-demo-0001\xa0").name == "demo"

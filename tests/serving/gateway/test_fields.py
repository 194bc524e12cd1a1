"""A top-level field neither OpenAI nor vLLM takes is refused as OpenAI refuses it; vLLM's extras pass."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types import completion_create_params, embedding_create_params
from openai.types.chat import completion_create_params as chat_create_params

from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.gateway import fields
from tokenplane.serving.gateway.requests import parse
from tokenplane.serving.tokens import EstimatingCounter
from tokenplane.serving.types import Endpoint

CHAT = {"model": "small", "messages": [{"role": "user", "content": "hi"}]}
COUNTER = EstimatingCounter()


@pytest.mark.parametrize(
    ("endpoint", "sdk_params"),
    [
        (Endpoint.CHAT, chat_create_params.CompletionCreateParamsBase),
        (Endpoint.COMPLETIONS, completion_create_params.CompletionCreateParamsBase),
        (Endpoint.EMBEDDINGS, embedding_create_params.EmbeddingCreateParams),
    ],
)
def test_every_parameter_of_the_openai_sdk_is_accepted(endpoint: Endpoint, sdk_params: Any) -> None:
    missing = set(sdk_params.__annotations__) - fields.ACCEPTED[endpoint]
    assert not missing, f"the openai SDK sends {sorted(missing)} on {endpoint.value}: add them to fields.OPENAI_*"


def test_an_unknown_field_is_refused_before_it_is_forwarded_naming_it() -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse(Endpoint.CHAT, {**CHAT, "x": [[], [], 0]}, COUNTER)
    assert refused.value.status == 400
    assert refused.value.param == "x" and refused.value.code == "unknown_parameter"
    assert refused.value.message.startswith("Unrecognized request argument supplied: x ")


@pytest.mark.parametrize("endpoint", [Endpoint.COMPLETIONS, Endpoint.EMBEDDINGS])
def test_an_unknown_field_is_refused_on_completions_and_embeddings_too(endpoint: Endpoint) -> None:
    body = {"model": "small", "prompt": "hi"} if endpoint is Endpoint.COMPLETIONS else {"model": "e", "input": "hi"}
    with pytest.raises(InvalidRequest) as refused:
        parse(endpoint, {**body, "padding_for_nothing": "y" * 10}, COUNTER)
    assert refused.value.param == "padding_for_nothing"


def test_a_huge_unknown_field_name_is_echoed_only_in_part() -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse(Endpoint.CHAT, {**CHAT, "k" * 100_000: 1}, COUNTER)
    assert len(refused.value.message) < 400 and "100000 characters" in refused.value.message


def test_vllm_extra_sampling_parameters_pass() -> None:
    extra = {
        "top_k": 5,
        "min_p": 0.1,
        "repetition_penalty": 1.1,
        "structured_outputs": {"choice": ["a", "b"]},
        "chat_template_kwargs": {"enable_thinking": False},
        "ignore_eos": True,
    }
    assert parse(Endpoint.CHAT, {**CHAT, **extra}, COUNTER).body == {**CHAT, **extra}


def test_a_removed_guided_field_names_its_replacement() -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse(Endpoint.CHAT, {**CHAT, "guided_json": {"type": "object"}}, COUNTER)
    assert "use structured_outputs" in refused.value.message


def test_the_responses_api_is_left_to_its_own_checks() -> None:
    assert Endpoint.RESPONSES not in fields.ACCEPTED

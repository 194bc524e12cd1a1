"""The top-level request fields the gateway accepts on each route: OpenAI's, and the pinned vLLM's own.

A field outside them is refused with OpenAI's own answer, a 400 ``Unrecognized request argument supplied:
<name>``, before anything is spent on the request. Forwarding it instead would be pure cost: OpenAI refuses
it, and vLLM ignores it (its request models allow extra fields and only log their names,
``vllm/entrypoints/serve/engine/protocol.py`` in 0.32), yet every hop would carry it, and the engine would
decode it and hand it to pydantic, on the event loop its streams share. A tenant could thus make each hop
decode up to the whole body the decode bounds admit (``serving.jsonbody``) for nothing.

vLLM's extra sampling and template parameters (``top_k``, ``min_p``, ``structured_outputs``,
``chat_template_kwargs``...), which the official ``openai`` client sends through ``extra_body`` as
top-level fields, are accepted: ``VLLM_*`` are the fields of the pinned release's request models
(``tests/engine/test_vllm_fields.py`` compares them on an upgrade), ``OPENAI_*`` those of the OpenAI API
(``tests/serving/gateway/test_fields.py`` compares them with the installed SDK's parameter types). The
Responses API has fields of its own, checked by ``responses_request``; it is not limited here.
"""

from __future__ import annotations

from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.types import Endpoint, Json

# OpenAI's chat.completions.create parameters (the API reference; the SDK's CompletionCreateParams).
OPENAI_CHAT = frozenset(
    {
        "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
        "max_completion_tokens", "max_tokens", "messages", "metadata", "modalities", "model", "moderation", "n",
        "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options",
        "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed",
        "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
        "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
    }
)  # fmt: skip
OPENAI_COMPLETIONS = frozenset(
    {
        "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "model", "n",
        "presence_penalty", "prompt", "seed", "stop", "stream", "stream_options", "suffix", "temperature",
        "top_p", "user",
    }
)  # fmt: skip
OPENAI_EMBEDDINGS = frozenset({"dimensions", "encoding_format", "input", "model", "user"})

# vLLM 0.32's ChatCompletionRequest, CompletionRequest and EmbeddingCompletionRequest fields.
VLLM_CHAT = frozenset(
    {
        "add_generation_prompt", "add_special_tokens", "allowed_token_ids", "bad_words", "cache_salt",
        "chat_template", "chat_template_kwargs", "continue_final_message", "documents", "ec_transfer_params",
        "echo", "frequency_penalty", "ignore_eos", "include_reasoning", "include_stop_str_in_output",
        "kv_transfer_params", "length_penalty", "logit_bias", "logprob_token_ids", "logprobs",
        "max_completion_tokens", "max_tokens", "media_io_kwargs", "messages", "min_p", "min_tokens",
        "mm_payload", "mm_processor_kwargs", "model", "n", "parallel_tool_calls", "presence_penalty", "priority",
        "prompt_logprobs", "reasoning_effort", "repetition_detection", "repetition_penalty", "request_id",
        "response_format", "return_mm_kwargs", "return_prompt_text", "return_token_ids", "return_token_offsets",
        "return_tokens_as_token_ids", "routed_experts_prompt_start", "seed", "session_id", "skip_special_tokens",
        "spaces_between_special_tokens", "stop", "stop_token_ids", "stream", "stream_interval", "stream_options",
        "structured_outputs", "temperature", "thinking_token_budget", "tool_choice", "tools", "top_k",
        "top_logprobs", "top_p", "truncate_prompt_tokens", "truncation_side", "use_beam_search", "user",
        "vllm_xargs", "watermarking",
    }
)  # fmt: skip
VLLM_COMPLETIONS = frozenset(
    {
        "add_special_tokens", "allowed_token_ids", "bad_words", "cache_salt", "ec_transfer_params", "echo",
        "frequency_penalty", "ignore_eos", "include_stop_str_in_output", "kv_transfer_params", "length_penalty",
        "logit_bias", "logprob_token_ids", "logprobs", "max_tokens", "min_p", "min_tokens", "mm_payload", "model",
        "n", "presence_penalty", "priority", "prompt", "prompt_embeds", "prompt_logprobs", "repetition_detection",
        "repetition_penalty", "request_id", "response_format", "return_mm_kwargs", "return_token_ids",
        "return_token_offsets", "return_tokens_as_token_ids", "routed_experts_prompt_start", "seed", "session_id",
        "skip_special_tokens", "spaces_between_special_tokens", "stop", "stop_token_ids", "stream",
        "stream_interval", "stream_options", "structured_outputs", "suffix", "temperature", "thinking_token_budget",
        "top_k", "top_p", "truncate_prompt_tokens", "truncation_side", "use_beam_search", "user", "vllm_xargs",
        "watermarking",
    }
)  # fmt: skip
VLLM_EMBEDDINGS = frozenset(
    {
        "add_special_tokens", "cache_salt", "dimensions", "embed_dtype", "encoding_format", "endianness", "input",
        "mm_processor_kwargs", "model", "padding", "priority", "request_id", "truncate_prompt_tokens",
        "truncation_side", "use_activation", "user",
    }
)  # fmt: skip

ACCEPTED: dict[Endpoint, frozenset[str]] = {
    Endpoint.CHAT: OPENAI_CHAT | VLLM_CHAT,
    Endpoint.COMPLETIONS: OPENAI_COMPLETIONS | VLLM_COMPLETIONS,
    Endpoint.EMBEDDINGS: OPENAI_EMBEDDINGS | VLLM_EMBEDDINGS,
}

# Fields vLLM has dropped, which it now ignores with a warning, so that output silently stops following
# them: named with their replacement rather than refused as unknown.
REPLACED = {
    name: "structured_outputs (or response_format)"
    for name in (
        "guided_json", "guided_regex", "guided_choice", "guided_grammar", "guided_decoding_backend",
        "guided_whitespace_pattern",
    )
}  # fmt: skip


def check_known(endpoint: Endpoint, body: Json) -> None:
    """Refuse a top-level field that neither OpenAI nor vLLM takes on ``endpoint``, as OpenAI refuses it.

    Raises:
        InvalidRequest: 400 ``unknown_parameter``, ``param`` naming the first such field.
    """
    accepted = ACCEPTED.get(endpoint)
    if accepted is None:
        return
    for name in body:
        if name in accepted:
            continue
        shown = name if len(name) <= 64 else f"{name[:64]}... ({len(name)} characters)"
        fix = f"use {REPLACED[name]}" if name in REPLACED else f"see the {endpoint.value} API reference"
        raise InvalidRequest(
            f"Unrecognized request argument supplied: {shown} ({fix}; fields unknown to both OpenAI and vLLM "
            "are refused rather than forwarded)",
            param=name[:64],
            code="unknown_parameter",
        )

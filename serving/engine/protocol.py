"""The OpenAI wire format as vLLM's server speaks it: request checks, response bodies and SSE chunks.

Requests are checked with a few dict lookups rather than a model per request,
since the engine is the benchmark's zero-latency baseline. Every failure is a
``serving.errors`` exception whose message names the field, what was sent and
what is allowed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokenplane.serving import jsonbody, responses_api
from tokenplane.serving.engine.config import EngineConfig
from tokenplane.serving.errors import ContextTooLong, InvalidRequest, NotFound
from tokenplane.serving.types import Json

DONE = b"data: [DONE]\n\n"
ENCODING_FORMATS = ("float", "base64")


def parse_body(raw: bytes) -> Json:
    """The request's JSON object; malformed JSON or a non-object is a 400. Bounded as the AI gateway bounds
    it, with room for the fields the gateways add (``jsonbody.FORWARDED_SLACK``): the largest body the edge
    admits was refused here, after it had been charged."""
    try:
        body = jsonbody.loads_forwarded(raw)
    except jsonbody.BadJson as e:
        raise _not_json(e) from e
    return _object(body)


async def parse_body_yielding(raw: bytes) -> Json:
    """``parse_body`` on the engine's event loop: the loop is given back between the decoder's passes over a
    large body (``jsonbody.loads_yielding``), so the streams in flight wait for one pass (the decode itself,
    ~1.5 ms for the largest body the AI gateway admits), not for all of them back to back (~4 ms)."""
    try:
        body = await jsonbody.loads_yielding(raw, slack=jsonbody.FORWARDED_SLACK)
    except jsonbody.BadJson as e:
        raise _not_json(e) from e
    return _object(body)


def _not_json(error: jsonbody.BadJson) -> InvalidRequest:
    return InvalidRequest(f"the request body is not valid JSON: {error}; send a JSON object")


def _object(body: object) -> Json:
    if not isinstance(body, dict):
        raise InvalidRequest(f"the request body must be a JSON object, not {type(body).__name__}")
    return body


def check_model(body: Json, config: EngineConfig) -> str:
    """The requested model, which must be one the engine serves (else a 404 ``model_not_found``)."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model is required: a string naming a served model", param="model")
    if model not in config.served_model_names:
        served = ", ".join(config.served_model_names)
        raise NotFound(
            f"The model `{model}` does not exist. This server serves: {served}", param="model", code="model_not_found"
        )
    return model


@dataclass(frozen=True, slots=True)
class GenerateParams:
    """The sampling fields the engine honours."""

    model: str
    stream: bool
    include_usage: bool
    max_tokens: int | None
    min_tokens: int
    ignore_eos: bool
    seed: int | None
    priority: int = 0  # vLLM's extra field (lower first); orders the queue only under the priority policy


def parse_generate(body: Json, model: str) -> GenerateParams:
    """Fields shared by chat and completions."""
    n = body.get("n")
    if n is not None and n != 1:
        raise InvalidRequest(f"n={n!r} is not supported: this engine returns one choice (n=1)", param="n")
    stream = _optional(body, "stream", bool) or False
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidRequest('stream_options must be an object such as {"include_usage": true}', param="stream_options")
    include_usage = bool(options and options.get("include_usage"))
    max_tokens = _optional(body, "max_completion_tokens", int)
    if max_tokens is None:
        max_tokens = _optional(body, "max_tokens", int)
    if max_tokens is not None and max_tokens < 1:
        raise InvalidRequest(f"max_tokens={max_tokens} must be at least 1", param="max_tokens")
    min_tokens = _optional(body, "min_tokens", int) or 0
    if min_tokens < 0 or (max_tokens is not None and min_tokens > max_tokens):
        raise InvalidRequest(
            f"min_tokens={min_tokens} must be between 0 and max_tokens={max_tokens}", param="min_tokens"
        )
    return GenerateParams(
        model=model,
        stream=stream,
        include_usage=include_usage,
        max_tokens=max_tokens,
        min_tokens=min_tokens,
        ignore_eos=_optional(body, "ignore_eos", bool) or False,
        seed=_optional(body, "seed", int),
        priority=_optional(body, "priority", int) or 0,
    )


def parse_responses(body: Json, model: str) -> tuple[GenerateParams, list[Json]]:
    """A Responses API request (``POST /v1/responses``): its sampling fields, and its input as chat messages."""
    if body.get("previous_response_id") is not None:
        # vLLM finds an earlier response only where it was stored; this engine stores none.
        raise NotFound(
            f"Response with id '{str(body['previous_response_id'])[:64]}' not found: this engine stores no responses",
            param="previous_response_id",
        )
    items = body.get("input")
    if not (isinstance(items, str) and items) and not (isinstance(items, list) and items):
        raise InvalidRequest("input is required: a string or a non-empty list of input items", param="input")
    max_tokens = _optional(body, "max_output_tokens", int)
    if max_tokens is not None and max_tokens < 1:
        raise InvalidRequest(f"max_output_tokens={max_tokens} must be at least 1", param="max_output_tokens")
    params = GenerateParams(
        model=model,
        stream=_optional(body, "stream", bool) or False,
        include_usage=True,  # a Responses stream always ends with its usage
        max_tokens=max_tokens,
        min_tokens=0,
        ignore_eos=_optional(body, "ignore_eos", bool) or False,
        seed=_optional(body, "seed", int),
        priority=_optional(body, "priority", int) or 0,
    )
    return params, responses_api.input_messages(body)


def _optional(body: Json, key: str, kind: type[Any]) -> Any:
    value = body.get(key)
    # bool is an int in Python, but true is not a token count.
    if value is None or (isinstance(value, kind) and not (kind is int and isinstance(value, bool))):
        return value
    raise InvalidRequest(f"{key} must be {'an integer' if kind is int else 'a boolean'}, got {value!r}", param=key)


def parse_messages(body: Json) -> list[Json]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages is required: a non-empty list of {role, content} objects", param="messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise InvalidRequest(f"messages[{i}] must be an object with a string role", param=f"messages[{i}]")
    return messages


def parse_prompt(body: Json, config: EngineConfig) -> list[int]:
    """A completions prompt's ids: one string, or one list of token ids."""
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], str | list):
        prompt = prompt[0]  # a batch of one prompt
    if isinstance(prompt, str):
        ids = config.counter.ids(prompt)
    elif isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) and t >= 0 for t in prompt):
        ids = list(prompt)
    else:
        raise InvalidRequest(
            "prompt is required: a string or a list of token ids (one prompt per request)", param="prompt"
        )
    if not ids:
        raise InvalidRequest("prompt must not be empty", param="prompt")
    return ids


def parse_embedding_inputs(body: Json) -> list[str | list[int]]:
    """``input``: a string, a list of strings, a list of token ids, or a list of such lists."""
    value = body.get("input")
    items: list[Any] = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    if items and all(isinstance(t, int) and not isinstance(t, bool) for t in items):
        items = [items]  # one input given as token ids
    if not items or not all(_embedding_input(item) for item in items):
        raise InvalidRequest("input is required: a non-empty string, a list of them, or token ids", param="input")
    return items


def _embedding_input(item: Any) -> bool:
    if isinstance(item, str):
        return bool(item)
    return isinstance(item, list) and bool(item) and all(isinstance(t, int) and not isinstance(t, bool) for t in item)


def resolve_max_tokens(prompt_tokens: int, requested: int | None, config: EngineConfig, *, where: str) -> int:
    """``max_tokens`` or what the context leaves; a 400 ``context_length_exceeded`` when it does not fit."""
    limit = config.max_model_len
    completion = requested if requested is not None else max(limit - prompt_tokens, 0)
    if prompt_tokens + completion > limit or completion < 1:
        raise ContextTooLong(
            f"This model's maximum context length is {limit} tokens. However, you requested "
            f"{prompt_tokens + completion} tokens ({prompt_tokens} in the {where}, {completion} in the completion). "
            f"Please reduce the length of the {where} or completion.",
            param=where,
        )
    return completion


def check_embedding_length(tokens: int, config: EngineConfig) -> None:
    if tokens > config.max_model_len:
        raise ContextTooLong(
            f"This model's maximum context length is {config.max_model_len} tokens. However, you requested "
            f"{tokens} tokens in the input for embedding generation. Please reduce the length of the input.",
            param="input",
        )


# --- responses --------------------------------------------------------------------------------------


def usage(prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> Json:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": cached_tokens},
    }


def chat_response(rid: str, created: int, model: str, text: str, finish_reason: str | None, use: Json) -> Json:
    return {
        "id": rid,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "tool_calls": []},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": use,
    }


def completion_response(rid: str, created: int, model: str, text: str, finish_reason: str | None, use: Json) -> Json:
    return {
        "id": rid,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish_reason}],
        "usage": use,
    }


class ChunkWriter:
    """SSE chunks of one streamed response, as OpenAI sends them (``data: {json}\\n\\n``).

    The parts of a token chunk around its text are rendered once per request;
    each chunk then costs one ``json.dumps`` of its text.
    """

    def __init__(self, *, chat: bool, rid: str, created: int, model: str, include_usage: bool) -> None:
        self.chat = chat
        self._base: Json = {
            "id": rid,
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": created,
            "model": model,
        }
        self.include_usage = include_usage
        head = json.dumps(self._base)[:-1]  # without the closing brace
        usage_part = ', "usage": null' if include_usage else ""
        if chat:
            self._head = f'data: {head}, "choices": [{{"index": 0, "delta": {{"content": '
            self._tail = f'}}, "logprobs": null, "finish_reason": null}}]{usage_part}}}\n\n'
        else:
            self._head = f'data: {head}, "choices": [{{"index": 0, "text": '
            self._tail = f', "logprobs": null, "finish_reason": null}}]{usage_part}}}\n\n'

    def start(self) -> bytes:
        """What goes before the first token: chat's role chunk; nothing for completions."""
        return self.role() if self.chat else b""

    def end(self, reason: str | None, use: Json) -> bytes:
        """The finish chunk, the usage chunk when asked for, and ``[DONE]``."""
        return self.finish(reason) + (self.usage(use) if self.include_usage else b"") + DONE

    def role(self) -> bytes:
        """Chat's first chunk: the assistant role, before any content."""
        return self._event(
            [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}]
        )

    def text(self, text: str) -> bytes:
        return (self._head + json.dumps(text) + self._tail).encode()

    def finish(self, reason: str | None) -> bytes:
        choice: Json = {"index": 0, "logprobs": None, "finish_reason": reason}
        if self.chat:
            choice["delta"] = {}
        else:
            choice["text"] = ""
        return self._event([choice])

    def usage(self, use: Json) -> bytes:
        """The ``include_usage`` chunk: no choices, the whole request's usage."""
        return b"data: " + json.dumps({**self._base, "choices": [], "usage": use}).encode() + b"\n\n"

    def _event(self, choices: list[Json]) -> bytes:
        body: Json = {**self._base, "choices": choices}
        if self.include_usage:
            body["usage"] = None
        return b"data: " + json.dumps(body).encode() + b"\n\n"


class ResponseWriter:
    """The SSE events of one streamed Responses API response, as vLLM 0.32 frames them (no ``[DONE]``)."""

    def __init__(self, *, rid: str, created: int, model: str, request: Json) -> None:
        self._events = responses_api.ResponseEvents(
            rid, created, model, message_id=responses_api.new_id("msg"), request=request
        )

    def start(self) -> bytes:
        return b"".join(responses_api.sse(e) for e in self._events.start())

    def text(self, text: str) -> bytes:
        return responses_api.sse(self._events.delta(text))

    def end(self, reason: str | None, use: Json) -> bytes:
        counts = responses_use(use)
        return b"".join(responses_api.sse(e) for e in self._events.finish(responses_api.status_for(reason), counts))


def responses_use(use: Json) -> Json:
    """A chat ``usage`` object (``usage()``) in the Responses API's words."""
    details = use.get("prompt_tokens_details") or {}
    return responses_api.usage_body(use["prompt_tokens"], use["completion_tokens"], details.get("cached_tokens", 0))


def response_body(
    rid: str, created: int, model: str, text: str, finish_reason: str | None, use: Json, request: Json
) -> Json:
    """A whole Responses API response."""
    return responses_api.response_object(
        rid,
        created,
        model,
        text=text,
        status=responses_api.status_for(finish_reason),
        usage=responses_use(use),
        message_id=responses_api.new_id("msg"),
        request=request,
    )

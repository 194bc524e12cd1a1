"""Stage 4: validate an OpenAI request body and estimate its tokens before anything is spent on it.

Only what the gateway itself needs is checked here: the JSON, the fields that
decide routing and limits (model, messages or prompt, max_tokens, stream, n),
and their types. Every other field OpenAI or vLLM takes passes through to the
engine untouched, as an OpenAI-compatible proxy should; a field neither takes
is refused (``fields``), as OpenAI refuses it.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.gateway import fields, params, responses_request
from tokenplane.serving.responses_api import input_messages
from tokenplane.serving.tokens import DEFAULT_MAX_TOKENS, TokenCounter, content_text, count_messages, count_prompt
from tokenplane.serving.types import Endpoint, Json

MAX_BODY_BYTES = 8 * 1024 * 1024  # a 128k-token prompt is about 0.5 MB; anything far above is not a prompt
AFFINITY_PREFIX_CHARS = 512  # requests sharing this much leading text share a system prompt and its KV blocks


@dataclass(slots=True)
class ParsedRequest:
    """A validated request: the body as sent, plus what the later stages read from it."""

    endpoint: Endpoint
    body: Json
    model: str
    stream: bool
    include_usage: bool
    max_tokens: int  # the output reserved for limits: the client's max_tokens or DEFAULT_MAX_TOKENS
    explicit_max_tokens: int | None  # what the client asked for; the context-length check uses this
    prompt_tokens: int
    prompt_text: str  # what the semantic cache embeds and prefix affinity hashes

    @property
    def estimated_tokens(self) -> int:
        return self.prompt_tokens + self.max_tokens

    @property
    def affinity_key(self) -> str:
        """A digest of the prompt's start, not the text: it travels in a header to the model gateway,
        where control characters are refused and proxies and access logs record what they see."""
        prefix = self.prompt_text[:AFFINITY_PREFIX_CHARS].encode("utf-8", "surrogatepass")
        return hashlib.blake2b(prefix, digest_size=16).hexdigest()


def decode_body(raw: bytes) -> Json:
    """The request's JSON object (``jsonbody.loads``); anything else is a 400 ``invalid_json``."""
    _check_size(raw)
    try:
        body = jsonbody.loads(raw)
    except jsonbody.BadJson as e:
        raise not_json(e) from e
    return _object(body)


async def decode_body_yielding(raw: bytes) -> Json:
    """``decode_body`` on the event loop, giving it back between the decoder's passes over a large body
    (``jsonbody.loads_yielding``): the other requests in flight wait for one pass, not for all of them."""
    _check_size(raw)
    try:
        body = await jsonbody.loads_yielding(raw)
    except jsonbody.BadJson as e:
        raise not_json(e) from e
    return _object(body)


def _check_size(raw: bytes) -> None:
    if len(raw) > MAX_BODY_BYTES:
        raise InvalidRequest(f"request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES}")


def not_json(error: jsonbody.BadJson) -> InvalidRequest:
    """The 400 for a body that is not JSON this API accepts (or past the decode bounds), saying why."""
    return InvalidRequest(
        f"the request body is not valid JSON: {error}; send a JSON object with Content-Type: application/json",
        code="invalid_json",
    )


def _object(body: object) -> Json:
    if not isinstance(body, dict):
        raise InvalidRequest(f"the request body must be a JSON object, got {type(body).__name__}")
    return body


def _int_field(body: Json, name: str, *, minimum: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidRequest(f"{name} must be an integer >= {minimum}, got {value!r}", param=name)
    return value


# Sampling parameters the gateway checks, as OpenAI bounds them: a value outside is refused here
# rather than forwarded (a NaN would otherwise reach the engine, and a cache key, as nonsense).
SAMPLING_RANGES: dict[str, tuple[float, float]] = {
    "temperature": (0.0, 2.0),
    "top_p": (0.0, 1.0),
    "presence_penalty": (-2.0, 2.0),
    "frequency_penalty": (-2.0, 2.0),
}


def _check_sampling(body: Json) -> None:
    for name, (low, high) in SAMPLING_RANGES.items():
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InvalidRequest(f"{name} must be a number between {low:g} and {high:g}, got {value!r}", param=name)
        if not low <= value <= high:
            raise InvalidRequest(
                f"{name}={value!r} is out of range; use a number between {low:g} and {high:g}", param=name
            )


def _messages(body: Json) -> list[dict[str, Any]]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages must be a non-empty array of {role, content} objects", param="messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise InvalidRequest(f"messages[{i}] must be an object with a string role", param=f"messages[{i}]")
        if message["role"] not in {"system", "developer", "user", "assistant", "tool", "function"}:
            raise InvalidRequest(
                f"messages[{i}].role={message['role']!r} is not one of system, developer, user, assistant, tool",
                param=f"messages[{i}].role",
            )
    return messages


def _is_token_ids(value: object) -> bool:
    return (
        isinstance(value, list) and bool(value) and all(isinstance(i, int) and not isinstance(i, bool) for i in value)
    )


def _refuse_token_ids(value: object, name: str) -> None:
    """Token ids (an array of integers, or of such arrays) are valid OpenAI input this gateway does not take.

    The gateway counts, routes, limits and caches by the text, with each pool's own tokenizer; ids of
    one tokenizer mean other words to another pool's model on the failover chain.
    """
    if _is_token_ids(value) or (isinstance(value, list) and bool(value) and all(_is_token_ids(v) for v in value)):
        raise InvalidRequest(
            f"{name} is given as token ids; this gateway accepts text only (its pools and failover "
            f"targets use different tokenizers, so ids would mean different words to each). Send {name} as "
            "a string or an array of strings",
            param=name,
            code="token_ids_not_supported",
        )


def parse(endpoint: Endpoint, body: Json, counter: TokenCounter) -> ParsedRequest:
    """Check the fields the gateway depends on and count the prompt; raise ``InvalidRequest`` naming the field."""
    fields.check_known(endpoint, body)  # first: a field no engine reads is neither counted nor forwarded
    model = params.check_model(body.get("model"))
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise InvalidRequest(f"stream must be true or false, got {stream!r}", param="stream")
    n = _int_field(body, "n", minimum=1)
    if n is not None and n > 1:
        raise InvalidRequest("n > 1 is not supported; send n requests instead", param="n")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise InvalidRequest("stream_options must be an object", param="stream_options")
    include_usage = bool(options.get("include_usage", False))
    _check_sampling(body)
    if endpoint is Endpoint.RESPONSES:
        # Chat's path with the Responses API's fields: its usage is always in the terminal event.
        limit = responses_request.check(body)
        messages = input_messages(body)
        return ParsedRequest(
            endpoint=endpoint,
            body=body,
            model=model,
            stream=stream,
            include_usage=True,
            max_tokens=limit or DEFAULT_MAX_TOKENS,
            explicit_max_tokens=limit,
            prompt_tokens=count_messages(counter, messages),
            prompt_text="\n".join(content_text(m.get("content")) for m in messages),
        )
    params.check(endpoint, body)
    if endpoint is Endpoint.CHAT:
        messages = _messages(body)
        prompt_tokens = count_messages(counter, messages)
        prompt_text = "\n".join(content_text(m.get("content")) for m in messages)
        limit = _int_field(body, "max_completion_tokens", minimum=1) or _int_field(body, "max_tokens", minimum=1)
    elif endpoint is Endpoint.COMPLETIONS:
        prompt = body.get("prompt")
        _refuse_token_ids(prompt, "prompt")
        if not isinstance(prompt, str | list) or not prompt:
            raise InvalidRequest("prompt must be a non-empty string or array of strings", param="prompt")
        if isinstance(prompt, list) and len(prompt) > 1:
            # The engine runs one prompt per request (as it counts, meters and streams one completion).
            raise InvalidRequest(
                f"prompt holds {len(prompt)} prompts; send one request per prompt (or use the Batch API)",
                param="prompt",
            )
        prompt_tokens = count_prompt(counter, prompt)
        prompt_text = prompt if isinstance(prompt, str) else "\n".join(map(str, prompt))
        limit = _int_field(body, "max_tokens", minimum=1)
    else:
        inputs = body.get("input")
        _refuse_token_ids(inputs, "input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
            raise InvalidRequest("input must be a non-empty string or array of strings", param="input")
        prompt_tokens = sum(counter.count(i) for i in inputs)
        return ParsedRequest(endpoint, body, model, False, False, 0, None, prompt_tokens, "\n".join(inputs))
    return ParsedRequest(
        endpoint=endpoint,
        body=body,
        model=model,
        stream=stream,
        include_usage=include_usage,
        max_tokens=limit or DEFAULT_MAX_TOKENS,
        explicit_max_tokens=limit,
        prompt_tokens=prompt_tokens,
        prompt_text=prompt_text,
    )

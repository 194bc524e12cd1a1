"""Anthropic's Messages API through the official SDK, translated to and from OpenAI's chat API.

The translation is in pure functions (``to_messages_request``,
``to_chat_completion`` and ``ChunkTranslator``) so that it is tested without a
network. Only chat completions are served: the Messages API has no text
completion or embedding route.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import anthropic
from anthropic import AsyncAnthropic

from tokenplane.serving.errors import InvalidRequest, UpstreamError, UpstreamTimeout
from tokenplane.serving.modelgw.config import ProviderConfig
from tokenplane.serving.modelgw.providers.base import ProviderCall, status_error
from tokenplane.serving.types import Clock, Endpoint, Json, SystemClock

DEFAULT_MAX_TOKENS = 1024  # Anthropic requires max_tokens; OpenAI clients often omit it
MAX_TEMPERATURE = 1.0  # Anthropic's range is 0-1, OpenAI's 0-2: higher values are clamped, not refused

FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "pause_turn": "stop",
    "refusal": "content_filter",
}


def _text(content: Any, where: str) -> str:
    """The text of an OpenAI message's content: a string or a list of text parts."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise InvalidRequest(f"{where}: content part of type {kind!r} cannot be sent to Anthropic; send text")
            parts.append(str(part.get("text", "")))
        return "".join(parts)
    raise InvalidRequest(f"{where}: content must be a string or a list of text parts")


def _message(index: int, message: Json) -> Json:
    where = f"messages[{index}]"
    role = message.get("role")
    if role == "tool":
        block = {
            "type": "tool_result",
            "tool_use_id": message.get("tool_call_id"),
            "content": _text(message.get("content"), where),
        }
        return {"role": "user", "content": [block]}
    if role not in ("user", "assistant"):
        raise InvalidRequest(f"{where}.role={role!r}: expected system, developer, user, assistant or tool")
    text = _text(message.get("content"), where)
    calls = message.get("tool_calls") or []
    if not calls:
        return {"role": role, "content": text}
    blocks: list[Json] = [{"type": "text", "text": text}] if text else []
    for call in calls:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": json.loads(function.get("arguments") or "{}"),
            }
        )
    return {"role": role, "content": blocks}


def to_messages_request(body: Json, model: str) -> Json:
    """An OpenAI chat request as a Messages API request for ``model``.

    System (and developer) messages become ``system``; ``max_tokens`` defaults to
    ``DEFAULT_MAX_TOKENS``; ``stop`` becomes ``stop_sequences``; tools and tool
    calls map to Anthropic's tool use.

    Raises:
        InvalidRequest: the request uses something the Messages API cannot express (``n`` > 1, images).
    """
    if int(body.get("n") or 1) != 1:
        raise InvalidRequest("n > 1 cannot be sent to Anthropic; ask for one choice", param="n")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages must be a non-empty list", param="messages")
    system: list[str] = []
    turns: list[Json] = []
    for i, message in enumerate(messages):
        if message.get("role") in ("system", "developer"):
            system.append(_text(message.get("content"), f"messages[{i}]"))
        else:
            turns.append(_message(i, message))
    request: Json = {
        "model": model,
        "messages": turns,
        "max_tokens": int(body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS),
    }
    if system:
        request["system"] = "\n\n".join(system)
    if body.get("temperature") is not None:
        request["temperature"] = min(MAX_TEMPERATURE, float(body["temperature"]))
    if body.get("top_p") is not None:
        request["top_p"] = float(body["top_p"])
    stop = body.get("stop")
    if stop:
        request["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    if body.get("tools"):
        request["tools"] = [
            {
                "name": t["function"]["name"],
                "description": t["function"].get("description", ""),
                "input_schema": t["function"].get("parameters") or {"type": "object", "properties": {}},
            }
            for t in body["tools"]
            if t.get("type") == "function"
        ]
    if body.get("user"):
        request["metadata"] = {"user_id": str(body["user"])}
    return request


def _usage(usage: Json) -> Json:
    cached = int(usage.get("cache_read_input_tokens") or 0)
    # Anthropic's input_tokens leaves out cache reads and writes; OpenAI's prompt_tokens counts every prompt token.
    prompt = int(usage.get("input_tokens") or 0) + cached + int(usage.get("cache_creation_input_tokens") or 0)
    completion = int(usage.get("output_tokens") or 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def to_chat_completion(message: Json, *, created: int) -> Json:
    """A Messages API response (``Message.model_dump()``) as OpenAI's ``chat.completion``."""
    text = "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {})},
        }
        for b in message.get("content", [])
        if b.get("type") == "tool_use"
    ]
    reply: Json = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        reply["tool_calls"] = calls
    return {
        "id": message.get("id", ""),
        "object": "chat.completion",
        "created": created,
        "model": message.get("model", ""),
        "choices": [
            {
                "index": 0,
                "message": reply,
                "finish_reason": FINISH_REASONS.get(message.get("stop_reason") or "end_turn", "stop"),
                "logprobs": None,
            }
        ],
        "usage": _usage(message.get("usage") or {}),
    }


class ChunkTranslator:
    """Anthropic stream events in, OpenAI ``chat.completion.chunk`` dicts out; the last carries usage.

    Args:
        created: The ``created`` timestamp every chunk carries.
    """

    def __init__(self, *, created: int) -> None:
        self.created = created
        self.id = ""
        self.model = ""
        self._usage: Json = {}
        self._tools: dict[int, int] = {}  # content block index -> OpenAI tool_calls index

    def _chunk(self, delta: Json, finish: str | None = None) -> Json:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [choice],
        }

    def feed(self, event: Json) -> list[Json]:
        """The chunks one event becomes (often one, sometimes none).

        Raises:
            UpstreamError: the event is Anthropic's in-stream ``error``.
        """
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.id, self.model = message.get("id", ""), message.get("model", "")
            self._usage = dict(message.get("usage") or {})
            return [self._chunk({"role": "assistant", "content": ""})]
        if kind == "content_block_start":
            block = event.get("content_block") or {}
            if block.get("type") == "tool_use":
                index = self._tools[event["index"]] = len(self._tools)
                call = {
                    "index": index,
                    "id": block.get("id"),
                    "type": "function",
                    "function": {"name": block.get("name"), "arguments": ""},
                }
                return [self._chunk({"tool_calls": [call]})]
            if block.get("text"):
                return [self._chunk({"content": block["text"]})]
            return []
        if kind == "content_block_delta":
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                return [self._chunk({"content": delta.get("text", "")})]
            if delta.get("type") == "input_json_delta" and event.get("index") in self._tools:
                call = {"index": self._tools[event["index"]], "function": {"arguments": delta.get("partial_json", "")}}
                return [self._chunk({"tool_calls": [call]})]
            return []
        if kind == "message_delta":
            self._usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            reason = (event.get("delta") or {}).get("stop_reason")
            return [self._chunk({}, FINISH_REASONS.get(reason or "end_turn", "stop"))]
        if kind == "message_stop":
            usage = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.model}
            return [usage | {"choices": [], "usage": _usage(self._usage)}]
        if kind == "error":
            error = event.get("error") or {}
            raise UpstreamError(f"anthropic stream error {error.get('type')}: {error.get('message')}")
        return []  # ping, content_block_stop, and event types added later


class AnthropicProvider:
    """Anthropic's API.

    Args:
        config: The provider and its key (which must be present).
        clock: Stamps ``created`` on translated responses.
        client: An SDK client to use instead of one built from ``config`` (tests).
    """

    endpoints = frozenset({Endpoint.CHAT})

    def __init__(
        self, config: ProviderConfig, *, clock: Clock | None = None, client: AsyncAnthropic | None = None
    ) -> None:
        if client is None and not config.api_key:
            raise ValueError(f"provider {config.spec.name} has no API key; it is unavailable, not callable")
        self.name = config.spec.name
        self._clock = clock or SystemClock()
        # max_retries=0: the gateway's loop retries, with its breakers and deadline.
        self._client = client or AsyncAnthropic(base_url=config.spec.base_url, api_key=config.api_key, max_retries=0)

    async def complete(self, call: ProviderCall) -> Json:
        request = to_messages_request(call.body, call.model)
        try:
            message = await self._client.messages.create(**request, extra_headers={"x-request-id": call.request_id})
        except anthropic.APIError as e:
            raise _mapped(call, e) from e
        return to_chat_completion(message.model_dump(), created=int(self._clock.time()))

    async def stream(self, call: ProviderCall) -> AsyncGenerator[Json, None]:
        request = to_messages_request(call.body, call.model)
        translator = ChunkTranslator(created=int(self._clock.time()))
        try:
            events = await self._client.messages.create(
                **request, stream=True, extra_headers={"x-request-id": call.request_id}
            )
        except anthropic.APIError as e:
            raise _mapped(call, e) from e
        try:
            async for event in events:
                for chunk in translator.feed(event.model_dump()):
                    yield chunk
        except anthropic.APIError as e:
            raise _mapped(call, e) from e
        finally:
            await events.close()  # closes the HTTP response, which cancels the generation upstream

    async def aclose(self) -> None:
        await self._client.close()


def _mapped(call: ProviderCall, e: anthropic.APIError) -> UpstreamError:
    where = f"{call.target} ({call.model})"
    if isinstance(e, anthropic.APITimeoutError):
        return UpstreamTimeout(f"{where} timed out")
    if isinstance(e, anthropic.APIStatusError):
        return status_error(where, e.status_code, e.body)
    return UpstreamError(f"{where} failed: {type(e).__name__}: {e.message}")

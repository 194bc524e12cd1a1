"""Stage 7: a deterministic request this tenant sent before is answered from Redis.

What is cached: a chat or text completion whose request sets ``temperature``
to 0 explicitly and asks for one choice (``n`` absent or 1). At temperature 0
the engine decodes greedily, so the same request gives the same answer; any
other request samples and is never cached. Tools do not change the rule: the
gateway never runs a tool, it only returns the model's text naming a call,
which is as deterministic as any other output.

The key is ``<prefix>:exact:<tenant>:<sha256>``, the hash of the endpoint and
the canonical JSON (sorted keys, no whitespace) of every request field except
those that only change how the answer is delivered or labelled
(``EXCLUDED_FIELDS``). Excluding known fields, rather than listing the ones
that matter, keeps a new sampling parameter from ever sharing a key. The
tenant is in the key, so tenants never share an entry.

Redis being unreachable turns a lookup into a miss and a write into a skipped
write: a cache must never fail a request.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from tokenplane.serving import jsonbody, responses_api
from tokenplane.serving.outage import Outage
from tokenplane.serving.types import Endpoint, Json
from tokenplane.spec import CacheLayer

log = logging.getLogger(__name__)

EXCLUDED_FIELDS = frozenset({"stream", "stream_options", "user", "metadata"})  # delivery and labels, not output
CACHED_ENDPOINTS = frozenset({Endpoint.CHAT.value, Endpoint.COMPLETIONS.value, Endpoint.RESPONSES.value})
ENTRY_MAX_BYTES = 1 << 20  # a larger response is served but not cached: one entry must not crowd out thousands
_WORD = re.compile(r"(?<=\s)(?=\S)")  # split before each word, keeping its leading whitespace with the previous piece


def _canonical(value: Any) -> bytes:
    return jsonbody.canonical(value)


def deterministic(body: Json) -> bool:
    """True when the request's answer is decided by the request alone (temperature 0, one choice)."""
    temperature = body.get("temperature")
    if isinstance(temperature, bool) or not isinstance(temperature, int | float) or temperature != 0:
        return False
    return body.get("n") in (None, 1)


class ExactCache:
    """Whole responses to deterministic requests, per tenant, in Redis.

    Args:
        redis: The shared Redis.
        layer: The spec's exact-cache layer: ``enabled`` and ``ttl_seconds`` (0 caches nothing).
        prefix: The first part of every key.
    """

    def __init__(self, redis: aioredis.Redis, layer: CacheLayer, *, prefix: str = "tp") -> None:
        self.redis = redis
        self.layer = layer
        self.prefix = prefix
        self._outage = Outage("exact cache: Redis", log)

    def key(self, tenant: str, endpoint: str, body: Json) -> str | None:
        """The entry's key, or None when the layer is off or the request is not deterministic.

        Args:
            tenant: The tenant's name; part of the key.
            endpoint: The OpenAI route, e.g. ``/v1/chat/completions``.
            body: The client's request body.
        """
        if not self.layer.enabled or self.layer.ttl_seconds <= 0:
            return None
        if endpoint not in CACHED_ENDPOINTS or not deterministic(body):
            return None
        decisive = {k: v for k, v in body.items() if k not in EXCLUDED_FIELDS}
        digest = hashlib.sha256(_canonical({"endpoint": endpoint, "body": decisive})).hexdigest()
        return f"{self.prefix}:exact:{tenant}:{digest}"

    async def get(self, key: str) -> Json | None:
        """The cached response, or None on a miss (or while Redis is unreachable)."""
        try:
            raw = await self.redis.get(key)
        except (RedisError, OSError) as e:
            self._failed(e)
            return None
        self._ok()
        if raw is None:
            return None
        try:
            value = jsonbody.loads_internal(raw)
        except ValueError:
            log.warning("exact cache: entry %s is not JSON; treating it as a miss", key)
            return None
        return value if isinstance(value, dict) else None

    async def put(self, key: str, response: Json) -> None:
        """Store ``response`` under ``key`` for the layer's TTL (skipped when too large or Redis is away)."""
        raw = _canonical(response)
        if len(raw) > ENTRY_MAX_BYTES:
            return
        try:
            await self.redis.set(key, raw, ex=self.layer.ttl_seconds)
        except (RedisError, OSError) as e:
            self._failed(e)
            return
        self._ok()

    def replay_chunks(self, response: Json, *, include_usage: bool) -> list[Json]:
        """A cached completion as the stream chunks a live stream would have sent.

        For a ``chat.completion``: a role delta, the content in word-sized deltas (and any tool
        calls), a chunk with the ``finish_reason``, then, when ``include_usage``, a usage chunk
        with empty ``choices``. A ``text_completion`` streams its text the same way. Every chunk
        keeps the response's ``id``, ``model`` and ``created``.

        Args:
            response: The cached response body.
            include_usage: Whether to end with the usage chunk (``stream_options.include_usage``).
        """
        if response.get("object") == responses_api.OBJECT:
            return responses_api.replay(response)  # its usage is in the terminal event, as a live stream's
        chat = response.get("object") != "text_completion"
        head: Json = {
            "id": response.get("id", ""),
            "object": "chat.completion.chunk" if chat else "text_completion",
            "created": response.get("created", 0),
            "model": response.get("model", ""),
        }
        if "system_fingerprint" in response:
            head["system_fingerprint"] = response["system_fingerprint"]
        chunks: list[Json] = []
        for choice in response.get("choices") or []:
            index = choice.get("index", 0)
            finish = choice.get("finish_reason") or "stop"
            if chat:
                chunks.extend({**head, "choices": [c]} for c in _chat_choices(index, choice, finish))
            else:
                for piece in _words(choice.get("text") or ""):
                    chunks.append({**head, "choices": [_text(index, piece, None)]})
                chunks.append({**head, "choices": [_text(index, "", finish)]})
        if include_usage and response.get("usage") is not None:
            chunks.append({**head, "choices": [], "usage": response["usage"]})
        return chunks

    def _failed(self, error: BaseException) -> None:
        self._outage.down(error, "every lookup is a miss and nothing is stored")

    def _ok(self) -> None:
        self._outage.up()


def _words(text: str) -> list[str]:
    return [piece for piece in _WORD.split(text) if piece]


def _text(index: int, text: str, finish: str | None) -> Json:
    return {"index": index, "text": text, "logprobs": None, "finish_reason": finish}


def _chat_choices(index: int, choice: Json, finish: str) -> list[Json]:
    message = choice.get("message") or {}
    out: list[Json] = [
        {"index": index, "delta": {"role": message.get("role", "assistant"), "content": ""}, "finish_reason": None}
    ]
    for piece in _words(message.get("content") or ""):
        out.append({"index": index, "delta": {"content": piece}, "finish_reason": None})
    calls = message.get("tool_calls") or []
    if calls:
        deltas = [{"index": i, **call} for i, call in enumerate(calls)]
        out.append({"index": index, "delta": {"tool_calls": deltas}, "finish_reason": None})
    out.append({"index": index, "delta": {}, "finish_reason": finish})
    return out

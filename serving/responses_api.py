"""OpenAI's Responses API (``POST /v1/responses``) as the serving processes share it.

The gateway routes, limits, caches and meters a Responses request on the chat
path; what differs is only the shape on the wire, and every reading or writing
of that shape is here:

- ``input_messages``: a request's ``instructions`` and ``input`` as chat
  messages, which the gateway counts and the simulated engine prompts with;
- ``usage_of`` (a stream event's usage) and ``is_text_delta``: what metering
  reads from a stream;
- ``ResponseEvents``: the events of one streamed response, in the order OpenAI
  and vLLM 0.32 send them (``response.created``, ``response.in_progress``,
  ``response.output_item.added``, ``response.content_part.added``,
  ``response.output_text.delta``..., the ``.done`` events, then
  ``response.completed`` or ``response.incomplete`` carrying the usage),
  written by the simulated engine and replayed by the gateway's caches;
- ``response_object``, ``from_events`` and ``replay``: a whole response, built,
  assembled from a stream, and streamed again from a cache.

On the wire each event is ``event: <type>`` then ``data: <json>`` (``sse``);
a Responses stream has no ``[DONE]``: its terminal event is the end.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from tokenplane.serving import jsonbody
from tokenplane.serving.types import Json

PATH = "/v1/responses"
OBJECT = "response"
# The events that end a stream, each carrying the whole response and its usage.
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})
TEXT_DELTA = "response.output_text.delta"
ERROR = "error"
# The roles an input message may have (OpenAI's EasyInputMessage and Message).
ROLES = frozenset({"user", "assistant", "system", "developer"})
_WORD = re.compile(r"(?<=\s)(?=\S)")  # split before each word, keeping its leading whitespace with the previous piece


def _text_of(content: Any) -> str:
    """An input message's text: a string, or the text of its ``input_text``/``output_text`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return ""


def input_messages(body: Json) -> list[Json]:
    """``instructions`` and ``input`` as chat messages (role and text), in order.

    A message item keeps its role and its text; a tool's output becomes a ``tool`` message; any other
    item (a function call, a reasoning item) is counted by its JSON, as the engine's template renders it.
    The body is assumed validated (``serving.gateway.requests``); odd items are skipped, not refused.
    """
    messages: list[Json] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else ():
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message" and item.get("role") in ROLES:
            messages.append({"role": item["role"], "content": _text_of(item.get("content"))})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "content": str(item.get("output", ""))})
        else:
            messages.append({"role": "assistant", "content": json.dumps(item, ensure_ascii=False)})
    return messages


def usage_body(prompt_tokens: int, completion_tokens: int, cached_tokens: int = 0) -> Json:
    """A Responses ``usage`` object (input and output, where chat says prompt and completion)."""
    return {
        "input_tokens": prompt_tokens,
        "input_tokens_details": {"cached_tokens": cached_tokens},
        "output_tokens": completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt_tokens + completion_tokens,
    }


def usage_of(event: Json) -> Json | None:
    """The usage a stream event carries: only a terminal event does, inside its response."""
    if event.get("type") not in TERMINAL:
        return None
    response = event.get("response")
    return response.get("usage") if isinstance(response, dict) else None


def stream_usage(chunk: Json) -> Json | None:
    """The usage a stream's chunk carries, in either API: chat's ``usage`` chunk or a Responses terminal event."""
    return chunk.get("usage") or usage_of(chunk)


def carries_text(chunk: Json) -> bool:
    """Whether a chunk of either API delivers output text (a cut stream is metered by these)."""
    if is_text_delta(chunk):
        return True
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta") or {}
        if delta.get("content") or choice.get("text"):
            return True
    return False


def is_text_delta(event: Json) -> bool:
    return event.get("type") == TEXT_DELTA and bool(event.get("delta"))


def is_terminal(event: Json) -> bool:
    return event.get("type") in TERMINAL


def is_error(event: Json) -> bool:
    """An in-band failure: an ``error`` event, or a response that ended ``failed``."""
    return event.get("type") in (ERROR, "response.failed")


def new_id(prefix: str) -> str:
    return f"{prefix}_{os.urandom(16).hex()}"


def response_object(
    rid: str,
    created: int,
    model: str,
    *,
    text: str | None,
    status: str,
    usage: Json | None,
    message_id: str,
    request: Json | None = None,
) -> Json:
    """A ``response`` object. ``text`` None: no output yet (the ``response.created`` snapshot).

    ``status`` is ``in_progress``, ``completed`` or ``incomplete`` (the output budget ran out).
    ``request``: the fields of the request a response echoes (instructions, sampling, tools).
    """
    asked = request or {}
    output: list[Json] = []
    if text is not None:
        output.append(_message(message_id, text, "completed"))
    return {
        "id": rid,
        "object": OBJECT,
        "created_at": created,
        "status": status,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
        "instructions": asked.get("instructions"),
        "max_output_tokens": asked.get("max_output_tokens"),
        "model": model,
        "output": output,
        "parallel_tool_calls": asked.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "temperature": asked.get("temperature", 1.0),
        "tool_choice": asked.get("tool_choice", "auto"),
        "tools": asked.get("tools", []),
        "top_p": asked.get("top_p", 1.0),
        "truncation": asked.get("truncation", "disabled"),
        "text": {"format": {"type": "text"}},
        "metadata": asked.get("metadata") or {},
        "usage": usage,
    }


def status_for(finish_reason: str | None) -> str:
    """A chat finish reason as a response status: the output budget running out is ``incomplete``."""
    return "incomplete" if finish_reason == "length" else "completed"


def _part(text: str) -> Json:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message(message_id: str, text: str, status: str) -> Json:
    content = [_part(text)] if status == "completed" else []
    return {"type": "message", "id": message_id, "status": status, "role": "assistant", "content": content}


class ResponseEvents:
    """The events of one streamed response, numbered by ``sequence_number``; each method returns its events."""

    def __init__(self, rid: str, created: int, model: str, *, message_id: str, request: Json | None = None) -> None:
        self.rid = rid
        self.created = created
        self.model = model
        self.message_id = message_id
        self.request = request
        self._sequence = 0
        self._text: list[str] = []

    def _event(self, kind: str, **fields: Any) -> Json:
        event = {"type": kind, **fields, "sequence_number": self._sequence}
        self._sequence += 1
        return event

    def _response(self, *, status: str, text: str | None, usage: Json | None) -> Json:
        return response_object(
            self.rid,
            self.created,
            self.model,
            text=text,
            status=status,
            usage=usage,
            message_id=self.message_id,
            request=self.request,
        )

    def start(self) -> list[Json]:
        """Before the first token: the response is created, in progress, and its message and text part opened."""
        snapshot = self._response(status="in_progress", text=None, usage=None)
        where = {"item_id": self.message_id, "output_index": 0, "content_index": 0}
        return [
            self._event("response.created", response=snapshot),
            self._event("response.in_progress", response=snapshot),
            self._event(
                "response.output_item.added", output_index=0, item=_message(self.message_id, "", "in_progress")
            ),
            self._event("response.content_part.added", **where, part=_part("")),
        ]

    def delta(self, text: str) -> Json:
        self._text.append(text)
        return self._event(
            TEXT_DELTA, item_id=self.message_id, output_index=0, content_index=0, delta=text, logprobs=[]
        )

    def finish(self, status: str, usage: Json, *, whole: Json | None = None) -> list[Json]:
        """The text, part and item closed, then the terminal event with the whole response and its usage.

        ``whole``: the response to end with, when it exists already (a cached one being replayed).
        """
        text = "".join(self._text)
        where = {"item_id": self.message_id, "output_index": 0, "content_index": 0}
        whole = whole if whole is not None else self._response(status=status, text=text, usage=usage)
        return [
            self._event("response.output_text.done", **where, text=text, logprobs=[]),
            self._event("response.content_part.done", **where, part=_part(text)),
            self._event("response.output_item.done", output_index=0, item=_message(self.message_id, text, "completed")),
            self._event(f"response.{status}", response=whole),
        ]


def sse(event: Json) -> bytes:
    """One event as the Responses API frames it: its type on an ``event:`` line, then its data."""
    return b"event: " + str(event.get("type", "message")).encode() + b"\ndata: " + jsonbody.dumps(event) + b"\n\n"


def output_text(response: Json) -> str:
    """The text of a response's message items (what the client's ``response.output_text`` reads)."""
    return "".join(
        str(part.get("text", ""))
        for item in response.get("output") or []
        if isinstance(item, dict) and item.get("type") == "message"
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    )


def from_events(events: list[Json]) -> Json | None:
    """The whole response a finished stream ended with (its terminal event's); None if it did not finish."""
    for event in reversed(events):
        if event.get("type") in ("response.completed", "response.incomplete"):
            response = event.get("response")
            return response if isinstance(response, dict) else None
    return None


def replay(response: Json) -> list[Json]:
    """A whole (cached) response as the events of a live stream: its text in word-sized deltas.

    Only a response whose output is one message of text is cached (``cacheable``), so this is exact.
    """
    message_id = next(
        (str(i.get("id")) for i in response.get("output") or [] if isinstance(i, dict) and i.get("id")), new_id("msg")
    )
    events = ResponseEvents(
        str(response.get("id", "")),
        int(response.get("created_at") or 0),
        str(response.get("model", "")),
        message_id=message_id,
        request={
            k: response[k] for k in ("instructions", "max_output_tokens", "temperature", "top_p") if k in response
        },
    )
    out = events.start()
    out += [events.delta(piece) for piece in _WORD.split(output_text(response)) if piece]
    status = str(response.get("status", "completed"))
    out += events.finish(status, response.get("usage") or usage_body(0, 0), whole=response)
    return out


def cacheable(response: Json) -> bool:
    """A finished response whose output is text messages only (a tool call or reasoning is not replayed).

    One cut by its output budget (``incomplete``) is as deterministic as a completed one, and cached as
    chat caches a completion whose finish reason is ``length``.
    """
    output = response.get("output")
    return (
        response.get("object") == OBJECT
        and response.get("status") in ("completed", "incomplete")
        and isinstance(output, list)
        and bool(output)
        and all(isinstance(i, dict) and i.get("type") == "message" for i in output)
    )

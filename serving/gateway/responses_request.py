"""Stage 4 for ``POST /v1/responses``: the Responses API's own fields, checked as OpenAI checks them.

What the gateway then does with the request is chat's path: the prompt is the
``instructions`` and ``input`` read as chat messages (``serving.responses_api``),
the output budget is ``max_output_tokens``. Each refusal is a 400 naming the
parameter, like ``params.check``.

The gateway keeps no state between requests and spreads them over replicas and
pools, so what the Responses API keeps on the server (``previous_response_id``,
``conversation``, ``background``, stored prompt templates) is refused with the
way to do without it, never forwarded to an engine that would not find it.
"""

from __future__ import annotations

from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.gateway.params import (
    MAX_TOOLS,
    MAX_TOP_LOGPROBS,
    TOOL_CHOICES,
    TOOL_NAME,
    bad_param,
    boolean_param,
    echo,
    integer_param,
)
from tokenplane.serving.responses_api import ROLES
from tokenplane.serving.types import Json

MAX_INPUT_ITEMS = 4096  # input items of one request; a long agent transcript is a few hundred
CONTENT_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal"})
TRUNCATIONS = ("auto", "disabled")
MAX_METADATA_PAIRS = 16  # OpenAI's limit
# Server-side state this stateless gateway cannot honour, and what to send instead.
STATEFUL = {
    "previous_response_id": "send the earlier turns in input instead",
    "conversation": "send the conversation's turns in input instead",
    "prompt": "send the prompt's text in instructions and input instead",
}


def _items(value: object) -> None:
    if isinstance(value, str):
        if not value:
            raise bad_param("input", "must not be empty")
        return
    if not isinstance(value, list) or not value:
        raise InvalidRequest(
            "input is required: a string, or a non-empty array of input items such as "
            '{"role": "user", "content": "..."}',
            param="input",
        )
    if all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        raise InvalidRequest(
            "input is given as token ids; the Responses API takes text: a string or an array of input items",
            param="input",
            code="token_ids_not_supported",
        )
    if len(value) > MAX_INPUT_ITEMS:
        raise bad_param("input", f"holds {len(value)} items; at most {MAX_INPUT_ITEMS} are accepted")
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise bad_param(
                where, f'must be an input item object such as {{"role": "user", "content": "..."}}, got {echo(item)}'
            )
        kind = item.get("type", "message")
        if not isinstance(kind, str):
            raise bad_param(f"{where}.type", f"must be a string, got {echo(kind)}")
        if kind != "message":
            continue  # function calls, their outputs, reasoning items: the engine's template reads them
        role = item.get("role")
        if role not in ROLES:
            raise bad_param(f"{where}.role", f"must be one of {', '.join(sorted(ROLES))}, got {echo(role)}")
        _content(item.get("content"), f"{where}.content")


def _content(content: object, where: str) -> None:
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise bad_param(where, f"must be a string or an array of content parts, got {echo(content)}")
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in CONTENT_TYPES:
            raise bad_param(
                f"{where}[{j}].type", f"must be one of {', '.join(sorted(CONTENT_TYPES))}, got {echo(kind)}"
            )
        if kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
            raise bad_param(f"{where}[{j}].text", "must be a string")


def _tools(body: Json) -> set[str]:
    """The Responses API's flat tools (``{"type": "function", "name": ...}``); returns the function names."""
    tools = body.get("tools")
    if tools is None:
        return set()
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise bad_param("tools", f"must be an array of up to {MAX_TOOLS} tools, got {echo(tools)}")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
            raise bad_param(
                f"tools[{i}]", f'must be a tool object such as {{"type": "function", "name": ...}}, got {echo(tool)}'
            )
        if tool["type"] == "function":
            name = tool.get("name")
            if not isinstance(name, str) or not TOOL_NAME.match(name):
                raise bad_param(f"tools[{i}].name", f"must match {TOOL_NAME.pattern}, got {echo(name)}")
            names.add(name)
    return names


def _tool_choice(body: Json, functions: set[str]) -> None:
    choice = body.get("tool_choice")
    if choice is None or choice in TOOL_CHOICES:
        return
    if isinstance(choice, str):
        raise bad_param("tool_choice", f"must be one of {', '.join(TOOL_CHOICES)} or a tool object, got {echo(choice)}")
    if not isinstance(choice, dict) or not isinstance(choice.get("type"), str):
        raise bad_param("tool_choice", f'must be a string or {{"type": "function", "name": ...}}, got {echo(choice)}')
    if choice["type"] == "function" and choice.get("name") not in functions:
        raise bad_param("tool_choice", f"names the function {echo(choice.get('name'))}, which is not in tools")


def _string(body: Json, name: str) -> None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise bad_param(name, f"must be a string, got {echo(value)}")


def _object(body: Json, name: str) -> None:
    value = body.get(name)
    if value is not None and not isinstance(value, dict):
        raise bad_param(name, f"must be an object, got {echo(value)}")


def check(body: Json) -> int | None:
    """Refuse a Responses request the API would refuse, naming the parameter; return ``max_output_tokens``.

    ``model``, ``stream``, ``temperature`` and ``top_p`` are the shared checks' (``requests.parse``).
    """
    for name, instead in STATEFUL.items():
        if body.get(name) is not None:
            raise InvalidRequest(
                f"{name} is not supported: this gateway keeps no responses between requests (each may be "
                f"served by another replica); {instead}",
                param=name,
                code="unsupported_parameter",
            )
    if body.get("background"):
        raise InvalidRequest(
            "background is not supported: this gateway keeps no responses to poll; stream the response "
            "(stream: true), or use the Batch API for work that may wait",
            param="background",
            code="unsupported_parameter",
        )
    _items(body.get("input"))
    _string(body, "instructions")
    _string(body, "user")
    boolean_param(body, "store")
    boolean_param(body, "parallel_tool_calls")
    integer_param(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    integer_param(body, "max_tool_calls", 1, 1 << 31)
    _object(body, "text")
    _object(body, "reasoning")
    metadata = body.get("metadata")
    if metadata is not None and (not isinstance(metadata, dict) or len(metadata) > MAX_METADATA_PAIRS):
        raise bad_param("metadata", f"must be an object of up to {MAX_METADATA_PAIRS} pairs, got {echo(metadata)}")
    truncation = body.get("truncation")
    if truncation is not None and truncation not in TRUNCATIONS:
        raise bad_param("truncation", f"must be one of {', '.join(TRUNCATIONS)}, got {echo(truncation)}")
    include = body.get("include")
    if include is not None and (not isinstance(include, list) or not all(isinstance(i, str) for i in include)):
        raise bad_param("include", f"must be an array of strings, got {echo(include)}")
    _tool_choice(body, _tools(body))
    return integer_param(body, "max_output_tokens", 1, 1 << 31)

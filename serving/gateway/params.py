"""The OpenAI parameters the gateway passes on, checked to the API's types and ranges before anything is spent.

The official API answers a parameter of the wrong type or out of range with a
400 that names it; an OpenAI-compatible gateway must too, rather than forward
``logprobs: "yes"`` or ``top_logprobs: 1000`` to an engine that may accept,
ignore or crash on it. ``check`` covers the parameters of chat and completions
requests; ``check_headers`` the ``x-tokenplane-*`` request headers. Echoed
values are cut to ``ECHO_CHARS``, so a 64 KB value never comes back whole.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.types import Endpoint, Json
from tokenplane.spec import Priority

ECHO_CHARS = 64  # of a refused value, in an error message: enough to recognise it, never a whole payload
MAX_MODEL_CHARS = 256  # the longest model name or alias; OpenAI's ids are under 64
MAX_STOP = 4  # OpenAI's limit of stop sequences
MAX_TOOLS = 128  # OpenAI's limit of tools per request
MAX_TOP_LOGPROBS = 20  # chat: OpenAI's range 0-20
MAX_COMPLETION_LOGPROBS = 5  # completions: OpenAI's range 0-5
MAX_LOGIT_BIAS = 300  # OpenAI's limit of biased tokens
MAX_TIMEOUT_MS = 600_000.0  # the gateway's own request timeout: asking for more is asking for nothing
MAX_TASK_TYPE_CHARS = 256  # a routing rule's task type is a short label, as MAX_MODEL_CHARS is for a model
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
TOOL_CHOICES = ("none", "auto", "required")
RESPONSE_FORMATS = ("text", "json_object", "json_schema")
PRIORITIES = tuple(p.value for p in Priority)  # x-tokenplane-priority: a client may lower its own to any of these


def echo(value: object) -> str:
    """``repr(value)``, cut to ``ECHO_CHARS`` characters with an ellipsis and the full length."""
    text = repr(value)
    if len(text) <= ECHO_CHARS:
        return text
    return f"{text[:ECHO_CHARS]}... ({len(text)} characters)"


# The validation vocabulary every request parser shares (this module's chat and completions checks, and
# responses_request.py's): a parameter's name and what is wrong with it, answered as OpenAI answers it.


def bad_param(param: str, problem: str) -> InvalidRequest:
    """The 400 for one parameter: ``param`` names it (a path such as ``tools[0].name``), ``problem`` says why."""
    return InvalidRequest(f"{param}: {problem}", param=param, code="invalid_value")


def integer_param(body: Json, name: str, low: int, high: int) -> int | None:
    """``body[name]`` when it is an integer in ``[low, high]`` (a bool is not one), None when absent."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise bad_param(name, f"must be an integer from {low} to {high}, got {echo(value)}")
    return value


def boolean_param(body: Json, name: str) -> bool | None:
    """``body[name]`` when it is true or false, None when absent."""
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise bad_param(name, f"must be true or false, got {echo(value)}")
    return value


def check_model(model: object) -> str:
    if not isinstance(model, str) or not model:
        raise InvalidRequest("model is required: a model name from GET /v1/models, a tier, or 'auto'", param="model")
    if len(model) > MAX_MODEL_CHARS:
        raise bad_param(
            "model", f"is {len(model)} characters; model names are at most {MAX_MODEL_CHARS} ({echo(model)})"
        )
    return model


def _stop(body: Json) -> None:
    stop = body.get("stop")
    if stop is None or isinstance(stop, str):
        return
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop) or len(stop) > MAX_STOP:
        raise bad_param("stop", f"must be a string or an array of up to {MAX_STOP} strings, got {echo(stop)}")


def _tools(body: Json) -> set[str]:
    tools = body.get("tools")
    if tools is None:
        return set()
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise bad_param("tools", f"must be an array of up to {MAX_TOOLS} tools, got {echo(tools)}")
    names: set[str] = set()
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            raise bad_param(f"tools[{i}]", 'must be {"type": "function", "function": {"name": ...}}')
        name = function.get("name")
        if not isinstance(name, str) or not TOOL_NAME.match(name):
            raise bad_param(f"tools[{i}].function.name", f"must match {TOOL_NAME.pattern}, got {echo(name)}")
        names.add(name)
    return names


def _tool_choice(body: Json, tools: set[str]) -> None:
    choice = body.get("tool_choice")
    if choice is None:
        return
    if not tools and choice != "none":
        raise bad_param("tool_choice", "is only allowed when tools are specified")
    if isinstance(choice, str):
        if choice not in TOOL_CHOICES:
            raise bad_param(
                "tool_choice", f"must be one of {', '.join(TOOL_CHOICES)} or a function, got {echo(choice)}"
            )
        return
    function = choice.get("function") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or not isinstance(function, dict):
        raise bad_param(
            "tool_choice",
            f'must be a string or {{"type": "function", "function": {{"name": ...}}}}, got {echo(choice)}',
        )
    if function.get("name") not in tools:
        raise bad_param("tool_choice", f"names the function {echo(function.get('name'))}, which is not in tools")


def _logit_bias(body: Json) -> None:
    bias = body.get("logit_bias")
    if bias is None:
        return
    if not isinstance(bias, dict) or len(bias) > MAX_LOGIT_BIAS:
        raise bad_param("logit_bias", f"must be an object of up to {MAX_LOGIT_BIAS} token ids, got {echo(bias)}")
    for token, value in bias.items():
        if (
            not token.isdigit()
            or isinstance(value, bool)
            or not isinstance(value, int | float)
            or not -100 <= value <= 100
        ):
            raise bad_param(
                "logit_bias", f"maps token ids to numbers from -100 to 100; {echo(token)}: {echo(value)} is not"
            )


def _response_format(body: Json) -> None:
    fmt = body.get("response_format")
    if fmt is None:
        return
    if not isinstance(fmt, dict) or fmt.get("type") not in RESPONSE_FORMATS:
        raise bad_param(
            "response_format", f"must be an object whose type is one of {', '.join(RESPONSE_FORMATS)}, got {echo(fmt)}"
        )


def check(endpoint: Endpoint, body: Json) -> None:
    """Refuse a chat or completions parameter of the wrong type or range, naming it.

    Raises:
        InvalidRequest: ``param`` names the parameter; the message says what is allowed.
    """
    if endpoint is Endpoint.EMBEDDINGS:
        integer_param(body, "dimensions", 1, 1 << 16)
        return
    if endpoint is Endpoint.RESPONSES:
        raise ValueError("Responses API bodies are checked by serving.gateway.responses_request")
    _stop(body)
    integer_param(body, "seed", -(1 << 63), (1 << 63) - 1)
    _logit_bias(body)
    user = body.get("user")
    if user is not None and not isinstance(user, str):
        raise bad_param("user", f"must be a string, got {echo(user)}")
    if endpoint is Endpoint.COMPLETIONS:
        integer_param(body, "logprobs", 0, MAX_COMPLETION_LOGPROBS)
        boolean_param(body, "echo")
        return
    logprobs = boolean_param(body, "logprobs")
    top = integer_param(body, "top_logprobs", 0, MAX_TOP_LOGPROBS)
    if top is not None and not logprobs:
        raise bad_param("top_logprobs", "needs logprobs: true")
    _tool_choice(body, _tools(body))
    boolean_param(body, "parallel_tool_calls")
    _response_format(body)


def _number_header(headers: Mapping[str, str], name: str, low: float, high: float, *, open_low: bool) -> float | None:
    raw = headers.get(name)
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    below = value <= low if open_low else value < low
    if not math.isfinite(value) or below or value > high:
        side = f"greater than {low:g}" if open_low else f"at least {low:g}"
        raise bad_param(name, f"header must be a number {side} and at most {high:g}, got {echo(raw)}")
    return value


def _label_headers(headers: Mapping[str, str]) -> None:
    """The ``x-tokenplane-*`` headers that name something: a misspelt priority is the client's mistake, and the
    gateway says so instead of serving the request at the tenant's own priority as if the header were absent."""
    priority = headers.get("x-tokenplane-priority")
    if priority is not None and priority not in PRIORITIES:
        raise bad_param("x-tokenplane-priority", f"header must be one of {', '.join(PRIORITIES)}, got {echo(priority)}")
    task_type = headers.get("x-tokenplane-task-type")
    if task_type is not None and not 0 < len(task_type) <= MAX_TASK_TYPE_CHARS:
        raise bad_param(
            "x-tokenplane-task-type", f"header must be 1 to {MAX_TASK_TYPE_CHARS} characters, got {echo(task_type)}"
        )


def check_headers(headers: Mapping[str, str]) -> dict[str, float | None]:
    """The ``x-tokenplane-*`` request headers, each checked (400 naming the header otherwise); the numbers read."""
    _label_headers(headers)
    return {
        "timeout_ms": _number_header(headers, "x-tokenplane-timeout-ms", 0.0, MAX_TIMEOUT_MS, open_low=True),
        "complexity": _number_header(headers, "x-tokenplane-complexity", 0.0, 1.0, open_low=False),
        "latency_slo_ms": _number_header(headers, "x-tokenplane-latency-slo-ms", 0.0, MAX_TIMEOUT_MS, open_low=True),
    }

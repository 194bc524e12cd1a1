"""The one JSON decoder for bodies that come from outside: bounded depth, finite numbers, valid Unicode.

Python's ``json`` accepts three things an API must not: nesting deep enough
to exhaust the interpreter's recursion limit (a ``RecursionError`` that no
handler expects), the non-standard ``NaN``/``Infinity`` constants (which a
later ``json.dumps`` writes back out as invalid JSON), and ``\\ud800``-style
escapes of lone UTF-16 surrogates (a ``str`` that cannot be encoded to UTF-8,
so it fails wherever the text is sent on). ``loads`` refuses all three with a
``BadJson`` that says which, so each caller can turn it into its own 400.

The fast path is orjson, which refuses ``NaN``/``Infinity``, lone surrogates
and invalid UTF-8 by itself (and numbers that overflow a double, which
``json`` would turn into ``inf``); only its depth limit (1,024) is laxer than
ours, and a body with more than ``MAX_DEPTH`` brackets is walked to check it.
Whatever orjson refuses goes through ``json`` once more, which accepts what
orjson cannot represent (integers past 64 bits) and words the refusal.
``dumps`` and ``loads_internal`` are the same speed for JSON that the serving
processes send each other (the model gateway, the engines, Redis entries).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

# Deeper than any real request: a chat body is ~5 levels, a tool's JSON schema rarely passes 10.
# Well under the interpreter's recursion limit (1,000), so the C decoder never hits it first.
MAX_DEPTH = 64

# A \u escape of a UTF-16 surrogate (D800-DFFF). Only bodies that contain one pay for the walk that
# tells a valid pair (decoded to one code point) from a lone half.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# 19 digits in a row may be an integer past 64 bits, which orjson reads as a float (losing digits) where
# ``json`` keeps the int; such a body takes the slow path. The first pattern is the cheap screen. A
# fraction's digits often run that long too (0.0012345678901234567: every embedding response has
# some), so a body that passes the screen is searched again for a run where a JSON integer can
# start: at the text's start, after a sign, a separator or white space, never after the point.
_LONG_DIGITS = re.compile(r"[0-9]{19}")
_LONG_DIGITS_BYTES = re.compile(rb"[0-9]{19}")
_LONG_INTEGER = re.compile(r"[-:,\[\s][0-9]{19}|^[0-9]{19}")
_LONG_INTEGER_BYTES = re.compile(rb"[-:,\[\s][0-9]{19}|^[0-9]{19}")


class BadJson(ValueError):
    """The text is not JSON this API accepts; the message is the reason, to follow "not valid JSON: "."""


def _reject_constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON number (send a finite number, or null)")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BadJson(f"the number {text[:40]} does not fit a double (send a finite number)")
    return value


def loads(raw: bytes | str) -> Any:
    """Parse ``raw`` as strict JSON.

    Raises:
        BadJson: Not JSON, invalid UTF-8, nested deeper than ``MAX_DEPTH``, ``NaN``/``Infinity`` (or a number
            too large for a double), or a string holding a lone UTF-16 surrogate.
    """
    if _long_digits(raw):
        return _loads_slowly(raw)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _loads_slowly(raw)
    # Nesting needs an opening bracket per level: a body with few of them cannot be too deep.
    if isinstance(value, dict | list) and _brackets(raw) > MAX_DEPTH:
        _check(value, strings=False)  # orjson has already refused lone surrogates
    return value


def _long_digits(raw: bytes | str) -> bool:
    """Whether ``raw`` may hold an integer of 19 digits or more (a string's digits may pass for one)."""
    if isinstance(raw, str):
        return _LONG_DIGITS.search(raw) is not None and _LONG_INTEGER.search(raw) is not None
    return _LONG_DIGITS_BYTES.search(raw) is not None and _LONG_INTEGER_BYTES.search(raw) is not None


def _brackets(raw: bytes | str) -> int:
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{")
    return raw.count(b"[") + raw.count(b"{")


def _loads_slowly(raw: bytes | str) -> Any:
    try:
        value = json.loads(raw, parse_constant=_reject_constant, parse_float=_finite)
    except RecursionError:
        raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise BadJson(f"{e.msg} at line {e.lineno} column {e.colno}") from None
    except UnicodeDecodeError as e:
        raise BadJson(f"it is not UTF-8 ({e.reason} at byte {e.start})") from None
    encoded = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    _check(value, strings=_SURROGATE_ESCAPE.search(encoded) is not None)
    return value


def _check(value: Any, *, strings: bool) -> None:
    """Walk the containers once (iteratively, so depth itself cannot overflow the stack)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
            if strings:
                for key in item:
                    _encodable(key)
        elif isinstance(item, list):
            children = item
        else:
            if strings and isinstance(item, str):
                _encodable(item)
            continue
        if depth > MAX_DEPTH:
            raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels")
        for child in children:
            if isinstance(child, dict | list) or (strings and isinstance(child, str)):
                stack.append((child, depth + 1))


def _encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(text[e.start])
        raise BadJson(
            f"a string holds a lone UTF-16 surrogate (\\u{code:04x}) at character {e.start} "
            "(send valid Unicode: a surrogate must be half of a pair)"
        ) from None


def dumps(value: Any) -> bytes:
    """Compact JSON as UTF-8 bytes (what ``json.dumps(value, separators=(",", ":"))`` writes, encoded)."""
    try:
        return orjson.dumps(value)
    except TypeError:  # past orjson's reach (an integer beyond 64 bits, a lone surrogate): json escapes it all
        return json.dumps(value, separators=(",", ":")).encode()


def loads_internal(raw: bytes | str) -> Any:
    """JSON another serving process (or Redis) wrote: decoded fast, with no checks beyond the grammar's.

    Raises:
        ValueError: It is not JSON (``json.JSONDecodeError`` and ``orjson.JSONDecodeError`` both are).
    """
    if _long_digits(raw):
        return json.loads(raw)  # an integer past 64 bits stays an int
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)  # the same error, worded by json

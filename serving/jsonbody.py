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
Depth is not the only cost a body can size: 2 MiB of ``[],[],...`` is 700,000
lists, seconds of decoding and hundreds of MiB, all on the event loop (orjson
and ``json`` hold the GIL, so a worker thread would stall the loop just the
same). ``loads`` therefore bounds the work before it starts: it counts the
bytes that open a container (``[``, ``{``) or separate values (``,``), which
is C-speed and an upper bound on what the decoder would build, and refuses a
body over ``MAX_CONTAINERS`` or ``MAX_VALUES``. The count includes those
characters inside strings, so it can only overestimate; the limits leave room
for any prompt a model's context can hold (a comma or a bracket is at least
one token), and the decode of a body at the limits takes a few milliseconds
(``benchmarks/bench_frontdoor.py``).

Two more bounds keep one body from holding an event loop: ``CostMeter`` counts
the same bytes chunk by chunk as a body arrives (the AI gateway's edge refuses
one past the bounds at the chunk that crosses them, before it is read whole),
and ``loads_yielding`` gives the loop back between its passes (the cost check,
the digit scan, the decode, the depth count), so the requests in flight wait
for one pass, ~1.5 ms at the bounds, not for all of them back to back.

``dumps`` and ``loads_internal`` are the same speed for JSON that the serving
processes send each other (the model gateway, the engines, Redis entries).
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import re
from collections.abc import Generator
from itertools import compress
from typing import Any

import numpy as np
import orjson

# Deeper than any real request: a chat body is ~5 levels, a tool's JSON schema rarely passes 10.
# Well under the interpreter's recursion limit (1,000), so the C decoder never hits it first.
MAX_DEPTH = 64

# Arrays and objects in one body. A chat request holds a few per message and per tool; a 128k-token
# conversation of short turns is a few thousand, 128 tools' schemas about as many.
MAX_CONTAINERS = 16_384
# Values of any kind (each one after the first in a container needs a comma): room for a 128k-token
# prompt sent as token ids. The decode and the depth walk of a body at both limits take ~15 ms.
MAX_VALUES = 131_072
# ``loads_yielding`` gives the event loop back between its passes over a body larger than this: below it
# all of them together take well under a millisecond, and a yield would only add a loop turn.
YIELD_ABOVE_BYTES = 64 * 1024
# A run of opening brackets deeper than MAX_DEPTH: found by one substring search, before any decode.
_DEEP_RUN = b"[" * (MAX_DEPTH + 1)

# A \u escape of a UTF-16 surrogate (D800-DFFF). Only bodies that contain one pay for the walk that
# tells a valid pair (decoded to one code point) from a lone half.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
# 19 digits in a row may be an integer past 64 bits, which orjson reads as a float (losing digits) where
# ``json`` keeps the int; such a body takes the slow path. A fraction's digits often run that long too
# (0.0012345678901234567: every embedding response has some), so only a run where a JSON integer can
# start counts: at the text's start, or after a sign, a separator or white space, never after the point.
# The search runs on a copy where every digit is "0", every such lead is "s" and anything else " ":
# two substring searches, at memory speed (a character-class regex took 230 ms on an 8 MiB body).
_LEADS = b"-:,[ \t\n\r\x0b\x0c"
_DIGIT_MAP = bytes(
    ord("0") if chr(b).isdigit() and b < 128 else ord("s") if b in _LEADS else ord(" ") for b in range(256)
)
_LONG_RUN = b"0" * 19
_LED_LONG_RUN = b"s" + _LONG_RUN


class BadJson(ValueError):
    """The text is not JSON this API accepts; the message is the reason, to follow "not valid JSON: "."""


def _reject_constant(name: str) -> Any:
    raise BadJson(f"{name} is not a JSON number (send a finite number, or null)")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise BadJson(f"the number {text[:40]} does not fit a double (send a finite number)")
    return value


# What the gateways add to a body they admitted before a pool reads it (``stream``, ``model``,
# ``priority``, ``stream_options: {"include_usage": true}``; ``modelgw.client.for_model_gateway`` and
# ``providers.vllm.appended``): a few values and one object. A hop behind the AI gateway bounds a body with
# this much room, so that the largest body the edge admits is not refused, after it was charged, by a pool.
FORWARDED_SLACK = 16


def loads_forwarded(raw: bytes | str) -> Any:
    """``loads`` for a body the AI gateway admitted and a gateway extended: the same checks, with
    ``FORWARDED_SLACK`` more containers and values allowed."""
    return loads(raw, slack=FORWARDED_SLACK)


def loads(raw: bytes | str, *, slack: int = 0) -> Any:
    """Parse ``raw`` as strict JSON.

    Raises:
        BadJson: Not JSON, invalid UTF-8, nested deeper than ``MAX_DEPTH``, more than ``MAX_CONTAINERS``
            arrays and objects or ``MAX_VALUES`` values, ``NaN``/``Infinity`` (or a number too large for
            a double), or a string holding a lone UTF-16 surrogate.
    """
    steps = _decode_steps(raw, slack)
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


async def loads_yielding(raw: bytes | str, *, slack: int = 0) -> Any:
    """``loads`` for an event loop: the same checks and result, with the loop given back between the passes
    over a body larger than ``YIELD_ABOVE_BYTES``.

    Each pass is C over the bytes and none can be cut (orjson and ``json`` hold the GIL, so a thread would
    stall the loop just the same), but they need not run back to back: at the bounds the cost check, the
    digit scan, the decode and the depth count are ~0.3, 0.6, 1.5 and 0.7 ms, ~3 ms in one block on the
    loop, which every other request in flight waited behind. Between the passes their ready work runs, so
    the longest wait is the longest pass (the decode).

    Raises:
        BadJson: As ``loads``.
    """
    steps = _decode_steps(raw, slack)
    large = len(raw) > YIELD_ABOVE_BYTES
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        if large:
            await asyncio.sleep(0)


def _decode_steps(raw: bytes | str, slack: int) -> Generator[None, None, Any]:
    """``loads``, one pass over the bytes per step (a ``yield`` between them); the value is the generator's."""
    check_cost(raw, slack=slack)
    yield
    if _long_digits(raw):
        return _loads_slowly(raw)
    yield
    try:
        value = _orjson_loads(raw)
    except orjson.JSONDecodeError:
        return _loads_slowly(raw)
    # Nesting needs an opening bracket per level: a body with few of them cannot be too deep. orjson has
    # refused malformed JSON (and lone surrogates), so the text's brackets outside strings are its structure.
    if isinstance(value, dict | list) and _brackets(raw) > MAX_DEPTH:
        yield
        if _text_depth(raw) > MAX_DEPTH:
            raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels")
    return value


def _orjson_loads(raw: bytes | str) -> Any:
    """``orjson.loads`` with the cyclic collector paused: a body at the bounds builds 16,000 containers,
    which set off a young collection every 700 and, through them, full collections of everything allocated
    since start-up, on the event loop, charged to this one request (up to 100 ms each with 200,000 objects
    alive; see ``freeze_startup_heap``). JSON cannot build a reference cycle, so nothing decoded here is the
    collector's business; once it runs again, one young collection sees the new containers.
    ``gc.disable`` is process-wide: a decode in another thread that starts meanwhile finds it paused and
    leaves it so, and whichever paused it resumes it."""
    if not gc.isenabled():
        return orjson.loads(raw)
    gc.disable()
    try:
        return orjson.loads(raw)
    finally:
        gc.enable()


def check_cost(raw: bytes | str, *, slack: int = 0) -> None:
    """Refuse, before decoding, a body whose decode would build more than the limits allow (plus
    ``slack`` containers and values: ``FORWARDED_SLACK`` behind the AI gateway).

    Raises:
        BadJson: It nests deeper than ``MAX_DEPTH`` in one run of ``[``, or may hold more than
            ``MAX_CONTAINERS`` arrays and objects or more than ``MAX_VALUES`` values.
    """
    if len(raw) <= MAX_CONTAINERS + slack:  # each container and value needs a byte of its own: nothing to count
        return
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    if _DEEP_RUN in data:
        raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels")
    containers = data.count(b"[") + data.count(b"{")
    if containers > MAX_CONTAINERS + slack:
        raise BadJson(
            f"it may hold {containers} arrays and objects (every '[' and '{{' counts, in strings too); "
            f"at most {MAX_CONTAINERS} are accepted in one body: split the input across requests"
        )
    values = containers + data.count(b",")
    if values > MAX_VALUES + slack:
        raise BadJson(
            f"it may hold {values} values (every ',', '[' and '{{' counts, in strings too); "
            f"at most {MAX_VALUES} are accepted in one body: split the input across requests"
        )


class CostMeter:
    """``check_cost`` for a body that arrives in chunks: each chunk is counted as it comes, and the first one
    that takes the body past a bound raises, so a body that must be refused is neither read to its end nor
    scanned whole (2 MiB of ``[],[],...`` crosses ``MAX_CONTAINERS`` within its first 50 KiB). The counts
    add up chunk by chunk to exactly ``check_cost``'s; a run of ``[`` split across two chunks is found
    through the last ``MAX_DEPTH`` bytes of the one before.
    """

    def __init__(self, *, slack: int = 0) -> None:
        self.max_containers = MAX_CONTAINERS + slack
        self.max_values = MAX_VALUES + slack
        self.containers = 0
        self.values = 0
        self._tail = b""  # the previous chunk's last MAX_DEPTH bytes

    def feed(self, chunk: bytes) -> None:
        """Count ``chunk``.

        Raises:
            BadJson: The body so far nests deeper than ``MAX_DEPTH`` in one run of ``[``, or holds more
                than ``MAX_CONTAINERS`` arrays and objects or ``MAX_VALUES`` values.
        """
        if not chunk:
            return
        if _DEEP_RUN in chunk or _DEEP_RUN in self._tail + chunk[:MAX_DEPTH]:
            raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels")
        self._tail = (self._tail + chunk)[-MAX_DEPTH:] if len(chunk) < MAX_DEPTH else chunk[-MAX_DEPTH:]
        containers = chunk.count(b"[") + chunk.count(b"{")
        self.containers += containers
        if self.containers > self.max_containers:
            raise BadJson(
                f"it holds more than {self.max_containers} arrays and objects (every '[' and '{{' counts, in "
                f"strings too); at most {self.max_containers} are accepted in one body: split the input across "
                "requests"
            )
        self.values += containers + chunk.count(b",")
        if self.values > self.max_values:
            raise BadJson(
                f"it holds more than {self.max_values} values (every ',', '[' and '{{' counts, in strings too); "
                f"at most {self.max_values} are accepted in one body: split the input across requests"
            )


def _long_digits(raw: bytes | str) -> bool:
    """Whether ``raw`` may hold an integer of 19 digits or more (a string's digits may pass for one)."""
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    mapped = data.translate(_DIGIT_MAP)
    return mapped.startswith(_LONG_RUN) or _LED_LONG_RUN in mapped


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
    if not strings:
        _check_depth(value)
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
            for key in item:
                _encodable(key)
        elif isinstance(item, list):
            children = item
        else:
            if isinstance(item, str):
                _encodable(item)
            continue
        if depth > MAX_DEPTH:
            raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels")
        for child in children:
            if isinstance(child, dict | list | str):
                stack.append((child, depth + 1))


# Bytes a depth count keeps: the brackets and the quotes that tell which brackets are inside strings.
_DELETE_ALL_BUT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')


def _text_depth(raw: bytes | str) -> int:
    """The deepest nesting of valid JSON text, counted on its bytes (the decoded value is never walked).

    Escapes go first (``\\\\`` pairs, then ``\\"``), so every quote left opens or closes a string; then only
    brackets and quotes are kept, and numpy counts the brackets outside strings. Every step is C over the
    bytes: about a millisecond where walking 16,000 containers and 100,000 values took tens.
    """
    data = raw if isinstance(raw, bytes) else raw.encode("utf-8", "surrogatepass")
    kept = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, delete=_DELETE_ALL_BUT_STRUCTURE)
    if not kept:
        return 0
    codes = np.frombuffer(kept, dtype=np.uint8)
    outside = (np.cumsum(codes == ord('"')) & 1) == 0
    steps = (((codes == ord("[")) | (codes == ord("{"))) & outside).astype(np.int32)
    steps -= (((codes == ord("]")) | (codes == ord("}"))) & outside).astype(np.int32)
    return int(np.cumsum(steps).max())


_CONTAINER_TYPE = frozenset({dict, list}).__contains__


def _check_depth(value: Any) -> None:
    """The depth check alone, a level at a time: the interpreter loops once per container, and the scalars
    in them (up to MAX_VALUES of them) are skipped by ``compress``/``map`` in C."""
    level = [value] if _CONTAINER_TYPE(type(value)) else []
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            raise BadJson(f"it is nested deeper than {MAX_DEPTH} levels")
        below: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            below.extend(compress(children, map(_CONTAINER_TYPE, map(type, children))))
        level = below
        depth += 1


def _encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        code = ord(text[e.start])
        raise BadJson(
            f"a string holds a lone UTF-16 surrogate (\\u{code:04x}) at character {e.start} "
            "(send valid Unicode: a surrogate must be half of a pair)"
        ) from None


def canonical(value: Any) -> bytes:
    """Compact JSON with sorted keys, as UTF-8 bytes: the text a cache key hashes.

    orjson, not ``json.dumps(sort_keys=True)``: a key is computed from the client's whole body, and the
    stdlib encoder took ~20 ms (in Python) on the largest body the bounds admit, on the event loop, per
    request. Values orjson cannot write (an integer beyond 64 bits) fall back to ``json``; ``default=str``
    keeps any other object hashable as text, as the callers' ``json.dumps(default=str)`` did.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except TypeError:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode(
            "utf-8", "surrogatepass"
        )


def freeze_startup_heap() -> None:
    """Move every object alive now out of the cyclic collector's reach (``gc.freeze``); call once a
    serving process has built what it keeps for its lifetime, just before it serves.

    A body at the bounds decodes into 16,000 lists: each such decode triggers young collections, and the
    objects still alive in requests in flight are promoted until a full collection runs, which walks every
    object in the process (tokenizer vocabularies, the app, the caches: a million or more). Measured on the
    dev gateway: a worst-case body every 100 ms raised other tenants' P99 by ~600 ms, almost all of it in
    full collections counted against ``orjson.loads``; with the startup heap frozen, a full collection walks
    only what was allocated since (``benchmarks/frontdoor_targets.py``). The frozen objects are never freed
    by the collector, which is what objects kept for the process's lifetime need anyway.
    """
    gc.collect()  # garbage from the start-up (imports, parsing the spec) is freed, not frozen
    gc.freeze()


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
        return _orjson_loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)  # the same error, worded by json

"""The strict JSON decoder every outside body goes through: depth, NaN/Infinity and lone surrogates refused."""

from __future__ import annotations

import gc
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenplane.serving import jsonbody


def test_ordinary_json_with_unicode_and_valid_surrogate_pairs_decodes() -> None:
    raw = json.dumps({"messages": [{"role": "user", "content": "héllo 😀\n\r\x00 tab\t"}]}).encode()
    assert b"\\ud83d\\ude00" in raw  # the emoji travels as an escaped surrogate pair
    assert jsonbody.loads(raw)["messages"][0]["content"] == "héllo 😀\n\r\x00 tab\t"


@pytest.mark.parametrize("raw", [b'{"c": "\\ud800 x"}', b'{"c": "x\\uDFFF"}', b'{"\\udc00": 1}', b'["\\ud83d"]'])
def test_a_lone_surrogate_anywhere_is_refused_naming_it(raw: bytes) -> None:
    with pytest.raises(jsonbody.BadJson, match="lone UTF-16 surrogate"):
        jsonbody.loads(raw)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(constant: str) -> None:
    with pytest.raises(jsonbody.BadJson, match=f"{constant} is not a JSON number"):
        jsonbody.loads(f'{{"temperature": {constant}}}'.encode())


def test_nesting_at_the_limit_decodes_and_one_deeper_is_refused() -> None:
    at_limit = "[" * jsonbody.MAX_DEPTH + "]" * jsonbody.MAX_DEPTH
    assert isinstance(jsonbody.loads(at_limit), list)
    deeper = "[" * (jsonbody.MAX_DEPTH + 1) + "]" * (jsonbody.MAX_DEPTH + 1)
    with pytest.raises(jsonbody.BadJson, match=f"nested deeper than {jsonbody.MAX_DEPTH}"):
        jsonbody.loads(deeper)


def test_nesting_past_the_interpreters_recursion_limit_is_a_bad_json_not_a_recursion_error() -> None:
    raw = b'{"model": "small", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    with pytest.raises(jsonbody.BadJson, match="nested deeper"):
        jsonbody.loads(raw)


def test_malformed_and_non_utf8_bodies_say_where() -> None:
    with pytest.raises(jsonbody.BadJson, match="line 1 column"):
        jsonbody.loads(b'{"a": ')
    with pytest.raises(jsonbody.BadJson, match="not UTF-8"):
        jsonbody.loads(b'{"a": "\xff"}')


@pytest.mark.slow
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=30,
    )
)
def test_anything_json_dumps_writes_either_decodes_equal_or_is_refused_as_bad_json(value: object) -> None:
    raw = json.dumps(value)  # ensure_ascii: a lone surrogate in a generated str becomes a \\udXXX escape
    try:
        decoded = jsonbody.loads(raw.encode())
    except jsonbody.BadJson:
        return
    assert decoded == value
    json.dumps(decoded, ensure_ascii=False).encode("utf-8")  # what was accepted can always be sent on


def test_a_number_too_large_for_a_double_is_refused_not_read_as_infinity() -> None:
    with pytest.raises(jsonbody.BadJson, match="does not fit a double"):
        jsonbody.loads(b'{"temperature": 1e400}')


def test_an_integer_past_64_bits_keeps_every_digit() -> None:
    big = 2**70 + 1
    assert jsonbody.loads(f'{{"seed": {big}}}'.encode())["seed"] == big
    assert jsonbody.loads_internal(f"[{big}]".encode()) == [big]
    assert json.loads(jsonbody.dumps({"seed": big})) == {"seed": big}


@pytest.mark.parametrize("layout", ["[{}]", '{{"a":{}}}', '{{"a": {}}}', '{{"a":\n{}}}', "[1,{}]", "{}"])
@pytest.mark.parametrize("big", [2**70 + 1, -(2**63) - 1, 10**30])
def test_an_integer_past_64_bits_keeps_every_digit_wherever_json_lets_it_stand(layout: str, big: int) -> None:
    raw = layout.format(big).encode()
    assert jsonbody.loads(raw) == json.loads(raw)
    assert jsonbody.loads_internal(raw) == json.loads(raw)


def test_long_fractions_are_not_taken_for_long_integers() -> None:
    """An embedding response is 384 fractions, some with 19 digits after the point: none can lose an int's
    digits, so none may send the body to the slow decoder (it took 5x orjson's time on every lookup)."""
    body = jsonbody.dumps({"data": [{"embedding": [0.0012345678901234567, -0.00012345678901234567, 0.5]}]})
    assert re.search(rb"[0-9]{19}", body) is not None, "a plain digit-run screen alone would take the slow path"
    assert not jsonbody._long_digits(body)
    assert not jsonbody._long_digits(body.decode())


def test_nesting_past_the_limit_is_refused_on_the_fast_path_too() -> None:
    # Below orjson's own limit (1,024): only our walk can refuse it.
    deeper = b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}"
    with pytest.raises(jsonbody.BadJson, match=f"nested deeper than {jsonbody.MAX_DEPTH}"):
        jsonbody.loads(deeper)
    wide = b"[" + b",".join([b"[]"] * 500) + b"]"  # many brackets, depth 2
    assert len(jsonbody.loads(wide)) == 500


@pytest.mark.slow
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=30,
    )
)
def test_dumps_writes_what_json_reads_back_equal(value: object) -> None:
    assert json.loads(jsonbody.dumps(value)) == value  # a lone surrogate too: escaped, as json writes it


OLD_LONG_INTEGER = re.compile(rb"[-:,\[\s][0-9]{19}|^[0-9]{19}")  # the screen the translate-based one replaced


@given(
    st.lists(
        st.sampled_from([b"1", b"0", b"9", b"-", b":", b",", b"[", b" ", b"\t", b".", b"a", b'"', b"e"]), max_size=60
    )
)
def test_the_long_integer_screen_agrees_with_the_regex_it_replaced(pieces: list[bytes]) -> None:
    raw = b"".join(pieces)
    assert jsonbody._long_digits(raw) == (OLD_LONG_INTEGER.search(raw) is not None)
    assert jsonbody._long_digits(raw.decode()) == (OLD_LONG_INTEGER.search(raw) is not None)


def test_an_integer_past_64_bits_keeps_its_digits_whatever_precedes_it() -> None:
    for lead in (b"[", b"[ ", b'{"a":', b"[1,", b"[-"):
        raw = lead + b"123456789012345678901" + (b"]" if lead.startswith(b"[") else b"}")
        value = jsonbody.loads(raw)
        number = value[-1] if isinstance(value, list) else value["a"]
        assert abs(number) == 123456789012345678901


def nested_empties(count: int) -> bytes:
    return b'{"model": "small", "x": [' + b",".join([b"[]"] * count) + b"]}"


def test_a_body_of_many_empty_arrays_under_the_depth_limit_is_refused_before_it_is_decoded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decoded: list[int] = []

    def counted(raw: bytes | str, **_: object) -> list[object]:
        decoded.append(len(raw))
        return []

    monkeypatch.setattr("orjson.loads", counted)
    monkeypatch.setattr("json.loads", counted)
    raw = nested_empties(2 * 1024 * 1024 // 3)  # the 2 MiB attack: 700,000 lists, depth 3
    with pytest.raises(jsonbody.BadJson, match=f"at most {jsonbody.MAX_CONTAINERS} are accepted"):
        jsonbody.loads(raw)
    assert decoded == [], "the body was decoded before its cost was checked"


def test_the_container_and_value_limits_are_exact_counts_of_the_bytes() -> None:
    at_limit = nested_empties(jsonbody.MAX_CONTAINERS - 2)  # the object and the outer array make 2 more
    assert len(jsonbody.loads(at_limit)["x"]) == jsonbody.MAX_CONTAINERS - 2
    with pytest.raises(jsonbody.BadJson, match="arrays and objects"):
        jsonbody.loads(nested_empties(jsonbody.MAX_CONTAINERS - 1))

    # An object and an array hold the zeros; values counted = 2 containers + the commas between zeros.
    def zeros(count: int) -> bytes:
        return b'{"x": [' + b",".join([b"0"] * count) + b"]}"

    assert len(jsonbody.loads(zeros(jsonbody.MAX_VALUES - 1))["x"]) == jsonbody.MAX_VALUES - 1
    with pytest.raises(jsonbody.BadJson, match=f"at most {jsonbody.MAX_VALUES} are accepted"):
        jsonbody.loads(zeros(jsonbody.MAX_VALUES))


def test_a_long_run_of_brackets_is_refused_as_too_deep_without_counting() -> None:
    raw = b"[" * (jsonbody.MAX_DEPTH + 1) + b"]" * (jsonbody.MAX_DEPTH + 1) + b" " * jsonbody.MAX_CONTAINERS
    with pytest.raises(jsonbody.BadJson, match="nested deeper"):
        jsonbody.check_cost(raw)


def test_the_cost_limits_hold_for_text_as_well_as_bytes() -> None:
    with pytest.raises(jsonbody.BadJson, match="arrays and objects"):
        jsonbody.loads(nested_empties(jsonbody.MAX_CONTAINERS).decode())


def real_depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((real_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((real_depth(v) for v in value), default=0)
    return 0


@given(
    st.recursive(
        st.none() | st.integers() | st.text(alphabet='[]{}"\\\\ab,:\n'),
        lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(alphabet='[]{}"\\\\a', max_size=4), c, max_size=4),
        max_leaves=40,
    )
)
def test_the_depth_counted_on_the_text_is_the_values_depth_whatever_its_strings_hold(value: object) -> None:
    text = json.dumps(value)
    assert jsonbody._text_depth(text) == real_depth(value)
    assert jsonbody._text_depth(text.encode()) == real_depth(value)


def test_a_decode_at_the_bounds_sets_off_no_garbage_collection() -> None:
    """16,000 lists set off ~23 young collections, and through them full ones that walk the whole process
    (measured on the dev gateway: other tenants' P99 +600 ms under one such body every 100 ms). Shown to
    fail with the defect put back: ``_orjson_loads`` calling ``orjson.loads`` without pausing the collector
    counted 46 collections here (23 per decode, three of them of generation 1)."""
    if not gc.isenabled() or gc.get_threshold()[0] == 0:
        pytest.skip("the collector is off in this interpreter")
    raw = nested_empties(jsonbody.MAX_CONTAINERS - 2)
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        decoded = jsonbody.loads(raw)
        internal = jsonbody.loads_internal(raw)
    finally:
        gc.callbacks.remove(count)
    assert len(decoded["x"]) == len(internal["x"]) == jsonbody.MAX_CONTAINERS - 2
    # Once the collector runs again, one young collection per decode sees the new containers; no more.
    assert len(collections) <= 2 and set(collections) <= {0}, f"collections of generations {collections} ran"
    assert gc.isenabled(), "the decode left the collector paused"


def test_the_decode_leaves_a_collector_paused_by_someone_else_paused() -> None:
    gc.disable()
    try:
        jsonbody.loads(b'{"a": [1, 2]}')
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_freeze_startup_heap_moves_the_live_objects_out_of_the_collectors_reach() -> None:
    kept = [[i] for i in range(1000)]  # noqa: F841  (alive across the freeze)
    gc.unfreeze()
    try:
        jsonbody.freeze_startup_heap()
        assert gc.get_freeze_count() >= 1000
    finally:
        gc.unfreeze()


def test_canonical_sorts_keys_compactly_and_writes_what_orjson_cannot() -> None:
    assert (
        jsonbody.canonical({"b": 1, "a": {"d": [1, "é"], "c": None}}) == '{"a":{"c":null,"d":[1,"é"]},"b":1}'.encode()
    )
    assert jsonbody.canonical({"n": 2**70}) == b'{"n":1180591620717411303424}'  # past 64 bits: json's fallback
    assert jsonbody.canonical({"t": object}) == b'{"t":"<class \'object\'>"}'  # default=str, as before


def test_a_forwarded_body_has_room_for_the_fields_the_gateways_add() -> None:
    """The largest body the edge admits, with the AI gateway's ``stream`` and the model gateway's fields
    appended, was refused by the engine's bound (a 400 after the request was charged). Shown to fail with
    the defect put back: ``engine.protocol.parse_body`` calling ``jsonbody.loads`` refused it ("it may hold 131076 values")."""
    from tokenplane.serving.engine import protocol
    from tokenplane.serving.modelgw.client import for_model_gateway
    from tokenplane.serving.modelgw.providers.vllm import appended

    body = {"model": "small", "messages": [{"role": "user", "content": "x"}], "x": [0] * (jsonbody.MAX_VALUES - 8)}
    raw = jsonbody.dumps(body)
    jsonbody.check_cost(raw)  # the edge admits it
    fields = {"model": "small-chat-v1", "stream": True, "priority": -1, "stream_options": {"include_usage": True}}
    forwarded = appended(jsonbody.dumps(for_model_gateway(jsonbody.loads(raw), stream=True)), fields)
    with pytest.raises(jsonbody.BadJson):
        jsonbody.loads(forwarded)  # past the edge's own bound...
    assert protocol.parse_body(forwarded)["model"] == "small-chat-v1"  # ...but within a forwarded body's
    with pytest.raises(jsonbody.BadJson, match="values"):
        jsonbody.loads_forwarded(raw + b" " + b"," * (jsonbody.FORWARDED_SLACK + 8))


def _at_the_bounds() -> bytes:
    """As close to both cost bounds as a body gets (``benchmarks/bench_frontdoor.largest_admitted``'s shape)."""
    head = b'{"model": "small", "messages": [{"role": "user", "content": "x"}], "x": ['
    arrays = jsonbody.MAX_CONTAINERS - (head.count(b"[") + head.count(b"{"))
    values = 2 * arrays + head.count(b"[") + head.count(b"{") + head.count(b",")
    body = head + b",".join([b"[]"] * arrays) + b"," + b",".join([b"0"] * (jsonbody.MAX_VALUES - values)) + b"]}"
    jsonbody.check_cost(body)
    return body


def _fed(raw: bytes, size: int, meter: jsonbody.CostMeter) -> int:
    """Feed ``raw`` in chunks of ``size``; the number of chunks fed when it stopped (raised or ended)."""
    for n, start in enumerate(range(0, len(raw), size), start=1):
        try:
            meter.feed(raw[start : start + size])
        except jsonbody.BadJson:
            return n
    return -1


@settings(deadline=None, max_examples=25)
@given(size=st.integers(min_value=64, max_value=70_000))
def test_a_cost_meter_fed_in_chunks_admits_and_counts_what_check_cost_admits(size: int) -> None:
    raw = _AT_THE_BOUNDS
    meter = jsonbody.CostMeter()
    assert _fed(raw, size, meter) == -1
    assert meter.containers == raw.count(b"[") + raw.count(b"{")
    assert meter.values == meter.containers + raw.count(b",")


@pytest.mark.parametrize("extra", [b"[],", b"0,"])
def test_a_cost_meter_refuses_at_the_chunk_that_crosses_a_bound_not_at_the_end(extra: bytes) -> None:
    """2 MiB of ``[],[],...`` (or of ``0,0,...``) is refused within its first chunks: the rest is never read.
    Put back (counting only once the body is whole) the meter would read all 32 chunks."""
    raw = b'{"x": [' + extra * (2 * 1024 * 1024 // len(extra)) + b"0]}"
    with pytest.raises(jsonbody.BadJson):
        jsonbody.check_cost(raw)
    chunks = _fed(raw, 64 * 1024, jsonbody.CostMeter())
    assert 0 < chunks <= 6, chunks


@pytest.mark.parametrize("split", [1, 30, jsonbody.MAX_DEPTH, jsonbody.MAX_DEPTH + 1])
def test_a_cost_meter_finds_a_run_of_brackets_too_deep_split_across_chunks(split: int) -> None:
    raw = (
        b'{"a": "' + b"x" * 100 + b'", "b": ' + b"[" * (jsonbody.MAX_DEPTH + 1) + b"]" * (jsonbody.MAX_DEPTH + 1) + b"}"
    )
    at = raw.index(b"[") + split
    meter = jsonbody.CostMeter()
    meter.feed(raw[: raw.index(b"[")])
    with pytest.raises(jsonbody.BadJson, match="nested deeper"):
        meter.feed(raw[raw.index(b"[") : at])  # the run's first part: under the limit on its own
        meter.feed(raw[at:])


_AT_THE_BOUNDS = _at_the_bounds()


async def test_loads_yielding_gives_the_loop_back_between_its_passes_over_a_large_body() -> None:
    """The other requests on the loop wait for one pass (the decode), not for the cost check, the digit
    scan, the decode and the depth count back to back. Put back (``loads`` called on the loop), the ticker
    below runs no turn while the body decodes."""
    import asyncio

    turns = 0
    done = False

    async def ticker() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = turns
    value = await jsonbody.loads_yielding(_AT_THE_BOUNDS)
    during = turns - before
    done = True
    await task
    assert value == jsonbody.loads(_AT_THE_BOUNDS)
    assert during >= 3, during  # cost check | digit scan | decode | depth count


async def test_loads_yielding_refuses_what_loads_refuses() -> None:
    for raw in (b"[" * 70 + b"]" * 70, b'{"t": NaN}', b"[1,", b'["\\ud800"]'):
        with pytest.raises(jsonbody.BadJson):
            await jsonbody.loads_yielding(raw + b" " * jsonbody.YIELD_ABOVE_BYTES)


def test_the_gateway_and_the_engine_decode_request_bodies_with_the_yielding_decoder() -> None:
    """A guard: the AI gateway's route stage and the engine's handlers decode on their event loops, so they
    must call the decoders that give the loop back (``loads_yielding``), not the ones that hold it for ~4 ms
    at the bounds. Put back (``decode_body``/``parse_body`` called there), this names the call."""
    import inspect

    from tokenplane.serving.engine import app as engine_app
    from tokenplane.serving.gateway import stages

    for module, blocking in ((stages, "decode_body("), (engine_app, "parse_body(")):
        source = inspect.getsource(module)
        assert blocking not in source.replace(blocking.replace("(", "_yielding("), ""), (
            f"{module.__name__} calls {blocking[:-1]} on its event loop; use its _yielding form"
        )

"""The gateway's front door as users and attackers meet it: ``tokenplane dev``'s real processes, with the
model gateway its own process behind an HTTP hop, as in the cluster. Each test sends the exact request a
review found failing (a 500, a leak, a hang or a memory spike) and checks the answer is a 2xx or an
OpenAI-shaped 4xx that names nothing internal.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the openai SDK's own httpx fork: the Stack's client is one of its clients
import openai
import pytest

from tests.dev.test_dev_stack import Stack, running_stack
from tokenplane.serving import jsonbody
from tokenplane.serving.gateway.server import HEADER_TIMEOUT_S, MAX_HEADER_BYTES, MAX_HEADERS

# Slow tier: starts a tokenplane dev stack as real processes.
pytestmark = pytest.mark.slow

# Words that must never reach a client: internal addresses, secret references, exception names.
LEAKS = ("127.0.0.1", "env://", "aws-sm://", "OPENAI_API_KEY", "Traceback", "Error:", "UnicodeEncodeError")
SYSTEM_CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with running_stack(tmp_path_factory.mktemp("front-door")) as running:
        yield running


def base(stack: Stack) -> str:
    return stack.record()["base_url"]


def key(stack: Stack, tenant: str = "demo") -> str:
    return stack.record()["tenants"][tenant]


def post(stack: Stack, path: str, raw: bytes, *, tenant: str | None = "demo") -> httpx.Response:
    headers = {"content-type": "application/json"}
    if tenant is not None:
        headers["authorization"] = f"Bearer {key(stack, tenant)}"
    return stack.http.post(base(stack) + path, content=raw, headers=headers)


def assert_clean_4xx(response: httpx.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error", error
    if code is not None:
        assert error["code"] == code, error
    for leak in LEAKS:
        assert leak not in response.text, f"{leak!r} leaked: {response.text}"
    return dict(error)


def test_a_chat_with_a_system_message_is_answered_whole_and_streamed(stack: Stack) -> None:
    client = stack.client()
    reply = client.chat.completions.create(model="small", messages=SYSTEM_CHAT, max_tokens=8)  # type: ignore[arg-type]
    assert reply.choices[0].message.content
    stream = client.chat.completions.create(model="small", messages=SYSTEM_CHAT, max_tokens=8, stream=True)  # type: ignore[arg-type]
    text = "".join(c.choices[0].delta.content or "" for c in stream if not isinstance(c, tuple) and c.choices)
    assert text


def test_a_response_is_answered_whole_and_streamed_by_the_responses_api(stack: Stack) -> None:
    client = stack.client()
    whole = client.responses.create(model="small", instructions="You are terse.", input="hi", max_output_tokens=8)
    assert whole.object == "response" and whole.output_text and whole.usage is not None
    events = list(client.responses.create(model="small", input="hi", max_output_tokens=8, stream=True))
    assert events[0].type == "response.created"
    assert events[-1].type in ("response.completed", "response.incomplete")
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text and text == events[-1].response.output_text


def test_two_user_messages_and_a_tool_call_round_trip_are_answered(stack: Stack) -> None:
    client = stack.client()
    two_users = [{"role": "user", "content": "first"}, {"role": "user", "content": "second"}]
    assert client.chat.completions.create(model="small", messages=two_users, max_tokens=4).choices  # type: ignore[arg-type]
    tool_round_trip = [
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, clear"},
    ]
    assert client.chat.completions.create(model="small", messages=tool_round_trip, max_tokens=4).choices  # type: ignore[arg-type]


def test_embeddings_of_a_list_of_inputs_come_back_one_per_input(stack: Stack) -> None:
    reply = stack.client().embeddings.create(model="embedder-v1", input=["a", "b", "c"])
    assert [item.index for item in reply.data] == [0, 1, 2]


@pytest.mark.parametrize("control", ["\n", "\r", "\x00", "\r\n\t", "\u2028", "é😀"])
def test_control_characters_and_unicode_in_the_prompt_are_answered_and_the_connection_stays_usable(
    stack: Stack, control: str
) -> None:
    client = stack.client()
    content = f"line one{control}line two"
    assert client.chat.completions.create(
        model="small", messages=[{"role": "user", "content": content}], max_tokens=4
    ).choices
    # The same keep-alive connection (one httpx pool for the module) serves the next request.
    assert client.chat.completions.create(model="small", messages=SYSTEM_CHAT, max_tokens=4).choices  # type: ignore[arg-type]


@pytest.mark.parametrize("extra", ["", ', "temperature": 0', ', "stream": true'])
def test_a_lone_surrogate_is_a_400_that_names_it_and_nothing_internal(stack: Stack, extra: str) -> None:
    raw = b'{"model": "small", "messages": [{"role": "user", "content": "\\ud800 x"}]' + extra.encode() + b"}"
    error = assert_clean_4xx(post(stack, "/chat/completions", raw), 400, "invalid_json")
    assert "surrogate" in error["message"]


def test_max_tokens_beyond_every_reachable_context_is_a_400_naming_the_limit(stack: Stack) -> None:
    raw = json.dumps({"model": "large", "max_tokens": 20000, "messages": SYSTEM_CHAT}).encode()
    error = assert_clean_4xx(post(stack, "/chat/completions", raw), 400, "context_length_exceeded")
    assert "20000" in error["message"]


@pytest.mark.parametrize("path", ["/chat/completions", "/batches"])
def test_deeply_nested_json_is_a_400_and_the_connection_stays_usable(stack: Stack, path: str) -> None:
    raw = b'{"model": "small", "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    assert_clean_4xx(post(stack, path, raw), 400, "invalid_json")
    assert stack.client().models.list().data


def test_a_deeply_nested_batch_input_line_is_a_400_naming_the_line(stack: Stack) -> None:
    client = stack.client()
    good = {
        "custom_id": "a",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": "small", "messages": SYSTEM_CHAT},
    }
    nested = (
        '{"custom_id": "b", "method": "POST", "url": "/v1/chat/completions", "body": ' + "[" * 5000 + "]" * 5000 + "}"
    )
    upload = client.files.create(file=("in.jsonl", (json.dumps(good) + "\n" + nested + "\n").encode()), purpose="batch")
    with pytest.raises(openai.BadRequestError) as caught:
        client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")
    assert "line 2" in str(caught.value) and "nested deeper" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "raw_value"),
    [("temperature", "NaN"), ("temperature", "Infinity"), ("temperature", "-1"), ("top_p", "-0.5"), ("top_p", "2")],
)
def test_out_of_range_or_non_finite_sampling_parameters_are_400s(stack: Stack, field: str, raw_value: str) -> None:
    raw = f'{{"model": "small", "{field}": {raw_value}, "messages": [{{"role": "user", "content": "x"}}]}}'.encode()
    assert_clean_4xx(post(stack, "/chat/completions", raw), 400)


def test_metrics_are_not_on_the_public_port_but_on_the_metrics_port(stack: Stack) -> None:
    stack.client().chat.completions.create(model="small", messages=SYSTEM_CHAT, max_tokens=2)  # type: ignore[arg-type]
    public = stack.http.get(base(stack).removesuffix("/v1") + "/metrics")
    assert_clean_4xx(public, 404, "not_found")
    assert "tenant=" not in public.text
    (metrics_port,) = stack.record()["services"]["gateway"]["other_ports"]
    scraped = stack.http.get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert scraped.status_code == 200
    assert "tokenplane_gateway_requests_total{" in scraped.text and 'tenant="demo"' in scraped.text


def test_unknown_paths_wrong_methods_and_encoded_slashes_get_openai_shaped_errors(stack: Stack) -> None:
    auth = {"authorization": f"Bearer {key(stack)}"}
    assert_clean_4xx(stack.http.get(base(stack) + "/nope", headers=auth), 404, "not_found")
    assert_clean_4xx(stack.http.get(base(stack) + "/chat/completions", headers=auth), 405, "method_not_allowed")
    traversal = stack.http.get(base(stack) + "/batches/batch_%2e%2e%2f", headers=auth)
    assert traversal.status_code == 404, "a 307 would send the client to another path"
    assert_clean_4xx(traversal, 404)


def test_the_semantic_cache_never_answers_a_request_whose_parameters_differ(stack: Stack) -> None:
    client = stack.client()
    messages = [{"role": "user", "content": "Describe the tides of the northern sea in detail, please."}]
    first = client.chat.completions.create(model="small", messages=messages, max_tokens=40)  # type: ignore[arg-type]
    again = client.chat.completions.with_raw_response.create(model="small", messages=messages, max_tokens=40)  # type: ignore[arg-type]
    assert again.headers.get("x-tokenplane-cache") == "semantic", "the control: the same request is a hit"
    assert again.parse().choices[0].message.content == first.choices[0].message.content
    short = client.chat.completions.with_raw_response.create(model="small", messages=messages, max_tokens=3)  # type: ignore[arg-type]
    assert short.headers.get("x-tokenplane-cache") != "semantic"
    usage = short.parse().usage
    assert usage is not None and 0 < usage.completion_tokens <= 3


def test_a_wrong_key_is_never_echoed(stack: Stack) -> None:
    for wrong in ("sk-wrong-abcdefgh", "abc"):
        response = stack.http.post(
            base(stack) + "/chat/completions", json={"model": "small"}, headers={"authorization": f"Bearer {wrong}"}
        )
        assert response.status_code == 401
        assert wrong[-4:] not in response.json()["error"]["message"]


def gateway_rss_kib(stack: Stack) -> int:
    pid = stack.record()["services"]["gateway"]["pid"]
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def gateway_address(stack: Stack) -> tuple[str, int]:
    url = httpx.URL(base(stack))
    return url.host, url.port or 80


def test_unauthenticated_huge_bodies_are_refused_and_gateway_memory_stays_flat(stack: Stack) -> None:
    before = gateway_rss_kib(stack)
    host, port = gateway_address(stack)
    chunk = b"x" * (1024 * 1024)
    for headers in (f"Content-Length: {300 * 1024 * 1024}\r\n", "Transfer-Encoding: chunked\r\n"):
        with socket.create_connection((host, port)) as sock:
            sock.settimeout(30)
            sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n{headers}\r\n".encode())
            sent = 0
            with contextlib.suppress(OSError):  # the gateway answers 413 and closes while we are still sending
                while sent < 300:
                    frame = chunk if "Content-Length" in headers else b"%x\r\n%s\r\n" % (len(chunk), chunk)
                    sock.sendall(frame)
                    sent += 1
            answer = b""
            with contextlib.suppress(OSError):
                while piece := sock.recv(65536):
                    answer += piece
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
        assert b"request_too_large" in answer
        assert sent < 300, "the gateway read the whole body instead of cutting it off"
    growth_mib = (gateway_rss_kib(stack) - before) / 1024
    assert growth_mib < 64, f"gateway RSS grew {growth_mib:.0f} MiB on two refused 300 MiB bodies"


def test_connections_that_never_finish_their_headers_are_closed(stack: Stack) -> None:
    host, port = gateway_address(stack)
    with contextlib.ExitStack() as opened:
        socks = [opened.enter_context(socket.create_connection((host, port))) for _ in range(50)]
        for sock in socks:
            sock.settimeout(HEADER_TIMEOUT_S * 4)  # a safety net: the gateway must close them well before
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nX-Slow: 1")
        started = time.monotonic()
        for sock in socks:
            assert sock.recv(1024) == b"", "the gateway kept a half-sent request open"
        assert time.monotonic() - started < HEADER_TIMEOUT_S * 4
    assert stack.client().models.list().data  # and it still serves everyone else


# --- the second probe (issue 29): the attacks of the second review, against tokenplane dev's processes ------------


def raw_exchange(stack: Stack, head: bytes) -> bytes:
    """Send a request head as an attacker's socket does and read the answer until the gateway closes."""
    with socket.create_connection(gateway_address(stack)) as sock:
        sock.settimeout(30)
        with contextlib.suppress(OSError):  # the gateway may answer and close while the head is still going out
            sock.sendall(head)
        answer = b""
        with contextlib.suppress(OSError):
            while piece := sock.recv(65536):
                answer += piece
                if b"\r\n\r\n" in answer and b'"error"' in answer:
                    break
    return answer


@pytest.mark.parametrize(
    "head_fields",
    [
        b"".join(b"X-Pad-%d: a\r\n" % i for i in range(MAX_HEADERS + 1)),
        b"X-Pad: " + b"a" * MAX_HEADER_BYTES + b"\r\n",
    ],
    ids=["too-many-headers", "too-many-bytes"],
)
def test_an_oversized_head_is_a_431_before_the_key_is_checked(stack: Stack, head_fields: bytes) -> None:
    request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + head_fields + b"Content-Length: 0\r\n\r\n"
    answer = raw_exchange(stack, request)
    assert answer.startswith(b"HTTP/1.1 431"), answer[:200]
    assert b"401" not in answer.split(b"\r\n", 1)[0]
    assert stack.client().models.list().data


def test_a_body_of_empty_arrays_from_a_limited_key_is_refused_by_its_cost_undecoded(stack: Stack) -> None:
    raw = (
        b'{"model": "large", "messages": [{"role": "user", "content": "x"}], "x": ['
        + b",".join([b"[]"] * (2 * 1024 * 1024 // 3))
        + b"]}"
    )
    error = assert_clean_4xx(post(stack, "/chat/completions", raw, tenant="free"), 400, "invalid_json")
    assert f"at most {jsonbody.MAX_CONTAINERS}" in error["message"]
    assert stack.client().chat.completions.create(model="small", messages=SYSTEM_CHAT, max_tokens=4).choices  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-tokenplane-timeout-ms", "0"),
        ("x-tokenplane-timeout-ms", "-5000"),
        ("x-tokenplane-priority", "urgent"),
        ("x-tokenplane-complexity", "7"),
    ],
)
def test_tokenplane_headers_out_of_range_are_a_400_naming_the_header_not_a_504(
    stack: Stack, header: str, value: str
) -> None:
    raw = json.dumps({"model": "small", "messages": SYSTEM_CHAT, "max_tokens": 4}).encode()
    response = stack.http.post(
        base(stack) + "/chat/completions",
        content=raw,
        headers={"authorization": f"Bearer {key(stack)}", "content-type": "application/json", header: value},
    )
    assert assert_clean_4xx(response, 400)["param"] == header


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"logprobs": "yes"}, "logprobs"),
        ({"logprobs": True, "top_logprobs": 1000}, "top_logprobs"),
        ({"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
        ({"stop": 5}, "stop"),
        ({"tools": "f"}, "tools"),
        (
            {
                "tools": [{"type": "function", "function": {"name": "lookup"}}],
                "tool_choice": {"type": "function", "function": {"name": "missing"}},
            },
            "tool_choice",
        ),
    ],
)
def test_nonsense_parameters_are_a_400_naming_them_through_the_official_client(
    stack: Stack, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        stack.client().chat.completions.create(model="small", messages=SYSTEM_CHAT, max_tokens=4, extra_body=extra)  # type: ignore[arg-type]
    assert refused.value.param == param


def test_a_64_kb_model_name_is_refused_without_being_echoed_whole(stack: Stack) -> None:
    raw = json.dumps({"model": "m" * 65536, "messages": SYSTEM_CHAT}).encode()
    response = post(stack, "/chat/completions", raw)
    assert_clean_4xx(response, 400)
    assert len(response.content) < 1024


def test_a_key_followed_by_a_non_breaking_space_is_refused(stack: Stack) -> None:
    raw = json.dumps({"model": "small", "messages": SYSTEM_CHAT, "max_tokens": 4}).encode()
    response = stack.http.post(
        base(stack) + "/chat/completions",
        content=raw,
        headers={b"authorization": f"Bearer {key(stack)}\xa0".encode("latin-1"), b"content-type": b"application/json"},
    )
    assert response.status_code == 401


def test_the_surface_the_current_client_uses(stack: Stack) -> None:
    client = stack.client("acme-eu")
    assert client.models.retrieve("small").id == "small"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")
    with pytest.raises(openai.BadRequestError) as dims:
        client.embeddings.create(model="embedder-v1", input="hello", dimensions=64)
    assert "dimensions" in dims.value.message
    with pytest.raises(openai.BadRequestError) as ids:
        client.completions.create(model="small", prompt=[1, 2, 3], max_tokens=4)
    assert ids.value.code == "token_ids_not_supported"
    # GET /v1/files: the tenant's own files, newest first, a page at a time.
    uploaded = [client.files.create(file=(f"{i}.jsonl", b"{}\n"), purpose="batch").id for i in range(3)]
    first = client.files.list(limit=2)
    assert [f.id for f in first.data] == uploaded[::-1][:2] and first.has_more
    rest = client.files.list(limit=2, after=first.data[-1].id)
    assert rest.data[0].id == uploaded[0]
    assert not set(uploaded) & {f.id for f in stack.client("demo").files.list(limit=100).data}


def test_uploads_count_against_the_tenants_requests_per_minute(stack: Stack) -> None:
    """free has 5 requests a minute: the sixth upload in a row is a 429, as a sixth chat would be."""
    client = stack.client("free")
    with pytest.raises(openai.RateLimitError) as limited:
        for i in range(12):
            client.files.create(file=(f"{i}.jsonl", b"{}\n"), purpose="batch")
    assert int(limited.value.response.headers["retry-after"]) >= 1

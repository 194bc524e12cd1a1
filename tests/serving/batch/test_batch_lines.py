"""The Batch API's input lines: every line checked up front, a bad one named by its number."""

from __future__ import annotations

import json

import pytest

from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.files.batch_lines import error_line, output_line, parse_input, to_jsonl
from tokenplane.serving.types import Endpoint

CHAT = "/v1/chat/completions"


def request(custom_id: str, **overrides: object) -> dict[str, object]:
    line: dict[str, object] = {
        "custom_id": custom_id,
        "method": "POST",
        "url": CHAT,
        "body": {"model": "small", "messages": [{"role": "user", "content": "hi"}]},
    }
    return line | overrides


def jsonl(*lines: object) -> bytes:
    return b"".join((line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines)


def test_good_lines_parse_in_order_with_their_numbers() -> None:
    lines = parse_input(jsonl(request("a"), request("b")), Endpoint.CHAT)
    assert [(x.number, x.custom_id) for x in lines] == [(1, "a"), (2, "b")]
    assert lines[0].body["model"] == "small"


def test_blank_lines_are_skipped_but_still_counted() -> None:
    lines = parse_input(jsonl(request("a")) + b"\n" + jsonl(request("b")), Endpoint.CHAT)
    assert [x.number for x in lines] == [1, 3]


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "must be a JSON object, got list"),
        (request(""), "custom_id must be a non-empty string"),
        (request("a"), "custom_id 'a' is used by an earlier line"),
        (request("c", method="GET"), "method must be 'POST', got 'GET'"),
        (request("c", url="/v1/embeddings"), "url must be the batch's endpoint '/v1/chat/completions'"),
        (request("c", body="hello"), "body must be a JSON object"),
        (request("c", body={"model": "small", "stream": True}), "body.stream must be false or absent"),
    ],
)
def test_a_bad_line_is_refused_naming_its_number_and_problem(bad: object, problem: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        parse_input(jsonl(request("a"), request("b"), bad), Endpoint.CHAT)
    assert caught.value.message.startswith("line 3 of the input file: ")
    assert problem in caught.value.message
    assert caught.value.status == 400


def test_a_file_without_requests_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="no requests"):
        parse_input(b"\n\n", Endpoint.CHAT)


def test_output_and_error_lines_have_openais_shape() -> None:
    out = output_line("a", request_id="req_1", body={"object": "chat.completion"})
    err = error_line("b", code="rate_limit_exceeded", message="slow down")
    assert out["id"].startswith("batch_req_") and out["error"] is None
    assert out["response"] == {"status_code": 200, "request_id": "req_1", "body": {"object": "chat.completion"}}
    assert err["response"] is None and err["error"] == {"code": "rate_limit_exceeded", "message": "slow down"}
    assert [json.loads(x) for x in to_jsonl([out, err]).splitlines()] == [out, err]

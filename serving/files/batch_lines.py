"""The Batch API's JSONL: input lines checked up front, output and error lines as OpenAI writes them.

Every input line is validated when the batch is created, so a typo on line
40,000 is a 400 naming that line, not a failure discovered hours later by a
worker. The worker parses the same file with the same function.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from tokenplane.serving import jsonbody
from tokenplane.serving.errors import InvalidRequest
from tokenplane.serving.types import Endpoint, Json

MAX_BATCH_LINES = 50_000  # OpenAI's limit of requests per batch; a worker tracks each line's completion in Redis
MAX_CUSTOM_ID_CHARS = 512  # custom_id is a Redis hash field and is echoed in every output line


@dataclass(frozen=True, slots=True)
class BatchLine:
    """One request of a batch input file."""

    number: int  # 1-based line number in the file, as an editor shows it
    custom_id: str
    body: Json


def _bad(number: int, problem: str) -> InvalidRequest:
    return InvalidRequest(
        f"line {number} of the input file: {problem}", param="input_file_id", code="invalid_batch_line"
    )


def parse_input(data: bytes, endpoint: Endpoint) -> list[BatchLine]:
    """Every request of a batch input file, in order.

    Raises:
        InvalidRequest: naming the first bad line and what is wrong with it (not JSON, not an
            object, a missing or repeated ``custom_id``, ``method`` other than POST, a ``url``
            other than the batch's endpoint, a ``body`` that is not an object, or a stream).
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidRequest(
            f"the input file is not UTF-8 text ({e}); write one JSON object per line", param="input_file_id"
        ) from e
    lines: list[BatchLine] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        if len(lines) == MAX_BATCH_LINES:
            raise _bad(number, f"a batch holds at most {MAX_BATCH_LINES} requests; split the file into several batches")
        try:
            item = jsonbody.loads(raw)
        except jsonbody.BadJson as e:
            raise _bad(number, f"not valid JSON: {e}") from e
        if not isinstance(item, dict):
            raise _bad(number, f"must be a JSON object, got {type(item).__name__}")
        custom_id = item.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            raise _bad(number, "custom_id must be a non-empty string that identifies the request in the output")
        if len(custom_id) > MAX_CUSTOM_ID_CHARS:
            raise _bad(number, f"custom_id is {len(custom_id)} characters; the limit is {MAX_CUSTOM_ID_CHARS}")
        if custom_id in seen:
            raise _bad(number, f"custom_id {custom_id!r} is used by an earlier line; each request needs its own")
        seen.add(custom_id)
        if item.get("method") != "POST":
            raise _bad(number, f"method must be 'POST', got {item.get('method')!r}")
        if item.get("url") != endpoint.value:
            raise _bad(number, f"url must be the batch's endpoint {endpoint.value!r}, got {item.get('url')!r}")
        body = item.get("body")
        if not isinstance(body, dict):
            raise _bad(number, f"body must be a JSON object (the request), got {type(body).__name__}")
        if body.get("stream"):
            raise _bad(number, "body.stream must be false or absent; batch results are written whole")
        lines.append(BatchLine(number, custom_id, body))
    if not lines:
        raise InvalidRequest("the input file has no requests; write one JSON object per line", param="input_file_id")
    return lines


def line_id() -> str:
    return f"batch_req_{secrets.token_hex(16)}"


def output_line(custom_id: str, *, request_id: str, body: Json, status_code: int = 200) -> Json:
    """A line of the output file: the response the endpoint would have sent."""
    return {
        "id": line_id(),
        "custom_id": custom_id,
        "response": {"status_code": status_code, "request_id": request_id, "body": body},
        "error": None,
    }


def error_line(custom_id: str, *, code: str, message: str) -> Json:
    """A line of the error file: a request that got no response."""
    return {"id": line_id(), "custom_id": custom_id, "response": None, "error": {"code": code, "message": message}}


def to_jsonl(lines: list[Json]) -> bytes:
    return b"".join(json.dumps(line, separators=(",", ":")).encode() + b"\n" for line in lines)

"""Schemathesis against the live gateway: every answer is documented, and none is a 5xx.

The whole dev platform runs on loopback (engines, model gateway, Redis, the
Kafka-protocol broker, the Batch API); the gateway under test is the same
``Gateway`` served again with the Batch API and ``GET /openapi.json`` mounted.
The external providers are left out of the spec: here they have no API key, so
a request only they could take (one longer than every pool's context) is a
documented 503 ``upstream_unavailable``, a deployment's state rather than a
gateway bug. Without them such a request is the gateway's own 400
``context_length_exceeded``, and every 5xx found is the gateway's.
Schemathesis loads the document from that route, generates valid and invalid
requests for every operation, sends them with the demo tenant's key, and checks
that no answer is a server error and that each one's status code, content type
and body are the documented ones.

Schemathesis' client is blocking, so it runs in a worker thread while this
test's event loop serves the platform.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.failures import FailureGroup
from schemathesis.core.result import Err
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.paths import REPO_ROOT
from tests.serving.conftest import Broker, serve
from tests.serving.platform import KEY_OF, platform
from tokenplane.serving.files.batch_store import BatchStore
from tokenplane.serving.files.store import DirectoryFileStore
from tokenplane.serving.gateway.app import create_app
from tokenplane.serving.gateway.batch_api import batch_routes
from tokenplane.spec import PlatformSpec

# Slow tier: fuzzes a live gateway with schemathesis.
pytestmark = pytest.mark.slow

ROOT = REPO_ROOT
COUNTS_FILE = ROOT / "tests" / ".fuzz_counts.json"
AUTH = {"Authorization": f"Bearer {KEY_OF['demo']}"}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Examples per operation and mode: 15 operations x 2 modes x 25 runs in about 25 s; ``make bench``
# (benchmarks/fuzz.py) runs TOKENPLANE_FUZZ_SCALE times as many and records the counts.
PER_MODE = max(1, round(25 * float(os.environ.get("TOKENPLANE_FUZZ_SCALE", "1"))))
EXAMPLES = {GenerationMode.POSITIVE: PER_MODE, GenerationMode.NEGATIVE: PER_MODE}
# Known gateway bugs found by this test, by "METHOD /path"; each is reported to the gateway's owner.
KNOWN_5XX: dict[str, str] = {}


@dataclasses.dataclass
class Finding:
    operation: str
    mode: str
    request: str
    failure: str


@dataclasses.dataclass
class Run:
    cases: Counter[str] = dataclasses.field(default_factory=Counter)
    findings: list[Finding] = dataclasses.field(default_factory=list)


def fuzz_operation(operation: Any, mode: GenerationMode, base_url: str, run: Run) -> None:
    """Send ``EXAMPLES[mode]`` generated requests to one operation; record each failed check, keep going."""
    label = f"{operation.method.upper()} {operation.path}"

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES[mode],
        deadline=None,
        database=None,  # the live platform differs per run; replaying old cases would mislead
        suppress_health_check=list(HealthCheck),
    )
    def send(case: Any) -> None:
        run.cases[f"{label} ({mode.value})"] += 1
        try:
            case.call_and_validate(base_url=base_url, headers=AUTH, checks=CHECKS, timeout=10)
        except (FailureGroup, Exception) as e:  # failed checks (a BaseExceptionGroup), or a dropped connection
            run.findings.append(Finding(label, mode.value, case.as_curl_command(headers=AUTH), str(e)[:2000]))

    try:
        send()
    except Unsatisfiable:
        if mode is GenerationMode.POSITIVE:
            raise
        # An operation with no parameters and no body (GET /healthz) has no invalid request to make.


def fuzz_operations(base_url: str) -> Run:
    """Load the document from the live gateway and fuzz each operation in both modes."""
    schema = schemathesis.openapi.from_url(f"{base_url}/openapi.json")
    run = Run()
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise AssertionError(f"the gateway's OpenAPI document has an invalid operation: {result.err()}")
        for mode in EXAMPLES:
            fuzz_operation(result.ok(), mode, base_url, run)
    return run


def write_counts(run: Run) -> None:
    counts = json.loads(COUNTS_FILE.read_text(encoding="utf-8")) if COUNTS_FILE.exists() else {}
    counts["gateway"] = {
        "cases": dict(run.cases),
        "total": sum(run.cases.values()),
        "server_errors": sum("Server error" in f.failure for f in run.findings),
        "findings": len(run.findings),
    }
    COUNTS_FILE.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # schemathesis' dependencies on Python 3.11
async def test_the_live_gateway_answers_every_generated_request_as_documented(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    pools_only = dev_spec.model_copy(
        update={
            "providers": [],
            "routing": dev_spec.routing.model_copy(
                update={
                    "fallbacks": {
                        tier: [step for step in chain if dev_spec.provider(step) is None]
                        for tier, chain in dev_spec.routing.fallbacks.items()
                    }
                }
            ),
        }
    )
    async with platform(pools_only, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool") as p:
        files = DirectoryFileStore(tmp_path / "files")
        batch = batch_routes(p.gateway, files=files, jobs=BatchStore(p.gateway.redis), sink=p.gateway.sink)
        gateway = dataclasses.replace(p.gateway, extra_routes=batch)
        document = gateway.openapi()

        async def openapi(request: Request) -> Response:
            return JSONResponse(document)

        gateway.extra_routes = [*batch, Route("/openapi.json", openapi, methods=["GET"])]
        async with serve(create_app(gateway)) as url:
            run = await asyncio.to_thread(fuzz_operations, url)
    write_counts(run)
    fuzzed = {key.rsplit(" (", 1)[0] for key in run.cases}
    documented = {f"{method.upper()} {path}" for path, ops in document["paths"].items() for method in ops}
    documented.discard("GET /openapi.json")  # schemathesis does not test the document it loaded from
    assert fuzzed == documented, f"not fuzzed: {sorted(documented - fuzzed)}"
    unexpected = [f for f in run.findings if f.operation not in KNOWN_5XX]
    logs = "\n".join(r.getMessage() + ("\n" + r.exc_text if r.exc_text else "") for r in caplog.records)
    report = "\n\n".join(f"{f.operation} [{f.mode}]\n{f.request}\n{f.failure}" for f in unexpected[:10])
    assert not unexpected, (
        f"{len(unexpected)} of {sum(run.cases.values())} cases failed:\n{report}\n\nserver log:\n{logs[:5000]}"
    )


# Hostile conversations: every character class a client can put in a JSON string, lone surrogates and
# control characters included (hypothesis' default text leaves surrogates out), in multi-turn chats.
HOSTILE_CHARS = st.characters(codec=None, categories=["L", "N", "P", "S", "Z", "Cc", "Cf", "Cs", "Co"])
ROLES = st.sampled_from(["system", "developer", "user", "assistant"])
MESSAGES = st.lists(
    st.fixed_dictionaries({"role": ROLES, "content": st.text(HOSTILE_CHARS, min_size=1, max_size=300)}),
    min_size=1,
    max_size=6,
)
HOSTILE_EXAMPLES = max(1, round(40 * float(os.environ.get("TOKENPLANE_FUZZ_SCALE", "1"))))
LEAKS = ("127.0.0.1", "env://", "OPENAI_API_KEY", "Traceback", "Error:")


@st.composite
def hostile_bodies(draw: st.DrawFn) -> tuple[str, bytes]:
    """A chat request that may be nested, oversized, non-finite or carry hostile text; its label for reports."""
    body: dict[str, Any] = {"model": draw(st.sampled_from(["small", "auto", "large"])), "messages": draw(MESSAGES)}
    body["max_tokens"] = draw(st.integers(1, 40))
    if draw(st.booleans()):
        body["temperature"] = draw(st.sampled_from([0, 0.7, 2]))
    body["stream"] = draw(st.booleans())
    raw = json.dumps(body)  # ensure_ascii: lone surrogates travel as \udXXX escapes, as a client would send them
    shape = draw(st.sampled_from(["plain", "nested", "huge", "nan"]))
    if shape == "nested":
        depth = draw(st.integers(60, 3000))
        raw = raw[:-1] + ', "metadata": ' + "[" * depth + "]" * depth + "}"
    elif shape == "huge":
        raw = raw[:-1] + ', "user": "' + "x" * (9 * 1024 * 1024) + '"}'
    elif shape == "nan":
        raw = raw[:-1] + ', "top_p": NaN}'
    return shape, raw.encode()


async def test_hostile_conversations_get_a_2xx_or_a_clean_4xx_through_the_separate_model_gateway(
    dev_spec: PlatformSpec, redis_url: str, kafka: Broker, tmp_path: Path
) -> None:
    async with (
        platform(dev_spec, redis_url=redis_url, bootstrap=kafka.bootstrap, spool_dir=tmp_path / "spool") as p,
        httpx.AsyncClient(base_url=p.url, timeout=30) as http,
    ):
        sent: list[tuple[str, bytes]] = []

        @given(case=hostile_bodies())
        @settings(max_examples=HOSTILE_EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        def collect(case: tuple[str, bytes]) -> None:
            sent.append(case)

        collect()
        headers = {"authorization": f"Bearer {KEY_OF['demo']}", "content-type": "application/json"}
        problems = []
        for shape, raw in sent:
            response = await http.post("/v1/chat/completions", content=raw, headers=headers)
            text = response.text
            if response.status_code >= 500 or any(leak in text for leak in LEAKS):
                problems.append(f"[{shape}] {response.status_code} {text[:300]} <- {raw[:300]!r}")
            elif response.status_code >= 400 and response.json()["error"]["type"] not in {
                "invalid_request_error",
                "requests",
                "insufficient_quota",
            }:
                problems.append(f"[{shape}] not OpenAI-shaped: {text[:300]}")
            elif response.status_code == 200 and b'"stream": true' in raw and "data: [DONE]" not in text:
                problems.append(f"[{shape}] a stream that did not end with [DONE]: {text[-300:]}")
    assert not problems, f"{len(problems)} of {len(sent)}:\n" + "\n".join(problems[:10])

"""``python -m tokenplane.serving.engine``: bad arguments exit 2 with one clear line; good ones serve vLLM's API."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.paths import REPO_ROOT
from tokenplane.dev.standins import free_port

ROOT = REPO_ROOT
STARTUP_S = 30.0  # a cold interpreter imports the spec, pydantic and uvicorn; generous for a loaded CI box


def engine_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tokenplane.serving.engine", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.slow
def test_an_unknown_pool_exits_2_listing_the_spec_s_pools() -> None:
    result = engine_cli("--pool", "nope")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: unknown pool 'nope'; the spec's pools are: small, medium, large, embed "
        "(add it under pools: or use one of those)"
    ]


@pytest.mark.slow
def test_a_spec_that_does_not_load_exits_2_with_its_location(tmp_path: Path) -> None:
    result = engine_cli("--spec", str(tmp_path / "missing.yaml"), "--pool", "small")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing.yaml" in lines[0] and "no such file" in lines[0]


@pytest.mark.slow
def test_the_engine_serves_health_and_models_on_its_port() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tokenplane.serving.engine", "--pool", "small", "--port", str(port), "--speed", "inf"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"the engine did not come up (exit status {process.poll()})")
            time.sleep(0.1)
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models").json()
        assert [m["id"] for m in models["data"]] == ["small-chat-v1", "small-chat"]
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.mark.slow
def test_a_bad_output_tokens_range_exits_2_saying_what_to_give() -> None:
    result = engine_cli("--pool", "small", "--output-tokens", "48-4")
    assert result.returncode == 2
    assert "LO-HI with 1 <= LO <= HI" in result.stderr
